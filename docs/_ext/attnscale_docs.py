"""Build-time pieces of the attnscale site (a small Sphinx extension, loaded by ``docs/conf.py``).

* **Gallery** (``gallery.md``): the README's figure table ("What you get") is parsed at build time
  and every row becomes a gallery entry, so the gallery cannot drift from the README. Images come
  from ``figures/`` of the repository, or from the directory named by the environment variable
  ``ATTNSCALE_DOCS_FIGURES`` (a folder laid out like ``figures/``, e.g. the ``figures/`` of a
  smoke run), else the published figures. A figure found in neither is listed with the command
  that builds it; rows
  without a figure image are listed together at the end. Headings show the table's ASCII notation
  (``lambda over (rho, gamma)``) as maths (:func:`math_title`).
* **Figures on the pages**: a ``:::{run-figure} figures/...png`` block of a page becomes the
  published figure (``docs/_static/figures/``, written by ``python -m
  attnscale.experiments.findings publish``), linked to its full-size file, or a line saying it is
  not published yet (:func:`run_figures`; docs/pipeline.md#published-figures). Markdown images
  under ``_static/`` link to their files (:func:`link_images`).
* **API reference** (``api.md``): one page per top-level package, ``api/<package>.md``, written
  before Sphinx reads the sources (found by walking the package, so a new module or package
  appears without editing a page; ``docs/api/`` is git-ignored). Each module sits under its full
  name with its docstring, a table of its ``__all__`` and its members, rendered by autodoc +
  numpydoc; in the sidebar the page's modules are listed under their full names.
* **Citations as links**: ``docs/<page>.md#<section>`` in a docstring becomes a link to that
  section (:func:`link_citations`), resolved like a MyST link, so a wrong citation fails the
  ``-W`` build.
* **MathJax, offline**: after an HTML build the MathJax 3 files needed by ``tex-chtml.js`` are
  copied from the ``django-static-mathjax`` wheel (MathJax 3.2.2, Apache-2.0, its LICENSE copied
  along) into ``_static/mathjax/``; no CDN is contacted.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pkgutil
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.errors import ExtensionError

DOCS = Path(__file__).resolve().parents[1]
REPO = DOCS.parent
FIGURES_ENV = "ATTNSCALE_DOCS_FIGURES"
TABLE_HEADER = "| Paper figure |"
#: Folder (under docs/) of the generated API pages, one per top-level package.
API_DIR = "api"

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
    """The generated part of ``gallery.md``: one section per row of the figure table that names
    a figure image (its heading in rendered maths, :func:`math_title`); the rows without an
    image (a table, or a figure not described to us) are listed together at the end, so that no
    section is empty."""
    rows = figure_table(readme)
    out = [
        "",
        f"Images are taken from `{_display(figdir)}`, else from the published figures "
        f"(`{_display(PUBLISHED)}`, [published figures](pipeline.md#published-figures)): "
        f"{sum(1 for r in rows for p in figure_pngs(r.get('Output', '')) if _png(figdir, p))} "
        "of the table's figures are found.",
        "",
    ]
    without = []
    for row in rows:
        plain = row.get("Paper figure", "").strip()
        rule = row.get("Rule (plot)", row.get("Rule", "")).strip()
        status = _links(row.get("Status", "").strip())
        title = _links(math_title(plain))
        outputs = row.get("Output", "")
        pngs = figure_pngs(outputs)
        if not pngs:
            what = outputs if outputs not in ("", "—") else "nothing is built"
            without.append(f"* **{title}** (rule {rule}): {what}; {status}")
            continue
        out += [f"## {title}", "", f"**Rule:** {rule} · **Status:** {status}", ""]
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
                f":alt: {plain.replace('`', '')}",
                "",
                f"`{png}`",
                ":::",
                "",
            ]
    if without:
        out += ["## Rows of the table without an image", "", *without, ""]
    return "\n".join(out)


# ---- headings: the README's ASCII notation as maths

#: Names written out in the README that are TeX macros in maths.
TEX_WORDS = {
    **{
        g: "\\" + g
        for g in (
            "alpha",
            "beta",
            "gamma",
            "delta",
            "epsilon",
            "zeta",
            "eta",
            "theta",
            "kappa",
            "lambda",
            "mu",
            "nu",
            "xi",
            "pi",
            "rho",
            "sigma",
            "tau",
            "phi",
            "chi",
            "psi",
            "omega",
            "Gamma",
            "Lambda",
        )
    },
    "eps": "\\epsilon",
    "inf": "\\infty",
    "ln": "\\ln",
    "log": "\\log",
    "exp": "\\exp",
    "grad": "\\nabla",
}
_MATH_LEX = re.compile(r"\s+|\d+(?:\.\d+)?(?:e\d+)?|[A-Za-z]+|\.\.|.")
_EDGE_PUNCT = ",;:"


def _tex(text: str) -> str:
    """One run of the README's notation as TeX: Greek names and ``ln``/``grad``/``inf`` become
    macros, ``x_hat`` a hat, ``x*`` a star, ``_ab``/``^ab``/``_(1)`` braced scripts, longer
    names upright, ``1e7`` a power of ten and ``..`` dots."""
    toks = _MATH_LEX.findall(text)
    out: list[str] = []
    i = 0

    def atom(tok: str, script: bool = False) -> str:
        if tok in TEX_WORDS:
            return TEX_WORDS[tok] + " "
        if re.fullmatch(r"\d+e\d+", tok):
            mant, exp = tok.split("e")
            return f"10^{{{exp}}}" if mant == "1" else f"{mant} \\times 10^{{{exp}}}"
        if tok.isalpha() and len(tok) > (2 if script else 1):
            return f"\\mathrm{{{tok}}}"
        return tok

    def group(k: int, opener: str, closer: str) -> tuple[str, int]:
        depth, j = 0, k
        while j < len(toks):
            depth += (toks[j] == opener) - (toks[j] == closer)
            if depth == 0:
                break
            j += 1
        return "".join(toks[k + 1 : j]), j + 1

    while i < len(toks):
        tok = toks[i]
        if tok in "_^" and i + 1 < len(toks):
            nxt = toks[i + 1]
            if tok == "_" and nxt == "hat" and out:  # rho_hat -> \hat{\rho}
                out[-1] = f"\\hat{{{out[-1].strip()}}}"
                i += 2
                continue
            if nxt in "{(":
                inner, i = group(i + 1, nxt, "}" if nxt == "{" else ")")
                body = _tex(inner) if nxt == "{" else f"({_tex(inner)})"
            else:
                body, i = atom(nxt, script=True).strip(), i + 2
            out.append(f"{tok}{{{body}}}")
            continue
        if tok == "*":
            out.append("^*")
        elif tok == "..":
            out.append("\\dots ")
        else:
            out.append(atom(tok))
        i += 1
    tex = re.sub(r" {2,}", " ", "".join(out)).strip()
    return re.sub(r"(\\[A-Za-z]+) (?=[,;)}_^*])", r"\1", tex)  # "\\rho ," -> "\\rho,"


def _math_token(tok: str) -> str | None:
    """``"strong"``, ``"weak"`` or ``None`` (text) for one blank-separated piece of a title.
    Strong: a Greek or function name, a sub- or superscript, or ``=``; weak: one letter, a
    number, an operator (maths only next to a strong piece)."""
    core = tok.strip(_EDGE_PUNCT + "()")
    if not core and tok.strip(_EDGE_PUNCT):  # a bare parenthesis
        return "weak"
    if "`" in tok or not core:
        return None
    pieces = re.findall(r"[A-Za-z]+", core)
    if core == "=" or "_" in core or "^" in core or any(p in TEX_WORDS for p in pieces):
        return None if re.search(r"[A-Za-z]{2,}-|-[A-Za-z]{2,}", core) else "strong"
    if all(len(p) == 1 for p in pieces) and re.fullmatch(r"[\w.+\-*/()]+|\.\.", core):
        return "weak" if not re.fullmatch(r"\d+[a-z]", core) or len(core) <= 3 else None
    return None


def math_title(title: str) -> str:
    """A README figure title with its ASCII notation (``lambda over (rho, gamma)``,
    ``gamma_c(rho_hat)``, ``n^{1/(d-1)}``) as MyST dollar maths; a title that already has ``$``
    is left alone. Maths is a run of blank-separated pieces with at least one strong piece
    (:func:`_math_token`); ``,``, ``;`` and ``:`` at its ends and an unmatched parenthesis stay
    outside, and ``;`` or ``:`` ends a run."""
    if "$" in title:
        return title
    parts = re.split(r"(\s+)", title)
    words = parts[::2]
    kinds = [_math_token(w) for w in words]
    out: list[str] = []
    k = 0
    while k < len(words):
        if kinds[k] is None:
            out.append(words[k])
            k += 1
            continue
        j = k
        while j + 1 < len(words) and kinds[j + 1] is not None and words[j][-1:] not in ";:":
            j += 1
        run = words[k : j + 1]
        if "strong" not in kinds[k : j + 1]:
            out.extend(run)
            k = j + 1
            continue
        text = " ".join(run)
        tail = ""
        while text and text[-1] in _EDGE_PUNCT:
            tail, text = text[-1] + tail, text[:-1]
        head = ""
        while text.count(")") > text.count("(") and text.endswith(")"):
            tail, text = ")" + tail, text[:-1]
        while text.count("(") > text.count(")") and text.startswith("("):
            head, text = head + "(", text[1:]
        out.append(f"{head}${_tex(text)}${tail}")
        k = j + 1
    return " ".join(out)


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
    """The image of ``png`` (``figures/...``) under ``figdir``, else the published one."""
    for folder in (figdir, PUBLISHED):
        path = folder / png.removeprefix("figures/")
        if path.is_file():
            return path
    return None


# --------------------------------------------------------------------------- figures on the pages

#: Where ``python -m attnscale.experiments.findings publish`` puts the default run's figures
#: (docs/pipeline.md#published-figures).
PUBLISHED = DOCS / "_static" / "figures"
RUN_FIGURE = re.compile(r"^:::\{run-figure\}[ \t]+(\S+)[ \t]*\n(.*?)^:::[ \t]*$", re.M | re.S)


def figure_label(png: str) -> str:
    """The label of a page's figure: ``figures/paper_a/figure1_lambda.png`` ->
    ``fig-paper-a-figure1-lambda`` (the index's results link to it)."""
    stem = png.removeprefix("figures/").removesuffix(".png").lower()
    return "fig-" + re.sub(r"[^a-z0-9]+", "-", stem).strip("-")


def find_figure(png: str) -> tuple[Path, str] | None:
    """The image a page shows for ``png`` and where it comes from: the folder named by
    ``$ATTNSCALE_DOCS_FIGURES`` where that is set, else the published figures, else this
    checkout's ``figures/``; ``None`` where none has it."""
    rel = png.removeprefix("figures/")
    env = os.environ.get(FIGURES_ENV)
    folders = [(Path(env).resolve(), f"from `{FIGURES_ENV}`")] if env else []
    manifest = PUBLISHED / "figures.json"
    commit = ""
    if manifest.is_file():
        commits = json.loads(manifest.read_text(encoding="utf-8")).get("git_commit", [])
        commit = ", ".join(f"`{c[:10]}`" for c in commits)
    folders += [
        (PUBLISHED, f"the published run, commit {commit or 'unknown'}"),
        (REPO / "figures", "this checkout's `figures/`"),
    ]
    for folder, what in folders:
        if (folder / rel).is_file():
            return folder / rel, what
    return None


def _figure_rules(readme: Path) -> dict[str, str]:
    """``figures/...png`` -> the rule that draws it (the README's figure table)."""
    out = {}
    for row in figure_table(readme):
        for png in figure_pngs(row.get("Output", "")):
            out[png] = _rule_name(row.get("Rule (plot)", row.get("Rule", "")))
    return out


def run_figures(text: str, readme: Path = REPO / "README.md") -> str:
    """Every ``:::{run-figure} figures/...png`` block of a page (its content the caption) as a
    MyST figure of the image :func:`find_figure` finds, full width and linked to its full-size
    file, its source in the caption; where none is found, a line that says so, under the same
    label (docs/pipeline.md#published-figures)."""
    rules = _figure_rules(readme) if "{run-figure}" in text else {}

    def one(m: re.Match) -> str:
        png, caption = m.group(1), m.group(2).strip()
        label, found = figure_label(png), find_figure(png)
        if found is None:
            rule = rules.get(png, "all")
            return (
                f"({label})=\n*Figure not published yet:* `{png}` (rule `{rule}`; "
                "`python -m attnscale.experiments.findings publish` publishes it). " + caption
            )
        path, what = found
        rel = os.path.relpath(path, DOCS).replace(os.sep, "/")
        return "\n".join(
            [
                f":::{{figure}} {rel}",
                f":name: {label}",
                ":width: 100%",
                f":alt: {png}",
                "",
                f"{caption} (`{png}`, {what}; click for full size.)",
                ":::",
            ]
        )

    return RUN_FIGURE.sub(one, text)


def link_images(app, doctree, docname) -> None:
    """A Markdown image under ``_static/`` links to its file (full size); images with a width
    are linked by Sphinx itself (``html_scaled_image_link``)."""
    import posixpath

    for img in list(doctree.findall(nodes.image)):
        uri = img.get("uri", "")
        if isinstance(img.parent, nodes.reference) or not uri.startswith("_static/"):
            continue
        if any(k in img for k in ("width", "height", "scale")):
            continue
        href = posixpath.relpath(uri, posixpath.dirname(docname) or ".")
        ref = nodes.reference("", "", refuri=href, internal=True)
        img.replace_self(ref)
        ref += img


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


def is_package(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.submodule_search_locations is not None


def package_order() -> list[str]:
    """The top-level packages in the order of the package docstring (the architecture, lowest
    level first), ``attnscale`` itself first; packages it does not list follow alphabetically."""
    import attnscale

    listed = [
        ln.split()[0]
        for ln in (attnscale.__doc__ or "").splitlines()
        if ln.strip() and not ln[0].isspace() and ln.split()[0].isidentifier()
    ]
    return ["attnscale", *listed]


def api_pages() -> dict[str, list[str]]:
    """API page -> the modules it documents: one page per top-level package (the package and
    everything under it) and page ``attnscale`` for the package itself and its top-level
    modules (``attnscale.cli``). Pages in :func:`package_order`."""
    pages: dict[str, list[str]] = {}
    for name in public_modules():
        parts = name.split(".")
        top_module = len(parts) == 1 or (len(parts) == 2 and not is_package(name))
        pages.setdefault("attnscale" if top_module else parts[1], []).append(name)
    order = package_order()
    rank = {p: k for k, p in enumerate(order)}
    return dict(sorted(pages.items(), key=lambda kv: (rank.get(kv[0], len(order)), kv[0])))


def public_names(module_name: str) -> list[str]:
    """The names of a module's ``__all__`` for autosummary: relative to the module, or the full
    name at its home for a name re-exported from another module (like ``eta_exact`` in
    ``attnscale.layer.dense.jacobian``), which links to where it is documented."""
    import importlib

    module = importlib.import_module(module_name)
    out = []
    for attr in getattr(module, "__all__", ()):
        obj = getattr(module, attr)
        home = getattr(obj, "__module__", None)
        if (
            callable(obj)
            and isinstance(home, str)
            and home != module_name
            and home.startswith("attnscale.")
            and hasattr(obj, "__qualname__")
        ):
            if home.startswith(module_name + "."):  # a submodule's: relative to this module
                out.append(f"~{home[len(module_name) + 1 :]}.{obj.__qualname__}")
            else:
                out.append(f"~{home}.{obj.__qualname__}")
        else:
            out.append(attr)  # relative to the module (autosummary's current module)
    return out


def module_section(name: str, level: int) -> list[str]:
    """One module: its heading (the full name), docstring, a table of its ``__all__`` and the
    members, rendered by autodoc + numpydoc."""
    options = ["   :members:"]
    note = []
    if shadowed(name):  # index the package's object; document the module without an index entry
        options.append("   :no-index:")
        note = [f"(Not indexed: `{name}` is also the name of an object of its package.)", ""]
    names = public_names(name)
    table = []
    if names:
        table = [
            "",
            "   .. rubric:: Public names (``__all__``)",
            "",
            "   .. autosummary::",
            "      :nosignatures:",
            "",
            *[f"      {n}" for n in names],
        ]
    return [
        f"{'#' * level} `{name}`",
        "",
        *note,
        "```{eval-rst}",
        f".. automodule:: {name}",
        *options,
        *table,
        "```",
        "",
    ]


def api_page_markdown(page: str, modules: list[str]) -> str:
    """A generated API page: the package as the page title, one section per module."""
    head, *rest = modules
    out = [
        "% Generated by docs/_ext/attnscale_docs.py at every build; edits are overwritten.",
        "",
        *module_section(head, 1),
    ]
    for name in rest:
        out += module_section(name, 2)
    return "\n".join(out)


def api_index_markdown() -> str:
    """The toctree of ``api.md``: the generated pages in :func:`package_order`."""
    return "\n".join(
        ["", "```{toctree}", ":maxdepth: 2", "", *[f"api/{p}" for p in api_pages()], "```", ""]
    )


def write_api_pages(app) -> None:
    """Write ``api/<package>.md`` before Sphinx looks for documents (a new module or package
    appears without editing a page). Files are rewritten only when their text changes, and
    stale pages (a package that no longer exists) are removed; ``docs/api/`` is git-ignored."""
    outdir = Path(app.srcdir) / API_DIR
    outdir.mkdir(exist_ok=True)
    pages = api_pages()
    for page, modules in pages.items():
        path = outdir / f"{page}.md"
        text = api_page_markdown(page, modules)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
    for stale in outdir.glob("*.md"):
        if stale.stem not in pages:
            stale.unlink(missing_ok=True)


#: Section names that numpydoc understands; any other underlined heading becomes a rubric.
NUMPYDOC_SECTIONS = {
    "parameters",
    "returns",
    "yields",
    "receives",
    "raises",
    "warns",
    "other parameters",
    "attributes",
    "methods",
    "see also",
    "notes",
    "warnings",
    "references",
    "examples",
}


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


#: A citation of these pages in a docstring: ``docs/<page>.md`` or ``docs/<page>.md#<section>``.
DOCS_CITATION = re.compile(r"docs/([A-Za-z0-9_.-]+?)\.md(?:#([A-Za-z0-9_-]+))?")
#: Where an inline role may start and end (reStructuredText's inline-markup recognition rules).
_BEFORE, _AFTER = r"(?<![\w`:/.-])", r"(?![\w`/])"
_BARE_CITATION = re.compile(_BEFORE + DOCS_CITATION.pattern + _AFTER)


def link_citations(app, what, name, obj, options, lines) -> None:
    """Make every ``docs/<page>.md#<section>`` of a docstring a link to that section of the site.

    A citation is replaced by the role ``:attnscale-doc:`` (:func:`docs_citation_role`), bare or
    when it is a whole literal (````docs/paper-a.md#the-model````); a citation inside a longer
    literal stays text (a role cannot sit inside a literal)."""
    for k, line in enumerate(lines):
        if "docs/" not in line:
            continue
        parts = _LITERAL.split(line)
        for i, part in enumerate(parts):
            if i % 2:  # a literal: only a literal that is exactly one citation
                if DOCS_CITATION.fullmatch(part.strip("`")):
                    parts[i] = f":attnscale-doc:`{part.strip('`')}`"
            else:
                parts[i] = _BARE_CITATION.sub(lambda m: f":attnscale-doc:`{m.group(0)}`", part)
        lines[k] = "".join(parts)


def docs_citation_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``:attnscale-doc:`docs/<page>.md#<section>``` -> a link to that page and section, resolved
    like a MyST Markdown link (an unknown page or section is a build warning, so ``-W`` fails)."""
    m = DOCS_CITATION.fullmatch(text)
    if m is None:
        msg = inliner.reporter.error(
            f"not a docs/<page>.md#<section> citation: {text!r}", line=lineno
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    env = inliner.document.settings.env
    node = addnodes.pending_xref(
        rawtext,
        refdomain="doc",
        reftarget=m.group(1),
        reftargetid=m.group(2),
        refdoc=env.docname,
        reftype="myst",
        refexplicit=True,
        classes=["xref", "myst"],
    )
    node += nodes.inline(text, "", nodes.literal(text, text))
    return [node], []


_PRE_TEXT = re.compile(r'(<span class="pre">)([^<]*)')


def _break_at_dots(html: str) -> str:
    """Allow a line break after every dot of a code name (``attnscale.<wbr>layer.<wbr>...``)."""
    return _PRE_TEXT.sub(lambda m: m.group(1) + m.group(2).replace(".", ".<wbr>"), html)


def sidebar_breaks(app, pagename, templatename, context, doctree) -> None:
    """Long module names in the sidebar wrap at their dots (docs/_static/attnscale.css keeps
    them from being cut): the local table of contents and the navigation toctree."""
    if isinstance(context.get("toc"), str):
        context["toc"] = _break_at_dots(context["toc"])
    toctree = context.get("toctree")
    if callable(toctree):
        context["toctree"] = lambda *args, **kw: _break_at_dots(toctree(*args, **kw))


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
            obj,
            what=what,
            doc=doc,
            config=config,
            class_doc=nds.SphinxClassDoc,
            func_doc=nds.SphinxFunctionDoc,
            obj_doc=nds.SphinxObjDoc,
        )

    nd.get_doc_object = get_doc_object


# --------------------------------------------------------------------------- Sphinx hooks


def source_read(app, docname, source) -> None:
    if "{run-figure}" in source[0]:
        source[0] = run_figures(source[0])
    if docname == "gallery":
        source[0] += gallery_markdown(REPO / "README.md", figures_dir())
    elif docname == "api":
        source[0] += api_index_markdown()


def check_mathjax(app) -> None:
    mathjax_source()


def always_outdated(app, env, added, changed, removed):
    """The generated pages depend on README.md, figures/ and the package: rebuild them always."""
    names = ["gallery", "api", *(d for d in env.found_docs if d.startswith(f"{API_DIR}/"))]
    names += [  # the pages that show figures (docs/pipeline.md#published-figures)
        d
        for d in env.found_docs
        if not d.startswith(f"{API_DIR}/")
        and "{run-figure}" in Path(env.doc2path(d)).read_text(encoding="utf-8")
    ]
    return [name for name in names if name in env.found_docs]


def setup(app):
    cache_numpydoc_template()
    app.connect("builder-inited", check_mathjax)
    app.connect("builder-inited", write_api_pages)
    app.connect("source-read", source_read)
    app.connect("autodoc-process-docstring", headings_to_rubrics, priority=400)
    app.connect("autodoc-process-docstring", escape_bars, priority=401)
    app.connect("autodoc-process-docstring", link_citations, priority=402)
    app.add_role("attnscale-doc", docs_citation_role)
    app.connect("env-get-outdated", always_outdated)
    app.connect("html-page-context", sidebar_breaks)
    app.connect("doctree-resolved", link_images)
    app.connect("build-finished", copy_mathjax)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
