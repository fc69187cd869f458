"""Build-time pieces of the attnscale site (a small Sphinx extension, loaded by ``docs/conf.py``).

* **Gallery** (``gallery.md``): the README's figure table ("What you get") is parsed at build time
  and every row becomes a gallery entry, so the gallery cannot drift from the README. Images come
  from ``figures/`` of the repository, or from the directory named by the environment variable
  ``ATTNSCALE_DOCS_FIGURES`` (a folder laid out like ``figures/``, e.g. the ``figures/`` of a
  smoke run). A figure that has not been built is listed with the command that builds it.
* **API reference** (``api.md``): one section per public module of ``attnscale`` (found by walking
  the package, so a new module appears without editing the page), rendered by autodoc + numpydoc.
* **MathJax, offline**: after an HTML build the MathJax 3 files needed by ``tex-chtml.js`` are
  copied from the ``django-static-mathjax`` wheel (MathJax 3.2.2, Apache-2.0, its LICENSE copied
  along) into ``_static/mathjax/``; no CDN is contacted.
"""

from __future__ import annotations

import importlib.util
import os
import pkgutil
import re
import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

DOCS = Path(__file__).resolve().parents[1]
REPO = DOCS.parent
FIGURES_ENV = "ATTNSCALE_DOCS_FIGURES"
TABLE_HEADER = "| Paper figure |"

# --------------------------------------------------------------------------- README figure table


def _cells(line: str) -> list[str]:
    """Cells of one Markdown table row; ``\\|`` inside a cell is a literal bar."""
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def figure_table(readme: Path) -> list[dict]:
    """Rows of the README's figure table as dicts keyed by the header's column names."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(TABLE_HEADER))
    except StopIteration as exc:
        raise ExtensionError(
            f"README.md has no figure table (a row starting {TABLE_HEADER!r})"
        ) from exc
    header = _cells(lines[start])
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = _cells(line)
        rows.append(dict(zip(header, cells, strict=False)))
    return rows


def _expand_braces(path: str) -> list[str]:
    """``a/b.{png,pdf}`` -> ``["a/b.png", "a/b.pdf"]`` (one brace group)."""
    m = re.search(r"\{([^}]*)\}", path)
    if not m:
        return [path]
    return [path[: m.start()] + alt + path[m.end() :] for alt in m.group(1).split(",")]


def figure_pngs(output_cell: str) -> list[str]:
    """The ``figures/...png`` paths named in an Output cell."""
    paths = []
    for code in re.findall(r"`([^`]+)`", output_cell):
        paths += [p for p in _expand_braces(code.strip()) if p.startswith("figures/")]
    return [p for p in paths if p.endswith(".png")]


def figures_dir() -> Path:
    """Where the gallery's images come from (``$ATTNSCALE_DOCS_FIGURES`` or ``figures/``)."""
    env = os.environ.get(FIGURES_ENV)
    return Path(env).resolve() if env else REPO / "figures"


def gallery_markdown(readme: Path, figdir: Path) -> str:
    """The generated part of ``gallery.md``: one section per row of the figure table."""
    rows = figure_table(readme)
    out = [
        "",
        f"Images are taken from `{_display(figdir)}` "
        f"({sum(1 for r in rows for p in figure_pngs(r.get('Output', '')) if _png(figdir, p))} "
        "of the table's figures are built there).",
        "",
    ]
    for row in rows:
        title = row.get("Paper figure", "").strip()
        rule = row.get("Rule (plot)", row.get("Rule", "")).strip()
        status = row.get("Status", "").strip()
        title, status = _links(title), _links(status)
        out += [f"## {title}", "", f"**Rule:** {rule} · **Status:** {status}", ""]
        outputs = row.get("Output", "")
        pngs = figure_pngs(outputs)
        if not pngs:
            out += [
                f"No figure image: {outputs if outputs not in ('', '—') else 'nothing is built'}.",
                "",
            ]
            continue
        for png in pngs:
            src = _png(figdir, png)
            if src is None:
                out += [
                    f"*Not built yet* (`{png}`): `snakemake --cores all {_rule_name(rule)}`.",
                    "",
                ]
                continue
            rel = os.path.relpath(src, DOCS).replace(os.sep, "/")
            out += [
                f":::{{figure}} {rel}",
                ":width: 100%",
                f":alt: {title}",
                "",
                f"`{png}`",
                ":::",
                "",
            ]
    return "\n".join(out)


