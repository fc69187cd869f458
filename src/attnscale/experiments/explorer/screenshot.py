"""Screenshots of the explorer page from a build of the site, in headless Chromium
(docs/explorer.md#the-readmes-screenshot).

Rule ``explorer_screenshot`` (not part of ``all``: it needs Chromium and Sphinx) builds the site
from the current sources and writes the README's screenshot, ``docs/_static/explorer.png``;
``tools/explorer_screenshots.py`` takes the phone, desktop and page views of a built site.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["HEAD", "SIZES", "chromium", "explorer_screenshot", "screenshots"]

#: Window sizes (CSS pixels) of the views; the README's screenshot is ``page``.
SIZES = {"phone": (390, 844), "desktop": (1280, 900), "page": (1280, 1760)}
#: The head the README's screenshot shows: d, n, rho, rule.
HEAD = "128,131072,0.5,qwen"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def chromium() -> str:
    """Debian's ``chromium`` (or ``chromium-browser``, ``google-chrome``); a clear error if none."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    raise SystemExit("Chromium is not installed (apt-get install -y chromium)")


def screenshots(site: Path, out: Path, head: str = HEAD, sizes=None) -> list[Path]:
    """Serve the built ``site`` on an ephemeral 127.0.0.1 port and save ``explorer-<view>.png``
    into ``out`` for each view of ``sizes`` (default :data:`SIZES`) at the head ``head``
    (``"d,n,rho,rule"``)."""
    exe = chromium()
    d, n, rho, rule = head.split(",")
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/explorer.html#d={d}&n={n}&rho={rho}&rule={rule}"
    paths = []
    try:
        for name, (w, h) in (sizes or SIZES).items():
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
    finally:
        server.shutdown()
        server.server_close()
    return paths


def explorer_screenshot(*, page, script, style, data, conf, head: str) -> dict:
    """Entry of rule ``explorer_screenshot``: build the site (``sphinx-build -W``) from the
    ``docs/`` folder that holds ``page`` (the explorer's page; ``script``, ``style``, ``data``
    and ``conf`` are its other sources, inputs so that a change reruns the rule) and return the
    page view of :func:`screenshots` at ``head`` as ``{"png": bytes}``."""
    chromium()  # before the build: no browser, no work
    docs = Path(page).resolve().parent
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "html"
        subprocess.run(
            [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(docs), str(site)],
            check=True,
        )
        (shot,) = screenshots(site, Path(tmp), head, {"page": SIZES["page"]})
        return {"png": shot.read_bytes()}
