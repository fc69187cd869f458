"""Findings are computed, never typed (docs/pipeline.md#numbers-in-the-prose).

* ``docs/findings.md`` is the rendering of ``docs/findings.json`` (the findings of the default
  run, published with ``python -m attnscale.experiments.findings publish``): the page cannot be
  edited by hand.
* Every ``<!-- finding:KEY -->value`` in README.md and docs/*.md names a key of
  ``docs/findings.json`` and is followed by exactly its rendered value.
* The smoke run's ``findings`` rule runs end to end and yields the same keys, each with its
  source tables present in the run's ``results/``.
* Outside markers and the exempt contexts, no number that looks like a result remains in the
  README or in the docs' result sections (the heuristic below); a negative control checks that
  it catches the stale claims that issue 21 found.
* The computations behind two of those stale claims (the sink's spread correction, the
  first-order root) against hand-built tables.
"""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnscale.experiments.findings import finite_d, realistic
from attnscale.experiments.findings.record import (
    format_number,
    render_markdown,
    render_value,
)
from conftest import REPO

DOCS = REPO / "docs"
FINDINGS_JSON = DOCS / "findings.json"
FINDINGS_MD = DOCS / "findings.md"

# --------------------------------------------------------------------------- the rule, as data

#: ``<!-- finding:KEY -->`` (the value follows the marker directly).
MARKER = re.compile(r"<!--\s*finding:([A-Za-z0-9_.\-]+)\s*-->")
#: Docs pages checked section by section (the generated pages are checked by equality instead).
GENERATED = {"findings.md", "gallery.md", "api.md"}
#: A docs section describes results if its heading says so; its subsections inherit.
RESULT_HEADING = re.compile(
    r"\b(findings?|results?)\b|experiment and finding|where each approximation fails", re.I
)
#: ... except the papers' own results ("Results of the paper that we use").
PAPER_HEADING = re.compile(r"of the papers?\b", re.I)
#: A section of measurements (timings, throughputs) is exempt if its heading says "measured"
#: and the heading or the section's first paragraph names the date (the machine goes with it).
MEASURED_HEADING = re.compile(r"\bmeasured\b", re.I)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
#: Numbers that look like results (after the exempt contexts are removed; LaTeX normalised).
SUSPECT = {
    "three or more decimals": re.compile(r"(?<![\w.])\d+\.\d{3,}"),
    "a percentage": re.compile(r"(?<![\w.])\d+(\.\d+)?\s?%(?!-)"),
    "plus-minus": re.compile(r"(±|\+-|\+/-)\s?\d"),
    "approximately": re.compile(r"(~|≈|\babout|\bapprox\w*)\s?\d"),
    "within a tolerance": re.compile(r"\bwithin\s+(?![1-4]\s?(SE|standard errors?)\b)\d"),
    "a factor": re.compile(r"\bfactors?\s+(of\s+)?\d"),
    "a count": re.compile(r"(?<![\w.])\d+\s+of\s+\d+\b(?!\s*%)"),
    "a multiple": re.compile(r"(?<![\w.])\d+(\.\d+)?\s?(x|times)\b"),
    "a decimal mantissa in powers of ten": re.compile(
        r"(?<![\w.])\d+\.\d+\s?(e-?\d|×\s?10|\*\s?10\^)"
    ),
    "a list of 2-decimal values": re.compile(r"(?<![\w.])\d+\.\d{2,}\s?/\s?\d"),
    "a range of 2-decimal values": re.compile(r"(?<![\w.])\d+\.\d{2,}\s?(\.\.|–)\s?\d"),
}
#: LaTeX spellings of the same things.
LATEX = [(r"\pm", "±"), (r"\%", "%"), (r"\approx", "≈"), (r"\sim", "~"), (r"\times", "×"),
         ("$", ""), ("{", ""), ("}", ""), (r"\,", " "), (r"\ ", " ")]  # fmt: skip


def _load_json() -> dict:
    return json.loads(FINDINGS_JSON.read_text(encoding="utf-8"))


