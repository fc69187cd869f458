#!/usr/bin/env bash
# Mutation testing of the numerical and experiment modules with mutmut 3 (NOT run in CI).
# Settings: [tool.mutmut] in pyproject.toml (modules mutated, fast unit-test selection; mutmut
# runs, for each mutant, only the tests that reach the mutated function, stopping at the first
# failure). Single-threaded.
#
#   bash tools/mutation.sh [WORKDIR] [EVERY]
#
# WORKDIR: where the repository is copied (default: a fresh temporary directory); the copy is
# mutated, never this checkout. EVERY: test every EVERY-th mutant (by mutant number; default 3, a
# systematic sample: ~600 mutants, ~15 min on the 2-core machine; 1 = all, ~45 min).
# Prints the counts and the score; survivors are listed in WORKDIR/survivors.txt.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -x "$REPO/.venv/bin/mutmut" ]; then export PATH="$REPO/.venv/bin:$PATH"; fi
WORK="${1:-$(mktemp -d)}"
EVERY="${2:-3}"
mkdir -p "$WORK"
rm -rf "$WORK/repo"
mkdir "$WORK/repo"
tar -C "$REPO" --exclude=./.venv --exclude=./.git --exclude=./results --exclude=./figures \
    --exclude=./logs --exclude=./benchmarks --exclude=./.snakemake --exclude=./mutants \
    --exclude='__pycache__' --exclude='*.egg-info' --exclude=./.pytest_cache \
    --exclude=./.ruff_cache -cf - . | tar -C "$WORK/repo" -xf -
cd "$WORK/repo"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 MPLBACKEND=Agg
export ATTNSCALE_GIT_COMMIT=mutation
start=$(date +%s)
# generate the mutants (a filter that matches nothing stops mutmut right after generating)
mutmut run --max-children 1 'no-such-mutant' > "$WORK/generate.log" 2>&1 || true
python - "$EVERY" > "$WORK/names.txt" <<'PY'
import json, pathlib, re, sys
every = int(sys.argv[1])
for meta in sorted(pathlib.Path("mutants").rglob("*.py.meta")):
    for name in json.loads(meta.read_text()).get("exit_code_by_key", {}):
        if int(re.search(r"__mutmut_(\d+)$", name).group(1)) % every == 0:
            print(name)
PY
echo "testing $(wc -l < "$WORK/names.txt") mutants (every ${EVERY}th)"
xargs -a "$WORK/names.txt" mutmut run --max-children 1 > "$WORK/run.log" 2>&1 || true
echo "wall time: $(( $(date +%s) - start )) s"
mutmut results --all true > "$WORK/all.txt" 2>&1 || true
python - "$WORK/all.txt" "$WORK/names.txt" "$WORK/survivors.txt" <<'PY'
import collections, sys
names = set(open(sys.argv[2]).read().split())
status = {}
for line in open(sys.argv[1]):
    if "__mutmut_" in line:
        name, st = (x.strip() for x in line.rsplit(":", 1))
        if name in names:
            status[name] = st
counts = collections.Counter(status.values())
killed = counts["killed"] + counts["timeout"]
checked = sum(v for k, v in counts.items() if k not in ("skipped", "not checked"))
print(dict(counts))
print(f"mutation score: {killed}/{checked} = {killed / max(checked, 1):.1%} "
      "(killed or timed out, over every checked mutant; 'no tests' counts as survived)")
with open(sys.argv[3], "w") as fh:
    for name, st in sorted(status.items()):
        if st not in ("killed", "timeout"):
            fh.write(f"{name}: {st}\n")
PY
