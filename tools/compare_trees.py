"""Are two finished runs the same? Hashes of every file under ``results/`` and ``figures/`` of two
trees, file by file, for a refactoring that must not change a single number
(docs/pipeline.md#golden-tables-across-cpus: on one machine, equal code gives equal bytes).

    python tools/compare_trees.py BEFORE AFTER [--map OLD=NEW ...] [--list]

``BEFORE`` and ``AFTER`` are finished runs (repository roots, or copies of them) made on the same
machine with the same ``ATTNSCALE_GIT_COMMIT`` (every table records the commit it came from;
``ATTNSCALE_GIT_COMMIT=<sha of BEFORE> snakemake ...`` gives the AFTER run the same label).
``--map old/path=new/path`` pairs a file that a change renamed. For a change that adds an
observable (CHANGELOG.md, issue 42), ``--added-columns`` compares a CSV of AFTER that has every
column of BEFORE (and more) on BEFORE's columns, and ``--drop-rows COL=VALUE`` first drops AFTER's
rows with that value (the added observable's rows); such a file is reported ``ADDED ONLY``.
Files equal byte for byte are
counted; a CSV that differs only in its ``params_hash`` column (a rule's params were renamed or
added, the values used are the same) is reported as such, with the columns compared; anything else
is listed with the first difference. Exit status 1 if any file differs in its numbers, or if a
file exists on one side only (and is not mapped).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import pandas as pd

#: provenance columns that name how a table was made, not what it holds
PROVENANCE = ("params_hash",)


def sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files(root: Path) -> dict[str, Path]:
    """Every file under ``root/results`` and ``root/figures`` (benchmark timings excepted), keyed
    by its path relative to ``root``."""
    out = {}
    for top in ("results", "figures"):
        for p in sorted((root / top).rglob("*")):
            rel = p.relative_to(root)
            if p.is_file() and "benchmarks" not in rel.parts:
                out[str(rel)] = p
    return out


def csv_difference(a: Path, b: Path, added: bool = False, drop: dict | None = None) -> str | None:
    """``None`` if two CSVs hold the same columns and values once the provenance columns are
    dropped, else a one-line description of the first difference. ``added``: compare on the
    columns of ``a`` alone where ``b`` has them all; ``drop``: ``{column: value}`` rows of ``b``
    dropped first."""
    x, y = pd.read_csv(a, dtype=str), pd.read_csv(b, dtype=str)
    for col, val in (drop or {}).items():
        if col in y.columns and col in x.columns:
            y = y[y[col] != val].reset_index(drop=True)
    if added and set(x.columns) <= set(y.columns):
        y = y[list(x.columns)]
    if list(x.columns) != list(y.columns):
        return f"columns differ: {list(x.columns)} vs {list(y.columns)}"
    if x.shape != y.shape:
        return f"shape {x.shape} vs {y.shape}"
    keep = [c for c in x.columns if c not in PROVENANCE]
    ne = (x[keep].fillna("") != y[keep].fillna("")).to_numpy()
    if ne.any():
        r, c = (int(v[0]) for v in ne.nonzero())
        return f"row {r} column {keep[c]!r}: {x[keep].iat[r, c]} vs {y[keep].iat[r, c]}"
    return None


def compare(
    before: Path, after: Path, mapping: dict[str, str], added: bool = False, drop=None
) -> tuple[list[str], int]:
    """Lines of the report and the number of files that differ in content."""
    fa, fb = files(before), files(after)
    pairs = {k: mapping.get(k, k) for k in fa}
    lines, equal, provenance_only, bad = [], 0, 0, 0
    for old, new in pairs.items():
        if new not in fb:
            lines.append(f"ONLY BEFORE  {old}")
            bad += 1
            continue
        ha, hb = sha256(fa[old]), sha256(fb[new])
        if ha == hb:
            equal += 1
            continue
        why = csv_difference(fa[old], fb[new]) if old.endswith(".csv") else "bytes differ"
        if why is not None and old.endswith(".csv") and (added or drop):
            if csv_difference(fa[old], fb[new], added, drop) is None:
                lines.append(f"ADDED ONLY   {old}  (equal on BEFORE's rows and columns)")
                continue
        if why is None:
            provenance_only += 1
            lines.append(
                f"PARAMS_HASH  {old}  (values equal; only {', '.join(PROVENANCE)} differs)"
            )
        else:
            bad += 1
            lines.append(f"DIFFERS      {old}: {why}")
    for new in sorted(set(fb) - set(pairs.values())):
        lines.append(f"ONLY AFTER   {new}")
        bad += 1
    lines.append(
        f"{equal} of {len(fa)} files byte-identical, {provenance_only} equal but for provenance, "
        f"{bad} different or unpaired"
    )
    return lines, bad


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="a file renamed by the change (path relative to the tree)",
    )
    parser.add_argument(
        "--list", action="store_true", help="print the sha256 of every file of AFTER"
    )
    parser.add_argument(
        "--added-columns", action="store_true", help="compare CSVs on BEFORE's columns"
    )
    parser.add_argument(
        "--drop-rows",
        action="append",
        default=[],
        metavar="COL=VALUE",
        help="drop AFTER's rows with this value before comparing CSVs",
    )
    args = parser.parse_args(argv)
    mapping = dict(m.split("=", 1) for m in args.map)
    drop = dict(m.split("=", 1) for m in args.drop_rows)
    lines, bad = compare(args.before, args.after, mapping, args.added_columns, drop)
    if args.list:
        for rel, p in files(args.after).items():
            print(f"{sha256(p)}  {rel}")
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
