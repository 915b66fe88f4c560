"""``python -m qmon``: the command line (the same as the ``qmon`` script)."""

from qmon.app.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
