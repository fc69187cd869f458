"""Findings are computed, never typed (docs/pipeline.md#numbers-in-the-prose).

* ``docs/findings.md`` is the rendering of ``docs/findings.json`` (the findings of the default
  run, published with ``python -m attnscale.experiments.findings publish``): the page cannot be
  edited by hand.
* Every ``<!-- finding:KEY -->value`` in README.md and docs/*.md names a key of
  ``docs/findings.json`` and is followed by exactly its rendered value; every generated table
  (``<!-- finding-table:KEY -->`` ... ``<!-- /finding-table -->``) is exactly the rendering of its
  table finding.
* The smoke run's ``findings`` rule runs end to end and yields the same keys, each with its
  source tables present in the run's ``results/``.
* On every line of the README and the docs (the generated pages excepted), outside markers,
  generated tables and the exempt contexts, no number looks like a result (the rule of
  ``prose_numbers``). Controls: a typed value planted in a copy of a page is flagged on its line,
  the stale claims that issue 21 found are flagged, and choices, derivations, dated measurements
  and the papers' values are not.
* The computations behind two of those stale claims (the sink's spread correction, the
  first-order root) against hand-built tables.
"""

from __future__ import annotations

import glob
import importlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from prose_numbers import (
    GENERATED,
    MEASURED_LINK,
    TABLE_BLOCK,
    evaluate,
    marker_problems,
    measured_link_targets,
    suspects,
)

from attnscale.experiments.findings import finite_d, realistic
from attnscale.experiments.findings.markers import configuration_name, findings_file, quotable
from attnscale.experiments.findings.record import (
    Finding,
    format_number,
    render_markdown,
    render_table_blocks,
    render_value,
)
from conftest import REPO

DOCS = REPO / "docs"
FINDINGS_JSON = DOCS / "findings.json"
FINDINGS_MD = DOCS / "findings.md"


def _load_json() -> dict:
    return json.loads(FINDINGS_JSON.read_text(encoding="utf-8"))


def _rendered() -> dict[str, str]:
    return quotable(DOCS)


def _prose_files(docs: Path = DOCS) -> list[Path]:
    return [
        docs.parent / "README.md",
        *sorted(p for p in docs.glob("*.md") if p.name not in GENERATED),
    ]


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
    """Every marker of README.md and docs/*.md quotes its finding's rendered value, from
    docs/findings.json or, with a configuration's name in the key, docs/findings-NAME.json, and
    none starts a line."""
    rendered = quotable(DOCS)
    bad, seen = [], 0
    for path in _prose_files():
        n, problems = marker_problems(
            path.read_text(encoding="utf-8"), rendered, str(path.relative_to(REPO))
        )
        seen += n
        bad += problems
    assert seen, "no finding markers at all: the scan is broken"
    assert not bad, "markers that do not quote their finding:\n" + "\n".join(bad)


def test_no_marker_starts_a_line():
    """A line that starts with an HTML comment is a raw HTML block in Markdown: the sentence
    breaks into paragraphs and the maths of that line stays raw TeX (issue 35). Every marker of
    README.md and docs/*.md has a word before it on its line (also inside list items)."""
    starts = []
    for path in _prose_files():
        _, problems = marker_problems(
            path.read_text(encoding="utf-8"), quotable(DOCS), str(path.relative_to(REPO))
        )
        starts += [p for p in problems if "starts a line" in p]
    assert not starts, "markers at the start of a line:\n" + "\n".join(starts)


