"""The glossary (docs/glossary.md) and the code agree: every name it gives exists, each renamed
public name still works with a DeprecationWarning naming the new one, and the target level is
defined once."""

from __future__ import annotations

import re
import warnings

import pytest

from conftest import REPO, resolve_dotted

GLOSSARY = REPO / "docs" / "glossary.md"


def test_every_code_name_in_the_glossary_exists():
    names = set(re.findall(r"`(attnscale(?:\.\w+)+)`", GLOSSARY.read_text()))
    assert len(names) >= 15, names
    missing = sorted(n for n in names if resolve_dotted(n) is None)
    assert not missing, f"docs/glossary.md names what does not exist: {missing}"


RENAMED = [
    ("attnscale.experiments.summaries", "mean_se", "mean_se_table"),
    ("attnscale.experiments.findings.record", "mean_se", "mean_se_count"),
    ("attnscale.layer.dense.kernel_args", "beta_grid", "beta_matrix"),
    ("attnscale.pipeline.adapter", "resolve", "entry_function"),
    ("attnscale.pipeline.adapter", "load", "load_file"),
    ("attnscale.layer.finite_d.laws", "LEVELS", "QUADRATURE_PRESETS"),
]


@pytest.mark.parametrize(("module", "old", "new"), RENAMED)
def test_a_renamed_public_name_still_works_and_says_its_new_name(module, old, new):
    import importlib

    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=new):
        got = getattr(mod, old)
    assert got is getattr(mod, new)


def test_the_quadrature_keyword_was_level_and_still_is_accepted():
    from attnscale.layer import finite_d

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = finite_d.critical_beta(1000, 32, 0.5, quadrature="standard")
    with pytest.warns(DeprecationWarning, match="quadrature"):
        old = finite_d.critical_beta(1000, 32, 0.5, level="standard")
    assert old == new
    with pytest.raises(TypeError, match="level"):
        finite_d.critical_beta(1000, 32, 0.5, level="standard", quadrature="fine")
    with pytest.raises(ValueError, match="quadrature must be one of"):
        finite_d.critical_beta(1000, 32, 0.5, quadrature="coarse")


def test_the_target_level_is_defined_once():
    from attnscale.core.roots import LEVEL

    assert LEVEL == 0.5
    hits = [
        str(p.relative_to(REPO))
        for p in (REPO / "src").rglob("*.py")
        if re.search(r"^\s*LEVEL\s*[:=]", p.read_text(), flags=re.M)
    ]
    assert hits == ["src/attnscale/core/roots.py"], hits
