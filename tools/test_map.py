"""Write tests/README.md: for every module of src/attnscale, the test files that exercise it
directly (import it, or name it in a dotted string such as a monkeypatch target).

    python tools/test_map.py          # rewrite tests/README.md
    python tools/test_map.py --check  # exit 1 if tests/README.md is stale

tests/test_layout.py runs the check, so the map cannot go stale.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import OrderedDict, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
MAP = REPO / "tests" / "README.md"

HEADER = """# Where the tests are

Tests are flat files named after the module, family or concern they check (`test_<name>.py`).
This map says, for every module of `src/attnscale`, which test files exercise it directly (import
it or name it); it is written by `python tools/test_map.py`, and `tests/test_layout.py` fails when
it is stale. "smoke run" means the module is exercised only through the workflow: the smoke run of
`tests/test_workflow.py` (every rule on tiny sizes) and the tables and findings checked on it
(`tests/test_findings.py`, `tests/test_reliability.py`, the golden tables).

Cross-cutting files: `test_layout.py` and `test_public_names.py` (package layout, `__all__`, the
public API and its old paths), `test_glossary.py` (names), `test_workflow.py`,
`test_reliability.py`, `test_extension.py` and `test_rule_*.py` (the workflow), `test_docs.py` and
`test_findings.py` (the documentation and its numbers), `test_config*.py` and `test_schema.py`
(configuration). Figure tests check the plotted data against the table (`tests/drawn.py` reads
what a figure draws).
"""


def modules() -> list[str]:
    """Every module of the package, by its dotted name."""
    return sorted(
        ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for p in (SRC / "attnscale").rglob("*.py")
    )


def uses() -> dict[str, set[str]]:
    """Module -> the test files that import it or name it."""
    known = set(modules())
    out: dict[str, set[str]] = defaultdict(set)
    for tf in sorted((REPO / "tests").glob("test_*.py")):
        text = tf.read_text()
        names = set(re.findall(r"attnscale(?:\.\w+)+", text))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attnscale"):
                names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names if a.name.startswith("attnscale")}
        for n in names:
            while n not in known and "." in n:
                n = n.rsplit(".", 1)[0]
            if n in known:
                out[n].add(tf.name)
    return out


def render() -> str:
    """The text of tests/README.md."""
    found = uses()
    groups: OrderedDict[str, list[str]] = OrderedDict()
    for m in modules():
        parts = m.split(".")
        pkg = (
            parts[1]
            if len(parts) > 2 or (len(parts) == 2 and (SRC / "attnscale" / parts[1]).is_dir())
            else "top level"
        )
        groups.setdefault(pkg, []).append(m)
    out = [HEADER]
    for pkg, mods in groups.items():
        out.append(f"\n## {pkg}\n\n| module | tests |\n|---|---|")
        for m in mods:
            tests = ", ".join(f"`{t}`" for t in sorted(found.get(m, ()))) or "smoke run"
            out.append(f"| `{m}` | {tests} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        return 0 if MAP.read_text() == text else 1
    MAP.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
