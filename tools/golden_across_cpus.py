"""Compare finished smoke trees with the golden tables, column by column, with the tolerances of
``tests/test_workflow.py::test_golden_tables`` (the same function: ``tests/golden_compare.py``;
docs/pipeline.md#golden-tables-across-cpus).

    python tools/golden_across_cpus.py TREE [TREE ...]       # compare finished smoke trees
    python tools/golden_across_cpus.py --run DEST            # make a smoke run in DEST first
    python tools/golden_across_cpus.py A B --pair            # also: how tree A differs from B

``TREE`` is a finished smoke run of the current sources (``--run DEST`` makes one: a copy of the
repository in the new directory DEST, ``snakemake --cores 2 --configfile tests/smoke.yaml``, a
few minutes on two cores). To try another BLAS kernel family on the same CPU, set it for the run,
e.g. ``OPENBLAS_CORETYPE=Haswell``; ``NPY_DISABLE_CPU_FEATURES`` does the same for numpy's own
SIMD loops. This script prints the CPU and the kernels that its own process loads, so run it in
the environment of the run.

For every file and numeric column it prints the kind of column, the largest relative difference
from the golden table and the largest ratio of the observed difference to the allowed one
(``observed/allowed``; the test fails above 1). The exit status is 1 if any column fails.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pandas as pd  # noqa: E402

from conftest import SMOKE, copy_repo, snakemake, tree_hashes  # noqa: E402
from golden_compare import compare_table, compare_tree, golden_files  # noqa: E402

FLAGS = ("avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl")


def machine() -> str:
    """CPU model, the AVX flags, OpenBLAS's kernel family and numpy's SIMD extensions."""
    import numpy as np
    import scipy.linalg  # noqa: F401 - loads scipy's OpenBLAS too
    from threadpoolctl import threadpool_info

    model, flags = platform.processor() or "?", set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name") and model in ("?", ""):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    blas = sorted(
        {
            f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        }
    )
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    simd = [k for k in __cpu_dispatch__ if __cpu_features__.get(k)]  # as numpy.show_runtime()
    env = {
        k: os.environ[k]
        for k in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")
        if k in os.environ
    }
    return (
        f"CPU: {model}; flags: {' '.join(f for f in FLAGS if f in flags)}\n"
        f"BLAS: {'; '.join(blas)}\nnumpy {np.__version__} SIMD dispatch: {' '.join(simd)}\n"
        f"environment: {env or 'no kernel overrides'}"
    )


def report(results, show_all: bool) -> float:
    """Print one line per column (changed ones only unless ``show_all``); return the worst
    observed/allowed ratio."""
    print(f"{'file':45s} {'column':28s} {'kind':12s} {'max rel diff':>12s} {'obs/allowed':>11s}")
    for r in results:
        if show_all or r.ratio > 0 or not r.ok:
            flag = "" if r.ok else "  FAIL rows " + str(r.rows[:10])
            print(
                f"{r.file.removeprefix('results/'):45s} {r.column:28s} {r.kind:12s} "
                f"{r.rel:12.3g} {r.ratio:11.3g}{flag} {r.note}"
            )
    worst: dict[str, tuple[float, str]] = {}
    for r in results:
        if r.ratio >= worst.get(r.kind, (-1.0, ""))[0]:
            worst[r.kind] = (r.ratio, f"{r.file.removeprefix('results/')}:{r.column}")
    print("worst observed/allowed by kind:")
    for kind, (ratio, where) in sorted(worst.items(), key=lambda kv: -kv[1][0]):
        print(f"  {kind:12s} {ratio:10.3g}  {where}")
    return max((r.ratio for r in results), default=0.0)


def pair(a: Path, b: Path) -> None:
    """How two finished smoke trees differ: files under results/ and figures/ with different
    bytes, and the largest relative difference per golden column."""
    for top in ("results", "figures"):
        ha, hb = tree_hashes(a / top), tree_hashes(b / top)
        diff = sorted(k for k in ha.keys() | hb.keys() if ha.get(k) != hb.get(k))
        print(f"{top}/: {len(diff)} of {len(ha)} files differ")
        for k in diff:
            print(f"  {top}/{k}")
    rows = []
    for rel in golden_files():
        for r in compare_table(pd.read_csv(a / rel), pd.read_csv(b / rel), rel):
            if r.rel > 0:
                rows.append(r)
    print(f"golden columns that differ between {a.name} and {b.name}: {len(rows)}")
    for r in sorted(rows, key=lambda r: -r.rel):
        print(f"  {r.file.removeprefix('results/'):45s} {r.column:28s} max rel diff {r.rel:.3g}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path, help="finished smoke trees")
    parser.add_argument("--run", type=Path, help="make a smoke run in this new directory first")
    parser.add_argument("--all", action="store_true", help="list unchanged columns too")
    parser.add_argument("--pair", action="store_true", help="compare the first two trees too")
    args = parser.parse_args()
    print(machine())
    trees = list(args.trees)
    if args.run is not None:
        t0 = time.monotonic()
        work = copy_repo(args.run)
        snakemake(work, "--cores", "2", *SMOKE, timeout=3600)
        print(f"smoke run in {work}: {time.monotonic() - t0:.0f} s")
        trees.insert(0, work)
    worst = 0.0
    for tree in trees:
        print(f"\n== {tree} against tests/golden")
        worst = max(worst, report(compare_tree(tree), args.all))
    if args.pair and len(trees) >= 2:
        print(f"\n== {trees[0]} against {trees[1]}")
        pair(trees[0], trees[1])
    return 1 if worst > 1.0 else 0


if __name__ == "__main__":
    sys.exit(main())
