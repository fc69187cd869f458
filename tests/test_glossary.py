"""The glossary (docs/glossary.md) and the code agree: every name it gives exists and the target level is defined once (0.2.0 removed the old names
of renamed functions and keywords; CHANGELOG.md lists them)."""

from __future__ import annotations

import re

from conftest import REPO, resolve_dotted

GLOSSARY = REPO / "docs" / "glossary.md"


def test_every_code_name_in_the_glossary_exists():
    names = set(re.findall(r"`(attnscale(?:\.\w+)+)`", GLOSSARY.read_text()))
    assert len(names) >= 15, names
    missing = sorted(n for n in names if resolve_dotted(n) is None)
    assert not missing, f"docs/glossary.md names what does not exist: {missing}"


def test_the_target_level_is_defined_once():
    from attnscale.core.roots import LEVEL

    assert LEVEL == 0.5
    hits = [
        str(p.relative_to(REPO))
        for p in (REPO / "src").rglob("*.py")
        if re.search(r"^\s*LEVEL\s*[:=]", p.read_text(), flags=re.M)
    ]
    assert hits == ["src/attnscale/core/roots.py"], hits