def _strip_exempt(text: str, rendered: dict[str, str]) -> str:
    """The prose with the exempt contexts removed: fenced code, inline code, markers with their
    values, other HTML comments, link targets, and paragraphs that quote the papers ([paper])."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"^:::.*?^:::", "", text, flags=re.S | re.M)

    out, pos = [], 0
    for m in MARKER.finditer(text):
        out.append(text[pos : m.start()])
        val = rendered.get(m.group(1), "")
        pos = m.end() + (len(val) if val and text.startswith(val, m.end()) else 0)
    out.append(text[pos:])
    text = "".join(out)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    paras = re.split(r"\n\s*\n|\n(?=\s*[*-] )", text)
    text = "\n\n".join(p for p in paras if "[paper]" not in p)
    for a, b in LATEX:
        text = text.replace(a, b)
    return text


def result_sections(path: Path) -> list[tuple[str, str]]:
    """(heading, text) of the parts of a file that the rule covers: all of README.md; in a docs
    page, the sections whose heading describes results (with their subsections), minus the
    measurement sections that name their date."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # no headings inside code
    if path.name == "README.md":
        return [("README.md", text)]
    parts = re.split(r"^(#{1,6} .*)$", text, flags=re.M)
    out, active_level = [], None
    for i in range(1, len(parts), 2):
        heading, body = parts[i], parts[i + 1]
        level = len(heading) - len(heading.lstrip("#"))
        if active_level is not None and level <= active_level:
            active_level = None
        if (
            active_level is None
            and RESULT_HEADING.search(heading)
            and not PAPER_HEADING.search(heading)
        ):
            active_level = level
        if active_level is None:
            continue
        if MEASURED_HEADING.search(heading):
            first = body.strip().split("\n\n")[0]
            if DATE.search(heading) or DATE.search(first):
                continue
        out.append((heading.strip(), body))
    return out


def suspects(text: str, rendered: dict[str, str]) -> list[tuple[str, str]]:
    """(kind, context) of every result-like number left in ``text``."""
    clean = _strip_exempt(text, rendered)
    hits = []
    for kind, pattern in SUSPECT.items():
        for m in pattern.finditer(clean):
            ctx = clean[max(0, m.start() - 50) : m.end() + 30].replace("\n", " ").replace("\0", "")
            hits.append((kind, ctx.strip()))
    return hits


def _rendered() -> dict[str, str]:
    return {k: e["rendered"] for k, e in _load_json()["findings"].items()}


def _prose_files() -> list[Path]:
    return [REPO / "README.md", *sorted(p for p in DOCS.glob("*.md") if p.name not in GENERATED)]


# --------------------------------------------------------------------------- the checks


def test_the_page_is_the_rendering_of_the_json():
    doc = _load_json()
    assert FINDINGS_MD.read_text(encoding="utf-8") == render_markdown(doc), (
        "docs/findings.md differs from the rendering of docs/findings.json: do not edit it; "
        "regenerate (snakemake --cores all findings && "
        "python -m attnscale.experiments.findings publish)"
    )
    for key, e in doc["findings"].items():
        assert e["rendered"] == render_value(e), key
        assert e["source"], f"{key}: no source table"


def test_the_published_findings_come_from_a_default_run():
    src = _load_json()["source"]
    assert src["configuration"] == "config.yaml", src
    assert src["git_commit"] and "test" not in src["git_commit"], src
    computed = [k for k, e in _load_json()["findings"].items() if e["value"] is not None]
    assert len(computed) == len(_load_json()["findings"]), "a default-run finding is missing"


def test_markers_quote_the_findings():
    rendered = _rendered()
    bad, seen = [], 0
    for path in _prose_files():
        text = path.read_text(encoding="utf-8")
        # markers shown as code (`<!-- finding:KEY -->`) are examples, not quotes
        scan = re.sub(r"`[^`\n]*`", lambda c: " " * len(c.group(0)), text)
        for m in MARKER.finditer(scan):
            seen += 1
            key = m.group(1)
            where = f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
            if key not in rendered:
                bad.append(f"{where}: unknown key {key!r}")
                continue
            val = rendered[key]
            after = text[m.end() : m.end() + len(val) + 2]
            if not after.startswith(val) or re.match(r"\d|\.\d", text[m.end() + len(val) :]):
                bad.append(f"{where}: {key} must be followed by {val!r}, found {after!r}")
    assert seen, "no finding markers at all: the scan is broken"
    assert not bad, "markers that do not quote their finding:\n" + "\n".join(bad)


