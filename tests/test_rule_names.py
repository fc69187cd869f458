"""Rules in one style (docs/pipeline.md#rule-names).

* Plot rules, and only they, end in ``_figure``; each has its caption in
  ``workflow/report/<rule>.rst``, and every caption there belongs to a plot rule.
* Every rule is named after its family, the rule file it is in.
* No old rule name is a rule any more (0.2.0 removed the aliases; CHANGELOG.md lists them).
* The README's figure table names current plot rules.
"""

from __future__ import annotations

import re

from conftest import REPO

RULES_DIR = REPO / "workflow/rules"

#: rule file -> the prefix of its rules' names: the file's family, which is the file's name
#: except for a family that takes two files (docs/pipeline.md#rule-names)
FAMILY = {
    "paper_a_eta": "paper_a_",
    "paper_b_limits": "paper_b_",
    "sharpness_fixed_norm": "sharpness_",
    "training_heads": "training_",
    "findings": "findings",
    "benchmark": "benchmark_",
}


def rule_blocks() -> dict[str, tuple[str, str]]:
    """rule name -> (rule file stem, the rule's text up to the next top-level line)."""
    out = {}
    for smk in sorted(RULES_DIR.glob("*.smk")):
        lines = smk.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^(?:rule (\w+):|use rule \w+ as (\w+) with:)", line)
            if m:
                j = i + 1
                while j < len(lines) and not re.match(r"^\S", lines[j]):
                    j += 1
                out[m.group(1) or m.group(2)] = (smk.stem, "\n".join(lines[i:j]))
    return out


def _outputs(block: str) -> str:
    m = re.search(r"^    output:\n((?:        .*\n?|\s*\n)*)", block, re.M)
    return m.group(1) if m else ""


def test_plot_rules_and_only_they_end_in_figure():
    blocks = rule_blocks()
    assert len(blocks) > 50
    plots = {r for r, (_, b) in blocks.items() if '"figures/' in _outputs(b)}
    named = {r for r in blocks if r.endswith("_figure")}
    assert plots == named, {
        "plot rules not named *_figure": sorted(plots - named),
        "named *_figure without a figure": sorted(named - plots),
    }


def test_every_plot_rule_has_its_caption_and_every_caption_a_plot_rule():
    blocks = rule_blocks()
    plots = {r for r in blocks if r.endswith("_figure")}
    for rule in plots:
        captions = re.findall(r'caption="\.\./report/(\w+)\.rst"', blocks[rule][1])
        assert captions == [rule], (rule, captions)
    files = {p.stem for p in (REPO / "workflow/report").glob("*.rst")} - {"workflow"}
    assert files == plots, files ^ plots


def test_every_rule_is_named_after_its_family():
    bad = [
        f"{stem}.smk: {rule}"
        for rule, (stem, _) in rule_blocks().items()
        if not rule.startswith(FAMILY.get(stem, stem + "_"))
    ]
    assert not bad, bad


def test_no_old_rule_name_is_a_rule_and_the_changelog_lists_them():
    """0.2.0 removed the target-only rules of the names issue 26 retired; CHANGELOG.md keeps the
    table (old name -> new name), and every new name in it is a rule."""
    blocks = rule_blocks()
    text = (REPO / "CHANGELOG.md").read_text()
    table = dict(re.findall(r"^\| `(\w+)` \| `(\w+)` \|$", text, re.M))
    assert len(table) >= 18
    assert not set(table) & set(blocks), "an old name is again the name of a rule"
    assert set(table.values()) <= set(blocks)
    assert not (RULES_DIR / "aliases.smk").exists()


def test_the_readme_table_names_current_plot_rules():
    blocks = rule_blocks()
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("| Paper figure | Rule (plot) |") :].split("\n\n")[0]
    named = re.findall(r"^\|[^|]*\| `(\w+)` \|", table, re.M)
    assert len(named) > 20
    bad = [
        r for r in named if r not in blocks or not (r.endswith("_figure") or r == "benchmark_suite")
    ]
    assert not bad, bad
