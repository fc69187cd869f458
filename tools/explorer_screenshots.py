"""Screenshots of the explorer page (docs/explorer.md) at phone and desktop width, from a built
site, with headless Chromium:

    sphinx-build -W -b html docs build/docs
    python tools/explorer_screenshots.py build/docs [--out DIR] [--head 128,131072,0.5,qwen]

writes ``explorer-phone.png`` (390 x 844), ``explorer-desktop.png`` (1280 x 900) and
``explorer-page.png`` (1280 x 1760, down to the phase diagram) into ``--out`` (default: the
current folder). The README's screenshot, ``docs/_static/explorer.png``, is the last; rule
``explorer_screenshot`` regenerates it from the current sources
(``snakemake --cores 1 -f explorer_screenshot``; attnscale.experiments.explorer.screenshot).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnscale.experiments.explorer.screenshot import HEAD, screenshots


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/explorer_screenshots.py")
    ap.add_argument("site", type=Path, help="a built site (sphinx-build -b html docs DIR)")
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--head", default=HEAD, help="d,n,rho,rule of the view")
    args = ap.parse_args(argv)
    if not (args.site / "explorer.html").is_file():
        raise SystemExit(f"{args.site} has no explorer.html: build the site first")
    args.out.mkdir(parents=True, exist_ok=True)
    for path in screenshots(args.site, args.out, args.head):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