def _links(cell: str) -> str:
    """README links, made valid from the docs folder: a link to a page there loses the folder
    prefix; a README anchor or any other file becomes plain text ("(README)" for the anchor)."""

    def fix(m: re.Match) -> str:
        text, target = m.group(1), m.group(2)
        if target.startswith("docs/"):
            return f"[{text}]({target.removeprefix('docs/')})"
        if target.startswith("#"):
            return f"{text} (README)"
        if re.match(r"[a-z]+://", target):
            return m.group(0)
        return text

    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", fix, cell)


def _png(figdir: Path, png: str) -> Path | None:
    path = figdir / png.removeprefix("figures/")
    return path if path.is_file() else None


def _rule_name(rule_cell: str) -> str:
    m = re.search(r"`([^`]+)`", rule_cell)
    return m.group(1) if m else "all"


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------- API reference


def public_modules() -> list[str]:
    """Every public module of ``attnscale`` (no name part starting with ``_``), sorted."""
    import attnscale

    names = ["attnscale"]
    for info in pkgutil.walk_packages(attnscale.__path__, "attnscale."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def shadowed(name: str) -> bool:
    """Whether module ``a.b.c`` is hidden by a different object ``c`` of its package ``a.b``
    (e.g. a function named like a submodule): both would claim the name ``a.b.c``."""
    import importlib

    parent, _, attr = name.rpartition(".")
    if not parent:
        return False
    try:
        module = importlib.import_module(name)
        return getattr(importlib.import_module(parent), attr, module) is not module
    except Exception:  # noqa: BLE001 - autodoc reports the import error itself, as a warning
        return False


def api_markdown() -> str:
    out = [""]
    for name in public_modules():
        options = ["   :members:"]
        note = []
        if shadowed(name):  # index the package's object; document the module without an index entry
            options.append("   :no-index:")
            note = [f"(Not indexed: `{name}` is also the name of an object of its package.)", ""]
        out += [
            f"## `{name}`",
            "",
            *note,
            "```{eval-rst}",
            f".. automodule:: {name}",
            *options,
            "```",
            "",
        ]
    return "\n".join(out)


#: Section names that numpydoc understands; any other underlined heading becomes a rubric.
NUMPYDOC_SECTIONS = {
    "parameters", "returns", "yields", "receives", "raises", "warns", "other parameters",
    "attributes", "methods", "see also", "notes", "warnings", "references", "examples",
}  # fmt: skip


def headings_to_rubrics(app, what, name, obj, options, lines) -> None:
    """Turn free-form headings of docstrings (``Conventions`` over a line of dashes) into
    rubrics: as sections they would collide across modules on the API page (two modules have a
    "Conventions" section) and break the page's table of contents."""
    i = 0
    while i + 1 < len(lines):
        title, rule = lines[i].strip(), lines[i + 1].strip()
        if (
            title
            and len(rule) >= len(title)
            and set(rule) <= set("-=~^")
            and len(set(rule)) == 1
            and title.lower() not in NUMPYDOC_SECTIONS
            and (i == 0 or not lines[i - 1].strip())
        ):
            lines[i : i + 2] = [f".. rubric:: {title}", ""]
        i += 1


_LITERAL = re.compile(r"(``.*?``|`[^`]*`)")


def escape_bars(app, what, name, obj, options, lines) -> None:
    """Docstrings write norms and absolute values as ``|x|`` in plain text; reStructuredText would
    read ``|sim - theory|`` as a substitution reference and fail the build. Outside backtick
    literals and roles every ``|`` is escaped (the library uses no substitutions or line blocks)."""
    for k, line in enumerate(lines):
        if "|" in line:
            parts = _LITERAL.split(line)
            lines[k] = "".join(
                p if i % 2 else re.sub(r"(?<!\\)\|", r"\\|", p) for i, p in enumerate(parts)
            )


# --------------------------------------------------------------------------- MathJax

#: Parts of MathJax's ``es5/`` folder that ``tex-chtml.js`` can load (the rest is left out).
MATHJAX_KEEP = ("tex-chtml.js", "output/chtml", "input/tex", "a11y", "ui", "adaptors")


def mathjax_source() -> Path:
    spec = importlib.util.find_spec("mathjax")
    if spec is None or spec.origin is None:
        raise ExtensionError(
            "MathJax is not installed: pip install django-static-mathjax "
            "(pinned in envs/requirements.txt) to build the docs offline"
        )
    root = Path(spec.origin).parent / "static" / "mathjax"
    if not (root / "es5" / "tex-chtml.js").is_file():
        raise ExtensionError(f"no es5/tex-chtml.js under {root}: unexpected MathJax package layout")
    return root


def copy_mathjax(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    src = mathjax_source()
    dest = Path(app.outdir) / "_static" / "mathjax"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / "LICENSE", dest / "LICENSE")
    for part in MATHJAX_KEEP:
        p = src / "es5" / part
        if p.is_dir():
            shutil.copytree(p, dest / part, dirs_exist_ok=True)
        else:
            shutil.copy2(p, dest / part)


# --------------------------------------------------------------------------- numpydoc speed-up


def cache_numpydoc_template() -> None:
    """Compile numpydoc's Jinja template once instead of once per docstring and signature.

    numpydoc 1.11 builds a fresh template environment in every ``get_doc_object`` call (twice per
    documented object); that was about a fifth of the whole build's CPU time. The replacement
    does exactly what numpydoc does, with the compiled template kept per builder. If numpydoc's
    internals differ (another version), nothing is patched.
    """
    try:
        from numpydoc import docscrape_sphinx as nds
        from numpydoc import numpydoc as nd
    except ImportError:
        return
    original = getattr(nds, "get_doc_object", None)
    if original is None or getattr(nd, "get_doc_object", None) is not original:
        return
    if not all(hasattr(nds, a) for a in ("get_doc_object_orig", "SphinxClassDoc", "SphinxObjDoc")):
        return
    templates: dict = {}

    def get_doc_object(obj, what=None, doc=None, config=None, builder=None):
        config = {} if config is None else config
        key = id(builder)
        if key not in templates:
            probe = original(lambda: None, "function", "", {}, builder)  # builds the template
            templates[key] = probe.template
        config["template"] = templates[key]
        return nds.get_doc_object_orig(
            obj, what=what, doc=doc, config=config, class_doc=nds.SphinxClassDoc,
            func_doc=nds.SphinxFunctionDoc, obj_doc=nds.SphinxObjDoc,
        )  # fmt: skip

    nd.get_doc_object = get_doc_object


# --------------------------------------------------------------------------- Sphinx hooks


def source_read(app, docname, source) -> None:
    if docname == "gallery":
        source[0] += gallery_markdown(REPO / "README.md", figures_dir())
    elif docname == "api":
        source[0] += api_markdown()


def check_mathjax(app) -> None:
    mathjax_source()


def always_outdated(app, env, added, changed, removed):
    """The generated pages depend on README.md, figures/ and the package: rebuild them always."""
    return [name for name in ("gallery", "api") if name in env.found_docs]


def setup(app):
    cache_numpydoc_template()
    app.connect("builder-inited", check_mathjax)
    app.connect("source-read", source_read)
    app.connect("autodoc-process-docstring", headings_to_rubrics, priority=400)
    app.connect("autodoc-process-docstring", escape_bars, priority=401)
    app.connect("env-get-outdated", always_outdated)
    app.connect("build-finished", copy_mathjax)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
