"""``python -m cosyweb``: the command line (see :mod:`cosyweb.cli`)."""

from cosyweb.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
