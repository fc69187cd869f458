"""Print the parameters and inputs behind any output of the workflow.

    python -m attnscale.pipeline.lineage figures/paper_a/figure1_lambda.png [--depth 3]

Reads Snakemake's own records in ``.snakemake/metadata/`` (one JSON per output: rule, params,
inputs, input checksums, code) and walks the inputs recursively. Inputs made by the same rule
are collapsed into one line with their count, and the library files a rule imports are listed
separately. Run it from the repository root after the output was built.
"""

from __future__ import annotations

import argparse
import ast
import base64
import json
import sys
from collections import OrderedDict
from pathlib import Path

__all__ = ["explain", "main"]


def _record(path: str, root: Path) -> dict | None:
    meta = root / ".snakemake" / "metadata"
    name = base64.urlsafe_b64encode(path.encode()).decode()
    cand = meta / name
    if cand.is_file():
        return json.loads(cand.read_text())
    # long names are split into sub-directories by Snakemake: fall back to a scan
    if meta.is_dir():
        for f in meta.rglob("*"):
            if f.is_file():
                rel = "".join(f.relative_to(meta).parts)
                try:
                    if base64.urlsafe_b64decode(rel).decode() == path:
                        return json.loads(f.read_text())
                except (ValueError, UnicodeDecodeError):
                    continue
    return None


def _list(value) -> list:
    if isinstance(value, list):
        return value
    try:
        out = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return [value]
    return out if isinstance(out, list) else [out]


def explain(path: str, root: Path = Path("."), depth: int = 3) -> list[str]:
    """Lines describing how ``path`` was made, ``depth`` levels of inputs deep."""
    lines: list[str] = []
    seen: set[str] = set()

    def walk(p: str, level: int, count: int = 1) -> None:
        pad = "  " * level
        rec = _record(p, root)
        label = p if count == 1 else f"{p}  (+{count - 1} more from the same rule)"
        if rec is None:
            lines.append(f"{pad}{label}: no Snakemake record (source file or not built here)")
            return
        lines.append(f"{pad}{label}")
        lines.append(f"{pad}  rule: {rec.get('rule')}")
        for i, prm in enumerate(_list(rec.get("params", "[]"))):
            lines.append(f"{pad}  param[{i}]: {prm}")
        inputs = [str(x) for x in _list(rec.get("input", "[]"))]
        lib = [x for x in inputs if x.startswith("src/")]
        data = [x for x in inputs if not x.startswith("src/")]
        if lib:
            lines.append(f"{pad}  library: {', '.join(lib)}")
        if p in seen or level >= depth:
            if data:
                lines.append(f"{pad}  inputs: {len(data)} file(s), e.g. {data[0]}")
            return
        seen.add(p)
        groups: OrderedDict[str, list[str]] = OrderedDict()
        for x in data:
            r = _record(x, root)
            groups.setdefault(r.get("rule") if r else x, []).append(x)
        for files in groups.values():
            walk(files[0], level + 1, len(files))

    walk(path, 0)
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="an output file, e.g. figures/paper_a/figure1_lambda.png")
    ap.add_argument("--depth", type=int, default=3, help="levels of inputs to follow (default 3)")
    ap.add_argument("--root", default=".", help="repository root (default: current directory)")
    args = ap.parse_args(argv)
    if args.depth < 0:
        ap.error("--depth must be >= 0")
    root = Path(args.root)
    if _record(args.path, root) is None:
        print(
            f"no Snakemake record for {args.path!r} under {root}/.snakemake/metadata "
            "(build it first, from this directory)",
            file=sys.stderr,
        )
        return 1
    print("\n".join(explain(args.path, root, args.depth)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