def test_no_hand_typed_result_numbers():
    rendered = _rendered()
    hits = []
    for path in _prose_files():
        for heading, body in result_sections(path):
            for kind, ctx in suspects(body, rendered):
                hits.append(f"{path.relative_to(REPO)} [{heading[:40]}] {kind}: ...{ctx}...")
    assert not hits, (
        "numbers that look like results outside <!-- finding:KEY --> markers "
        "(docs/pipeline.md#numbers-in-the-prose):\n" + "\n".join(hits)
    )


#: Issue 21's stale sentences, typed back: the heuristic must flag each one.
STALE = [
    "the exact simplex-with-sink line plus the spread correction lies within 0.01 % up to "
    "kappa c_s = 0.8",
    "it has no root for d = 16 beyond n ~ 4600 (rho = 0) / 700 (rho = 0.5)",
    "and beyond n ~ 2e5 (rho = 0.5)",
    "The rho = 0 power law is within 1e-3 at d = 4 for n >= 700",
    "and off by factors of 2 .. 10 for d >= 32",
    "because the finite-d critical beta is 1.058 gamma_c ln n at this (n, d)",
    "is 0.7234 / 0.896 / 0.967 at beta = 10 / 30 / 100",
    "gives alpha within 2 SE of 2/(d-1) (e.g. 1.0007 +- 0.0085 at d = 3)",
    r"$1.0007 \pm 0.0085$ at $d = 3$",
    "KS 0.78 / 0.27 / 0.088 at n = 1e2 / 1e3 / 1e4",
    "the fits are within 2 SE for 7 of 8 d",
]
#: Configuration choices, derivations and the papers' values stay allowed.
ALLOWED = [
    "n = 1024, d = 512, rho = 0.5, 8 draws per n, gamma = 0.5 .. 12",
    "the critical line gamma_c = 1/(1 - rho) and beta_n = gamma ln n",
    "the keys holding 90 %-mass of a row; `0.611` in code",
    "within 2 SE of 1/2 at every point, for d = 3 .. 10 and n = 1e2 .. 1e6",
    "<!-- finding:sink.spread_exact_up_to -->VALUE of the line",
    "our notes quote 0.74 / 0.92 [paper]",
]


@pytest.mark.parametrize("sentence", STALE)
def test_the_heuristic_catches_the_stale_claims(sentence):
    assert suspects(sentence, {}), sentence


@pytest.mark.parametrize("sentence", ALLOWED)
def test_the_heuristic_leaves_choices_alone(sentence):
    rendered = {"sink.spread_exact_up_to": "VALUE"}
    assert not suspects(sentence, rendered), suspects(sentence, rendered)


def test_result_sections_are_found():
    """The scoping works: the docs' findings sections are scanned, theory sections are not."""
    heads = [h for h, _ in result_sections(DOCS / "realistic-attention.md")]
    assert any("Findings" in h for h in heads), heads
    assert not any("Simplex tokens under a causal mask" in h for h in heads), heads


def test_readme_figure_table_lists_every_figure_of_all():
    """Every target of ``rule all`` but the findings and the explorer's data (the data of a docs
    page, linked from the README's own line, not a figure) is a row of the README's figure
    table."""
    snakefile = (REPO / "Snakefile").read_text(encoding="utf-8")
    block = snakefile[snakefile.index("rule all:") :]
    targets = set(re.findall(r"rules\.(\w+)\.output", block))
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    rows = {m for m in re.findall(r"^\|[^|]*\|\s*`(\w+)`", readme, flags=re.M)}
    missing = targets - rows - {"findings", "explorer_data"}
    assert not missing, f"rules of `all` without a README row: {sorted(missing)}"
    assert len(readme.splitlines()) <= 160, "the README is meant to be read in five minutes"


@pytest.mark.workflow
def test_smoke_findings_have_the_published_keys(smoke_run):
    work = smoke_run["dir"]
    doc = json.loads((work / "results/findings.json").read_text(encoding="utf-8"))
    assert (work / "results/findings.md").read_text(encoding="utf-8") == render_markdown(doc)
    assert set(doc["findings"]) == set(_load_json()["findings"])
    assert doc["source"]["configuration"] == "config.yaml + tests/smoke.yaml"
    for key, e in doc["findings"].items():
        for src in e["source"]:
            assert glob.glob(str(work / "results" / src)), f"{key}: no table {src}"
        if e["value"] is None:
            assert e["note"].startswith("not computed at this configuration"), (key, e["note"])