def test_published_findings_of_other_configurations():
    """Each docs/findings-NAME.json holds the findings of config/NAME.yaml's run, rendered as
    the default's are."""
    for path in DOCS.glob("findings-*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        name = configuration_name(doc["source"]["configuration"])
        assert findings_file(name) == path.name, (path.name, doc["source"])
        assert (REPO / "config" / f"{name}.yaml").is_file(), name
        for key, e in doc["findings"].items():
            assert e["rendered"] == render_value(e), (path.name, key)


def _fixture_docs(tmp_path: Path, value: float = 1.25) -> Path:
    """A docs folder holding the default run's findings and a small long-context document of one
    finding (as its run would publish it)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copyfile(FINDINGS_JSON, docs / "findings.json")
    f = Finding(
        key="sharpness.width_ratio_lambda",
        label="width ratio",
        value=[value, 2.5],
        se=[0.06, None],
        fmt=".2f",
        source=["sharpness/transitions.csv"],
    )
    doc = {
        "schema": 1,
        "source": {
            "configuration": "config.yaml + config/long-context.yaml",
            "git_commit": ["abc"],
            "attnscale_version": "x",
            "root_seed": "1",
        },
        "sections": [
            {"id": "sharpness", "title": "Sharpness", "figure": "", "doc": "", "keys": [f.key]}
        ],
        "findings": {f.key: f.to_json("sharpness")},
    }
    results = tmp_path / "results"
    results.mkdir()
    (results / "findings.json").write_text(json.dumps(doc), encoding="utf-8")
    (results / "findings.md").write_text(render_markdown(doc), encoding="utf-8")
    return docs


def test_markers_of_another_configuration(tmp_path):
    """The long-context run's findings, published by ``publish`` to docs/findings-long-context.json,
    are quoted as ``<!-- finding:long-context:KEY -->``: the right value passes, next to a default
    finding of the same key; a wrong value, an unpublished configuration and a marker at the
    start of a line are flagged."""
    from attnscale.experiments.findings.__main__ import publish

    docs = _fixture_docs(tmp_path)
    out = publish(tmp_path / "results", docs)
    assert out == docs / "findings-long-context.json"
    assert (docs / "findings.json").read_bytes() == FINDINGS_JSON.read_bytes()  # untouched
    assert not (docs / "findings-long-context.md").exists()
    rendered = quotable(docs)
    lc = rendered["long-context:sharpness.width_ratio_lambda"]
    assert lc == "1.25 ± 0.06 / 2.50"
    default = rendered["sharpness.width_ratio_lambda"]
    assert default != lc
    good = (
        f"At $n = 2^{{20}}$ the ratio is <!-- finding:long-context:sharpness.width_ratio_lambda"
        f" -->{lc}, against\nthe default run's <!-- finding:sharpness.width_ratio_lambda -->"
        f"{default}.\n"
    )
    assert marker_problems(good, rendered) == (2, [])
    assert not suspects(good, rendered)
    wrong = good.replace(lc, "1.30 ± 0.06 / 2.50")
    assert "must be followed by" in marker_problems(wrong, rendered)[1][0]
    assert suspects(wrong, rendered)  # the typed value is then a result outside a marker
    other = good.replace("long-context:", "paper-scale:")
    assert "no findings of configuration 'paper-scale'" in marker_problems(other, rendered)[1][0]
    for start in ("", "  ", "* ", "1. ", "> "):
        moved = good.replace("is <!-- finding:long", "is\n" + start + "<!-- finding:long")
        assert "starts a line" in marker_problems(moved, rendered)[1][0], start
    # the value follows the marker; a longer number is not the finding
    assert marker_problems(good.replace(f"{lc},", f"{lc}7,"), rendered)[1]


def test_publish_refuses_a_name_markers_cannot_quote(tmp_path):
    docs = _fixture_docs(tmp_path)
    doc = json.loads((tmp_path / "results" / "findings.json").read_text(encoding="utf-8"))
    doc["source"]["configuration"] = "config.yaml + config/Long_Context.yaml"
    (tmp_path / "results" / "findings.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "results" / "findings.md").write_text(render_markdown(doc), encoding="utf-8")
    from attnscale.experiments.findings.__main__ import publish

    with pytest.raises(SystemExit, match="Long_Context"):
        publish(tmp_path / "results", docs)
    assert configuration_name("config.yaml") == ""
    assert configuration_name("config.yaml + tests/smoke.yaml") == "smoke"
    assert configuration_name("config.yaml + config/long-context.yaml") == "long-context"


def test_generated_tables_are_the_rendering_of_their_findings():
    """Every generated table, the default run's and another configuration's
    (``<!-- finding-table:NAME:KEY -->``, from ``docs/findings-NAME.json``), is the rendering of
    its finding."""
    docs = {
        path.stem.removeprefix("findings").removeprefix("-"): json.loads(path.read_text("utf-8"))
        for path in sorted(DOCS.glob("findings*.json"))
    }
    blocks = 0
    for path in _prose_files():
        text = path.read_text(encoding="utf-8")
        found = TABLE_BLOCK.findall(text)
        blocks += len(found)
        names = {key.rpartition(":")[0] for key, _ in found}
        assert names <= set(docs), f"{path.relative_to(REPO)}: tables of unpublished runs {names}"
        for name in names:
            assert render_table_blocks(text, docs[name], name) == text, (
                f"{path.relative_to(REPO)}: a generated table of {name or 'the default run'} "
                "differs from its finding; regenerate with python -m attnscale.experiments."
                "findings publish"
            )
        assert render_table_blocks(text, docs[""]) == text, (
            f"{path.relative_to(REPO)}: a generated table differs from its finding; regenerate "
            "with python -m attnscale.experiments.findings publish"
        )
    assert blocks, "no generated tables at all: the scan is broken"


def test_no_hand_typed_result_numbers():
    rendered = _rendered()
    hits = [
        f"{path.relative_to(REPO)}:{line} {kind}: ...{ctx}..."
        for path in _prose_files()
        for line, kind, ctx in suspects(path.read_text(encoding="utf-8"), rendered, path)
    ]
    assert not hits, (
        "numbers that look like results outside <!-- finding:KEY --> markers and generated "
        "tables (docs/pipeline.md#numbers-in-the-prose):\n" + "\n".join(hits)
    )


def test_measured_links_point_to_dated_measurements():
    """A sentence is exempt as a measurement only through a link to a dated measured section:
    every such link must resolve (a broken one would make the exemption silently lapse)."""
    bad = [
        f"{path.relative_to(REPO)}: {target}"
        for path in _prose_files()
        for target, ok in measured_link_targets(path).items()
        if not ok
    ]
    assert not bad, "links labelled 'measured' that name no dated measured section:\n" + "\n".join(
        bad
    )


#: Typed results planted into ordinary prose of a copy of the docs (page, text after which it is
#: planted, the planted sentence): each must be flagged on its own line.
PLANTED = [
    (
        "finite-d.md",
        "## Asymptotic regimes\n",
        "At $d = 4$, $n = 10^4$ the exact $\\beta^* = 6.133$.\n",
    ),
    ("regimes.md", "## Results\n", "Above the transition lambda falls to 0.61 at this size.\n"),
    (
        "paper-b-beyond.md",
        "### What is measured [choice]\n",
        "Measured $\\beta^*(10^6)/10^{6\\alpha}$: 0.405, 1.05, 1.96 for $d = 3, 4, 5$.\n",
    ),
    (
        "paper-a.md",
        "## Gaussian near-simplex tokens\n",
        "**[derived]** The map gives $\\lambda = 0.6238$ at $n = 1024$.\n",
    ),
    ("README.md", "## Two commands\n", "The run's critical point sits 5 to 7 % above the line.\n"),
    ("finite-d.md", "**Crossover.**", " Its root is lost beyond n ~ 4600. "),
]


@pytest.mark.parametrize("page, after, planted", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_typed_result_is_flagged(tmp_path, page, after, planted):
    """Issue 28: the rule covers every line. A copy of the docs (and the README) with one typed
    value planted into an ordinary prose section is flagged on exactly that line, and the
    unchanged copy is clean."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for p in DOCS.glob("*.md"):
        shutil.copyfile(p, docs / p.name)
    shutil.copyfile(REPO / "README.md", tmp_path / "README.md")
    (tmp_path / "tests").symlink_to(REPO / "tests")
    target = tmp_path / page if page == "README.md" else docs / page
    text = target.read_text(encoding="utf-8")
    assert after in text, after
    rendered = _rendered()
    assert not suspects(text, rendered, target)
    cut = text.index(after) + len(after)
    planted_text = text[:cut] + planted + text[cut:]
    target.write_text(planted_text, encoding="utf-8")
    lines = {line for line, _, _ in suspects(planted_text, rendered, target)}
    assert lines == {planted_text.count("\n", 0, cut) + 1}, (lines, planted)


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
    "**[paper]** The paper reports 0.7234 / 0.896 at these sizes.",
    r"$\frac1n\sum_i A_{ii} \to \ln 2 = 0.693$ and $(1 + 0.1\ln 32)^2 \approx 1.813$",
    r"$2\pi \cdot 10^{3.5} \approx 2.0 \cdot 10^4$",
    r"at the root $u^*$ of $2\ln(1 + u) = u$, $u^* = 2.513$ **[derived]**, i.e.",
    r"$c_s \in \{-0.5, 0, 0.3, 0.45, 0.48\}$, $\kappa = 4$, step 0.45, $0 \le \rho \le 0.9$",
    "the first call costs 0.3 to 0.6 s (measured 2026-11-30 on the 2-core machine)",
    "Theorem 2.3 and Python 3.11 (arXiv 2510.05554), accurate to about 10^-4",
    "the metric drops by 10 % **[choice]** when the top group is removed",
]


