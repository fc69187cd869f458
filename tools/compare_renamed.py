"""Compare the tables of two finished runs across 0.1.0 -> 0.2.0 (CHANGELOG.md, "Results
unchanged"): ``attnscale_version`` dropped, the renamed columns mapped, the fixed ``spawn_key``
values ``[a, b]`` written ``a-b``; every remaining difference is printed (none expected).

    python tools/compare_renamed.py BEFORE AFTER
"""

import re
import sys
from pathlib import Path

import pandas as pd

A, B = Path(sys.argv[1]), Path(sys.argv[2])
RENAME = {"within_se": "se_within"}
PER_DRAW_SE = {"self_weight_se", "lambda_se", "eta_se", "eta_raw_se"}


def norm(df, rel, old):
    df = df.drop(columns=[c for c in ("attnscale_version",) if c in df.columns])
    if old:
        ren = dict(RENAME)
        if rel.startswith("results/sharpness/d"):
            ren.update({c: c + "_within" for c in PER_DRAW_SE})
        if rel.startswith("results/paper_a/eta/") or rel == "results/paper_a/eta_critical_data.csv":
            ren["eta_se"] = "eta_se_within"
        if rel.startswith("results/regimes/") or rel.startswith("results/finite_d/transition/"):
            ren["spawn_keys"] = "spawn_key"
        df = df.rename(columns={k: v for k, v in ren.items() if k in df.columns})
        if "spawn_key" in df.columns:
            df["spawn_key"] = [
                re.sub(r"^\[(.*)\]$", lambda m: m.group(1).replace(", ", "-"), v)
                for v in df["spawn_key"]
            ]
    return df


bad = ok = 0
renamed = set()
for pa in sorted((A / "results").rglob("*.csv")):
    rel = str(pa.relative_to(A))
    pb = B / rel
    if not pb.exists():
        print("ONLY BEFORE", rel)
        bad += 1
        continue
    a = pd.read_csv(pa, dtype=str, keep_default_na=False)
    b = pd.read_csv(pb, dtype=str, keep_default_na=False)
    if list(a.columns) != list(b.columns):
        renamed.add(rel)
    a, b = norm(a, rel, True), norm(b, rel, False)
    if list(a.columns) != list(b.columns) or not a.equals(b):
        bad += 1
        print(
            "DIFF",
            rel,
            [c for c in a.columns if c not in b.columns],
            [c for c in b.columns if c not in a.columns],
        )
        if list(a.columns) == list(b.columns):
            for c in a.columns:
                if not a[c].equals(b[c]):
                    print("   column", c, a[c].iloc[0], "vs", b[c].iloc[0])
                    break
    else:
        ok += 1
for pb in sorted((B / "results").rglob("*.csv")):
    if not (A / pb.relative_to(B)).exists():
        print("ONLY AFTER", pb.relative_to(B))
        bad += 1
print(f"{ok} CSVs equal after normalising, {bad} not; tables with renamed columns: {len(renamed)}")
for r in sorted(renamed):
    print("  renamed:", r)
