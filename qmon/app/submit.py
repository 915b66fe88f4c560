"""qmon's command line as a spark-submit application.

    spark-submit --master spark://MASTER:7077 --packages PACKAGES [--conf ...] \\
        "$(python -m qmon.app.submit)" run --bootstrap KAFKA:9092 --checkpoint CHECKPOINT

Run with arguments (as spark-submit runs it), it is ``qmon`` itself; run without (``python -m
qmon.app.submit``), it prints its own path and the ``--packages`` value qmon uses, for the command above.
Settings given to spark-submit (``--conf``, ``spark-defaults.conf``) win over qmon's own defaults.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if not argv:
        from qmon.streaming.spark import packages

        print(__file__)
        print(f"--packages {packages()}", file=sys.stderr)
        return 0
    from qmon.app.cli import main as qmon

    return qmon(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