#: Typed results in the forms the exemptions must not let through.
TYPED = [
    r"$\ln 2 = 0.700$",  # a derivation constant that its closed form does not give
    r"$\beta^* = 25.11$ at $d = 128$",
    r"the transition sits at $\beta = 25.11$, $\gamma = 2.131$",  # beta, gamma: not config symbols
    "lambda falls to 0.61",
    "the spread measured here is 0.024 (2-core machine)",  # measured, but no date
    # a [paper] label inside a paragraph exempts its own sentence only
    "At these sizes the ratios of the simulation are as the notes quote them, 0.74 / 0.92 [paper]. "
    "The exact value is 0.8958.",
    "the criterion is met, 0.0283 / 0.3256 **[choice]** in the next clause, 0.9497 / 0.9614",
]


@pytest.mark.parametrize("sentence", STALE + TYPED)
def test_the_heuristic_catches_the_stale_claims(sentence):
    assert suspects(sentence, {}), sentence


@pytest.mark.parametrize("sentence", ALLOWED)
def test_the_heuristic_leaves_choices_alone(sentence):
    rendered = {"sink.spread_exact_up_to": "VALUE"}
    assert not suspects(sentence, rendered), suspects(sentence, rendered)


def test_derivation_constants_are_evaluated():
    """The closed forms the rule evaluates (a derivation constant is exempt only if its closed form
    gives it to its printed digits)."""
    assert evaluate(r"\ln 2") == pytest.approx(np.log(2))
    assert evaluate(r"(1 + 0.1\ln 32)^2") == pytest.approx((1 + 0.1 * np.log(32)) ** 2)
    assert evaluate(r"\sqrt2/\pi") == pytest.approx(np.sqrt(2) / np.pi)
    assert evaluate(r"2\pi \cdot 10^{3.5}") == pytest.approx(2 * np.pi * 10**3.5)
    assert evaluate(r"\frac{5}{16} + 2\ln 2^{20}/128") == pytest.approx(
        5 / 16 + 40 * np.log(2) / 128
    )
    assert evaluate(r"10^{-6 \cdot 2/9}") == pytest.approx(10 ** (-6 * 2 / 9))
    for not_closed in (r"\beta^*", r"\ln n", "x + 1", r"\Lambda^*_3"):
        with pytest.raises(ValueError):
            evaluate(not_closed)