# --------------------------------------------------------------------------- computations


def test_format_and_render():
    assert format_number(113000.0, ".3g") == "1.13e5"
    assert format_number(2.5e-4, ".2g") == "0.00025"
    assert format_number(-0.2102, "+.2f") == "-0.21"
    e = {"value": [0.611, 0.388], "se": [0.004, None], "fmt": ".3f", "unit": "", "kind": "value"}
    assert render_value(e) == "0.611 ± 0.004 / 0.388"
    e = {"value": [0.5, 0.6], "se": None, "fmt": ".2f", "unit": "%", "kind": "range"}
    assert render_value(e) == "0.50 .. 0.60 %"
    e = {"value": None, "se": None, "fmt": ".2f", "unit": "", "kind": "value"}
    assert render_value(e) == "not computed at this configuration"


def _sink_table() -> pd.DataFrame:
    """Critical points of the default run's sink table (issue 21's stale 0.8): the spread
    correction is -0.008 % off at kappa c_s = 0.6 and -0.21 % at 0.8."""
    rows = [  # c_s, kappa, gamma_half_sim, gamma_half_simplex, gamma_half_fluct
        (0.0, 1.0, 2.050569, 2.031608, 2.050731),
        (0.6, 1.0, 2.051608, 2.032656, 2.051744),
        (0.3, 2.0, 2.051917, 2.032656, 2.051744),
        (0.4, 2.0, 2.072578, 2.049243, 2.068222),
        (0.45, 2.0, 2.143660, 2.108929, 2.128346),
        (0.5, 2.0, np.nan, np.inf, np.inf),
    ]
    df = pd.DataFrame(rows, columns=["c_s", "kappa", "gamma_half_sim", "gamma_half_simplex",
                                     "gamma_half_fluct"])  # fmt: skip
    return df.assign(n=1024, d=512, rho=0.5, trial=0, gamma_half_nosink_sim=2.050568,
                     sink_mass_at_gc=0.1, sink_mass_at_gc_simplex=0.1)  # fmt: skip


def test_sink_spread_correction_is_exact_only_up_to_0_6():
    found = {f.key: f for f in realistic.sink_findings(curves=[], critical=[_sink_table()])}
    assert found["sink.spread_exact_up_to"].value == pytest.approx(0.6)
    beyond = found["sink.spread_error_beyond"].value
    assert beyond[0] == pytest.approx(-0.2102, abs=1e-3) and beyond[1] == pytest.approx(
        -0.714, abs=1e-3
    )
    assert found["sink.no_transition_mass"].value == [0.1]


def test_first_order_root_is_lost_where_the_library_says():
    """d = 16 loses the first-order root at n = 2982 (rho = 0) and 338 (rho = 0.5), d = 32 at
    1.13e5 (rho = 0.5): the crossover 2 s^2 ln(n - 1) = (1 - rho)^2, not the coarse grid."""
    grid = [100, 261, 681, 1778, 4642, 12115, 31623, 82540, 215443]
    rows = []
    from attnscale.layer import finite_d as fd

    for d in (16, 32):
        for rho in (0.0, 0.5):
            for n in grid:
                rows.append({"kind": "grid", "d": d, "rho": rho, "n": n, "beta_star": 1.0,
                             "gamma_star": 1.0, "gamma_c": 1 / (1 - rho),
                             "beta_annealed": 1.0, "beta_paper_a": 1.0, "beta_power": 1.0,
                             "beta_first_order": fd.first_order_critical_beta(n, d, rho)})  # fmt: skip
    theory = pd.DataFrame(rows)
    found = {f.key: f for f in finite_d.transition_findings(data=[], theory=theory)}
    table = {(r[0], r[1]): (r[2], r[3]) for r in found["finite_d.first_order_crossover"].value}
    assert table[(16, 0.0)] == (2982, 4642)
    assert table[(16, 0.5)] == (338, 681)
    assert table[(32, 0.5)][0] == pytest.approx(1.13e5, rel=0.01)
    assert (32, 0.0) not in table  # a root on the whole grid
