"""``python -m attnscale``: the ``attnscale`` command line (:mod:`attnscale.cli`)."""

from attnscale.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