def test_measured_link_exempts_only_through_a_dated_section(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "## Times (measured 2026-11-30, 2-core machine)\n\nIt ran 3 min.\n\n"
        "## Use\n\nIt takes about 9 minutes ([measured](#times-measured-2026-11-30-2-core-machine)).\n\n"
        "It takes about 8 minutes ([measured](#use)).\n",
        encoding="utf-8",
    )
    assert measured_link_targets(page) == {
        "#times-measured-2026-11-30-2-core-machine": True,
        "#use": False,
    }
    hits = suspects(page.read_text(encoding="utf-8"), {}, page)
    assert [line for line, _, _ in hits] == [9], hits
    assert MEASURED_LINK.search("([measured](performance.md#x))")


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
            if src.startswith("attnscale."):  # a theory value computed by the library
                module, _, name = src.rpartition(".")
                assert hasattr(importlib.import_module(module), name), f"{key}: no {src}"
                continue
            assert glob.glob(str(work / "results" / src)), f"{key}: no table {src}"
        if e["value"] is None:
            assert e["note"].startswith("not computed at this configuration"), (key, e["note"])


def test_publish_renders_the_generated_tables(tmp_path):
    """``publish`` copies the findings and rewrites every generated table of the pages from them;
    an unknown key or a finding that is not a table is an error naming it."""
    from attnscale.experiments.findings.__main__ import publish

    results, docs = tmp_path / "results", tmp_path / "docs"
    results.mkdir()
    docs.mkdir()
    shutil.copyfile(FINDINGS_JSON, results / "findings.json")
    shutil.copyfile(FINDINGS_MD, results / "findings.md")
    block = "<!-- finding-table:{} -->\n| stale |\n<!-- /finding-table -->\n"
    (docs / "page.md").write_text(
        "Text.\n\n" + block.format("finite_d.gamma_ratio_table"), encoding="utf-8"
    )
    (tmp_path / "README.md").write_text(block.format("paper_a.simplex_eta_table"), encoding="utf-8")
    publish(results, docs)
    doc = _load_json()
    for page in (docs / "page.md", tmp_path / "README.md"):
        text = page.read_text(encoding="utf-8")
        assert "| stale |" not in text and render_table_blocks(text, doc) == text
    assert (docs / "findings.json").read_bytes() == FINDINGS_JSON.read_bytes()
    with pytest.raises(KeyError, match="no_such.key"):
        render_table_blocks(block.format("no_such.key"), doc)
    with pytest.raises(ValueError, match="not a table"):
        render_table_blocks(block.format("finite_d.power_law_over_exact"), doc)


