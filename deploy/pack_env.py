"""Pack the Python environment a Spark cluster runs qmon in.

    python deploy/pack_env.py dist/qmon-VERSION-py3-none-any.whl dist/qmon-env.tar.gz [--python PYTHON]

A fresh virtual environment (in a temporary directory) gets qmon's wheel and its dependencies, and venv-pack packs
it into an archive for ``spark-submit --archives dist/qmon-env.tar.gz#environment`` with
``spark.pyspark.python=./environment/bin/python``: the way of PySpark's documentation ("Python Package Management",
*Using Virtualenv*).  venv-pack keeps the interpreter as a link to the Python it was built with (``--python``,
default the interpreter that created this one's virtual environment): every host that unpacks the archive needs that
Python at that path.  PySpark's copy of Spark's jars (some 460 MB) is left out: the archive's Python always runs
beside a Spark that has its own (``drop_spark_jars``).  ``make dist`` runs it.

``--no-deps`` installs the wheel alone (a quick check of the packing; such an archive cannot run the job).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def base_python() -> str:
    """The interpreter this one's virtual environment was made from (itself outside one)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def drop_spark_jars(env: Path) -> int:
    """Remove PySpark's own copy of Spark's jars from the environment ``env``; the bytes removed.  The archive's
    Python runs beside a Spark that has them (an executor's JVM, YARN's application master, the driver's
    spark-submit): PySpark's Python workers, and a driver whose JVM spark-submit started, never read them."""
    removed = 0
    for jars in (env / "lib").glob("python*/site-packages/pyspark/jars"):
        removed += sum(f.stat().st_size for f in jars.rglob("*") if f.is_file())
        shutil.rmtree(jars)
    return removed


def pack(wheel: Path, output: Path, python: str | None = None, deps: bool = True) -> Path:
    """``output``: a venv-pack archive of a new virtual environment holding ``wheel`` (and, with ``deps``, its
    dependencies).  The environment must import qmon from its own files (not an editable checkout) before it is
    packed: ``python -m qmon.app.submit``, what a driver runs to find the application, answers from inside it."""
    import venv_pack

    wheel, output = Path(wheel).resolve(), Path(output).resolve()
    if not wheel.is_file():
        raise SystemExit(f"pack_env: {wheel}: no such wheel (make wheel builds it)")
    # (a checkout on PYTHONPATH would be a qmon already installed, to pip and to the check below)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    work = Path(tempfile.mkdtemp(prefix="qmon-env-"))
    try:
        env = work / "env"
        subprocess.run([python or base_python(), "-m", "venv", "--without-pip", str(env)], check=True, env=clean)
        install = [sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install"]
        install += ["--quiet", "--disable-pip-version-check", "--no-input", str(wheel)]
        subprocess.run(install + ([] if deps else ["--no-deps"]), check=True, env=clean, cwd=work)
        ran = subprocess.run(
            [str(env / "bin" / "python"), "-m", "qmon.app.submit"], capture_output=True, text=True, cwd=work, env=clean
        )
        found = ran.stdout.strip()
        if ran.returncode != 0 or not Path(found).resolve().is_relative_to(env.resolve()):
            raise SystemExit(f"pack_env: the new environment does not run qmon from its own files:\n{ran.stderr}")
        drop_spark_jars(env)
        output.parent.mkdir(parents=True, exist_ok=True)
        venv_pack.pack(prefix=str(env), output=str(output), force=True)
        umask = os.umask(0)
        os.umask(umask)
        output.chmod(0o666 & ~umask)  # (venv-pack writes it through a private temporary file)
        return output
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Pack the Python environment a Spark cluster runs qmon in.")
    ap.add_argument("wheel", type=Path, help="qmon's wheel (make wheel)")
    ap.add_argument("output", type=Path, help="the archive to write, e.g. dist/qmon-env.tar.gz")
    ap.add_argument("--python", help="the Python the environment is made from (default: this one's base)")
    ap.add_argument("--no-deps", action="store_true", help="the wheel alone (checks the packing; cannot run the job)")
    args = ap.parse_args(argv)
    out = pack(args.wheel, args.output, args.python, deps=not args.no_deps)
    print(f"{out} ({out.stat().st_size / 2**20:.0f} MiB): spark-submit --archives {out.name}#environment")
    return 0


if __name__ == "__main__":
    sys.exit(main())
