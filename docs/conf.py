"""Sphinx configuration of the attnscale documentation site.

Build (from the repository root, with the venv active and the ``docs`` extra installed):

    sphinx-build -W -b html docs build/docs

Pages are Markdown (MyST). Headings get GitHub-style anchors (``myst_heading_anchors``), so a
citation such as ``docs/paper-a.md#finite-n-simplex-map`` in a docstring names a real section of
the site, and on the API pages it is a link to it. The gallery and the API reference are generated
at build time by ``_ext/attnscale_docs`` (from the README's figure table, and from the modules of
``attnscale``: one page per package, written to the git-ignored ``docs/api/``). MathJax is served
from the build itself (copied from the ``django-static-mathjax`` wheel), so the formulas render
offline.

No ``sphinx.ext.intersphinx`` (links to the numpy and scipy documentation): it downloads each
project's ``objects.inv`` at build time, the CI machines have no network, and a failed download is
a warning, which ``-W`` turns into a failed build. Types are therefore named as plain text
(``numpy.ndarray``).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(REPO / "src"))

project = "attnscale"
author = "the attnscale developers"
copyright = "2026, the attnscale developers"  # noqa: A001 (Sphinx's name)

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "attnscale_docs",
    "attnscale_explorer",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]

# MyST: $...$ and $$...$$ maths, GitHub-style heading slugs down to level 4
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 4
myst_dmath_double_inline = True

# API reference from numpydoc docstrings
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"
# the API pages' tables of contents list modules, not every function (the tables do that)
toc_object_entries = False
# numpydoc loads sphinx.ext.autosummary; nothing here uses its stub generation
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False

# MathJax 3, bundled (see attnscale_docs.copy_mathjax)
mathjax_path = "mathjax/tex-chtml.js"
# An undefined macro becomes a visible TeX error (mjx-merror) instead of red text, so the
# browser test (tests/test_docs.py) catches it.
mathjax3_config = {"tex": {"packages": {"[-]": ["noundefined"]}}}

html_theme = "alabaster"
html_title = "attnscale"
html_theme_options = {
    "page_width": "1180px",
    "sidebar_width": "230px",
    "description": "Attention scaling in long-context transformers, reproduced",
    "fixed_sidebar": False,
}
# On a generated API page (one per package) the sidebar also lists the page's modules, under
# their full names (basic theme's localtoc.html); elsewhere alabaster's defaults.
html_sidebars = {
    "api/*": [
        "about.html",
        "searchfield.html",
        "localtoc.html",
        "navigation.html",
        "relations.html",
    ],
}
html_static_path = ["_static"]
html_css_files = ["attnscale.css"]
# wide inline formulas scroll in their own box (attnscale.css)
html_js_files = ["attnscale.js"]
html_show_sourcelink = False