def test_publish_refreshes_the_values_after_the_markers(tmp_path):
    """``publish`` replaces a marker's old rendering by the new one, for the configuration that
    ran only; a value that is neither is reported stale and left alone."""
    import copy
    import json

    from attnscale.experiments.findings.__main__ import publish
    from attnscale.experiments.findings.markers import refresh_markers

    doc = _load_json()
    key = "sharpness.width_ratio_lambda"
    old = copy.deepcopy(doc)
    old["findings"][key]["rendered"] = "9.99 (old)"
    text = (
        f"Now <!-- finding:{key} -->9.99 (old) and again <!-- finding:{key} -->"
        f"{doc['findings'][key]['rendered']}; by hand <!-- finding:{key} -->1.23; other run "
        f"<!-- finding:long-context:{key} -->9.99 (old).\n"
    )
    new, stale = refresh_markers(text, "", old, doc)
    want = doc["findings"][key]["rendered"]
    assert new.count(want) == 2 and "-->1.23" in new and new.endswith("-->9.99 (old).\n")
    assert stale == [key]
    # through publish: the docs' file is the old document, the run's the new one
    results, docs = tmp_path / "results", tmp_path / "docs"
    results.mkdir()
    docs.mkdir()
    shutil.copyfile(FINDINGS_JSON, results / "findings.json")
    shutil.copyfile(FINDINGS_MD, results / "findings.md")
    (docs / "findings.json").write_text(json.dumps(old), encoding="utf-8")
    (docs / "page.md").write_text(text, encoding="utf-8")
    publish(results, docs)
    assert (docs / "page.md").read_text(encoding="utf-8") == new


