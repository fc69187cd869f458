"""The explorer page's data, embedded at build time (a small Sphinx extension, loaded by
``docs/conf.py``; docs/explorer.md#where-the-data-come-from).

When Sphinx reads ``explorer.md`` this appends the page's data document as a raw HTML
``<script type="application/json" id="attnscale-explorer-data">`` block, which
``_static/explorer.js`` reads and draws (no network, no file fetched at view time, so the page
also works opened from disk). The document is ``docs/explorer-data.json``, a default run's
``results/explorer/data.json`` published with ``python -m attnscale.experiments.explorer
publish``, or the file named by the environment variable ``ATTNSCALE_DOCS_EXPLORER`` (e.g. the
``results/explorer/data.json`` of a smoke run or of a run with another configuration).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sphinx.errors import ExtensionError

DOCS = Path(__file__).resolve().parents[1]
#: Environment variable naming another data document than the published one.
DATA_ENV = "ATTNSCALE_DOCS_EXPLORER"
#: The page that shows the explorer, and the id its script reads.
PAGE = "explorer"
SCRIPT_ID = "attnscale-explorer-data"


def data_path() -> Path:
    """``$ATTNSCALE_DOCS_EXPLORER`` or the published ``docs/explorer-data.json``."""
    env = os.environ.get(DATA_ENV)
    return Path(env).resolve() if env else DOCS / "explorer-data.json"


def data_block(path: Path) -> str:
    """The MyST raw-HTML block that embeds the data document at ``path`` (compact JSON; ``<``
    escaped, so no string can end the script element)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExtensionError(
            f"explorer data {path} cannot be read ({exc}); publish a default run's data with "
            "`python -m attnscale.experiments.explorer publish` or set "
            f"{DATA_ENV} to a results/explorer/data.json"
        ) from exc
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True, allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        f'\n\n```{{raw}} html\n<script type="application/json" id="{SCRIPT_ID}">{text}'
        "</script>\n```\n"
    )


def source_read(app, docname, source) -> None:
    if docname == PAGE:
        source[0] += data_block(data_path())


def always_outdated(app, env, added, changed, removed):
    """The page depends on the data file: rebuild it always."""
    return [PAGE] if PAGE in env.found_docs else []


def setup(app):
    app.connect("source-read", source_read)
    app.connect("env-get-outdated", always_outdated)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
