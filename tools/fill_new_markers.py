"""Fill the placeholders ``⟨?⟩`` left after finding markers of keys that a published findings
document did not have yet (a new finding written before the default run that computes it).

``python tools/fill_new_markers.py docs/real-transformer.md`` replaces, in each file named, every
``<!-- finding:KEY -->⟨?⟩`` by the rendered value of KEY in docs/findings.json and a table
marker followed by ``⟨?⟩`` by the table; a key the document lacks is left and named. Run it
after ``python -m attnscale.experiments.findings publish``; the prose check
(tests/test_findings.py::test_markers_quote_the_findings) then covers the filled values.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from attnscale.experiments.findings.record import _table_markdown

HOLE = "⟨?⟩"


def fill(text: str, findings: dict) -> tuple[str, list[str]]:
    """``text`` with its placeholders filled from ``findings`` (key -> entry), and the keys left."""
    left = []

    def one(m):
        e = findings.get(m.group(2))
        if e is None:
            left.append(m.group(2))
            return m.group(0)
        if m.group(1) == "finding-table":
            return f"<!-- finding-table:{m.group(2)} -->\n" + "\n".join(_table_markdown(e))
        return f"<!-- finding:{m.group(2)} -->{e['rendered']}"

    pattern = r"<!-- (finding|finding-table):([\w.]+) -->\n?" + re.escape(HOLE)
    return re.sub(pattern, one, text), left


def main(paths: list[str]) -> int:
    findings = json.loads(Path("docs/findings.json").read_text(encoding="utf-8"))["findings"]
    missing = []
    for p in paths:
        text, left = fill(Path(p).read_text(encoding="utf-8"), findings)
        Path(p).write_text(text, encoding="utf-8")
        missing += [f"{p}: {k}" for k in left]
    for m in missing:
        print(f"not in docs/findings.json: {m}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