def test_publish_fills_a_new_key_written_as_pending():
    """A key the published document lacks, its value written as ``PENDING``, gets its rendering;
    a key both documents have keeps ``PENDING`` as stale (issue 45)."""
    import copy

    from attnscale.experiments.findings.markers import PENDING, refresh_markers

    doc = _load_json()
    key = "sharpness.width_ratio_lambda"
    old = copy.deepcopy(doc)
    del old["findings"][key]
    text = f"New <!-- finding:{key} -->{PENDING}.\n"
    new, stale = refresh_markers(text, "", old, doc)
    assert new == f"New <!-- finding:{key} -->{doc['findings'][key]['rendered']}.\n" and not stale
    _, stale = refresh_markers(text, "", doc, doc)
    assert stale == [key]


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


#: Families whose findings are declarations (issue 42: a list of small declared entries).
DECLARED_FAMILIES = (
    "causal",
    "exponent",
    "finite_d",
    "paper_a",
    "regimes",
    "regimes_checks",
    "regimes_read_off",
    "theorem",
)


@pytest.mark.parametrize("family", DECLARED_FAMILIES)
def test_declared_findings_are_small(family):
    """Every finding a family declares (``record.declare``) is computed by a function of at most
    40 lines, and no key is declared twice (docs/pipeline.md#numbers-in-the-prose)."""
    import functools
    import inspect

    from attnscale.experiments.findings.record import Declared

    module = importlib.import_module(f"attnscale.experiments.findings.{family}")
    declared = [
        d
        for obj in vars(module).values()
        if isinstance(obj, list) and obj and all(isinstance(d, Declared) for d in obj)
        for d in obj
    ]
    assert declared, f"{family} declares no findings"
    keys = [d.key for d in declared]
    assert len(keys) == len(set(keys)), f"{family}: a key declared twice"
    long = {}
    for d in declared:
        fn = d.fn.func if isinstance(d.fn, functools.partial) else d.fn
        if (n := len(inspect.getsource(fn).splitlines())) > 40:
            long[d.key] = (fn.__name__, n)
    assert not long, f"{family}: computing functions over 40 lines: {long}"


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
    df = pd.DataFrame(
        rows, columns=["c_s", "kappa", "gamma_half_sim", "gamma_half_simplex", "gamma_half_fluct"]
    )
    return df.assign(
        n=1024,
        d=512,
        rho=0.5,
        trial=0,
        gamma_half_nosink_sim=2.050568,
        sink_mass_at_gc=0.1,
        sink_mass_at_gc_simplex=0.1,
    )


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
                rows.append(
                    {
                        "kind": "grid",
                        "d": d,
                        "rho": rho,
                        "n": n,
                        "beta_star": 1.0,
                        "gamma_star": 1.0,
                        "gamma_c": 1 / (1 - rho),
                        "beta_annealed": 1.0,
                        "beta_paper_a": 1.0,
                        "beta_power": 1.0,
                        "beta_first_order": fd.first_order_critical_beta(n, d, rho),
                    }
                )
    theory = pd.DataFrame(rows)
    found = {f.key: f for f in finite_d.transition_findings(data=[], theory=theory)}
    table = {(r[0], r[1]): (r[2], r[3]) for r in found["finite_d.first_order_crossover"].value}
    assert table[(16, 0.0)] == (2982, 4642)
    assert table[(16, 0.5)] == (338, 681)
    assert table[(32, 0.5)][0] == pytest.approx(1.13e5, rel=0.01)
    assert (32, 0.0) not in table  # a root on the whole grid
