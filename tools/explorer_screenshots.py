"""Screenshots of the explorer page (docs/explorer.md) at phone and desktop width, from a built
site, with headless Chromium:

    sphinx-build -W -b html docs build/docs
    python tools/explorer_screenshots.py build/docs [--out DIR] [--head 128,131072,0.5,qwen]

writes ``explorer-phone.png`` (390 x 844), ``explorer-desktop.png`` (1280 x 900) and
``explorer-page.png`` (1280 x 1760, down to the phase diagram) into ``--out`` (default: the
current folder). The README's screenshot, ``docs/_static/explorer.png``, is the last. The site is served on an ephemeral 127.0.0.1 port while Chromium runs.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SIZES = {"phone": (390, 844), "desktop": (1280, 900), "page": (1280, 1760)}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def screenshots(site: Path, out: Path, head: str) -> list[Path]:
    """Serve ``site`` and save one screenshot per entry of :data:`SIZES` into ``out``."""
    exe = next(
        (
            shutil.which(n)
            for n in ("chromium", "chromium-browser", "google-chrome")
            if shutil.which(n)
        ),
        None,
    )
    if exe is None:
        raise SystemExit("Chromium is not installed (apt-get install -y chromium)")
    d, n, rho, rule = head.split(",")
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/explorer.html#d={d}&n={n}&rho={rho}&rule={rule}"
    paths = []
    try:
        for name, (w, h) in SIZES.items():
            path = out / f"explorer-{name}.png"
            with tempfile.TemporaryDirectory() as profile:
                subprocess.run(
                    [
                        exe,
                        "--headless",
                        "--no-sandbox",
                        "--disable-gpu",
                        "--hide-scrollbars",
                        "--no-first-run",
                        f"--user-data-dir={profile}",
                        "--virtual-time-budget=20000",
                        f"--window-size={w},{h}",
                        f"--screenshot={path}",
                        url,
                    ],
                    check=True,
                    capture_output=True,
                    timeout=120,
                )
            paths.append(path)
            print(path)
    finally:
        server.shutdown()
        server.server_close()
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/explorer_screenshots.py")
    ap.add_argument("site", type=Path, help="a built site (sphinx-build -b html docs DIR)")
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--head", default="128,131072,0.5,qwen", help="d,n,rho,rule of the view")
    args = ap.parse_args(argv)
    if not (args.site / "explorer.html").is_file():
        raise SystemExit(f"{args.site} has no explorer.html: build the site first")
    args.out.mkdir(parents=True, exist_ok=True)
    screenshots(args.site, args.out, args.head)
    return 0


if __name__ == "__main__":
    sys.exit(main())
