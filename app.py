"""Entry point: ``python app.py`` serves the web UI at http://localhost:7860 (embedded CPU engine).

Same options as ``python -m cosyweb serve`` (see ``python app.py --help``); every option also
comes from ``--config FILE`` and ``COSYWEB_*`` environment variables.
"""

from cosyweb.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
