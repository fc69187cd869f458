"""``python -m attnscale.experiments.explorer publish [--results DIR] [--docs DIR]``

Copies a default run's ``results/explorer/data.json`` (rule ``explorer_data``) to
``docs/explorer-data.json`` after checking it (docs/explorer.md#where-the-data-come-from).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnscale.experiments.explorer.data import publish


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m attnscale.experiments.explorer")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("publish", help="copy results/explorer/data.json into docs/")
    p.add_argument("--results", type=Path, default=Path("results"))
    p.add_argument("--docs", type=Path, default=Path("docs"))
    args = ap.parse_args(argv)
    try:
        publish(args.results, args.docs)
    except (OSError, ValueError) as exc:
        print(f"explorer publish: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
