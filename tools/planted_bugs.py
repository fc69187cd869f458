"""Plant known bugs one at a time in a temporary copy of the repository and check that the test
suite catches each (not run in CI; about 1-2 min single-threaded).

    python tools/planted_bugs.py            # all bugs
    python tools/planted_bugs.py a1 b       # some of them

Each bug is a literal text replacement in one library file (it must match exactly once, so a
refactor that moves the code makes this script fail loudly rather than silently pass) and the
tests expected to kill it. A bug counts as caught when those tests fail in the copy; the copy's
``src/`` is put first on ``PYTHONPATH`` so the editable install of this checkout is not used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = "src/attnscale/"
EXP = SRC + "experiments/"

# id: (description, file, old text, new text, tests that must fail)
BUGS = {
    "a1": (
        "weight profile: the d = 3 limit exp(-x) used for every d (experiment table)",
        EXP + "paper_b_laws.py",
        '"ratio_limit": st.profile_limit(x, d)',
        '"ratio_limit": st.profile_limit(x, 3)',
        ["tests/test_refs_paper_b.py"],
    ),
    "a2": (
        "weight profile: the d = 3 limit exp(-x) used for every d (library)",
        SRC + "sphere_theory.py",
        "return np.exp(-(x ** alpha_exponent(d)))",
        "return np.exp(-(x ** alpha_exponent(3)))",
        ["tests/test_refs_paper_b.py"],
    ),
    "a3": (
        "cumulative mass: the d = 3 limit 1 - e^-x used for every d",
        EXP + "paper_b_laws.py",
        '"mass_limit": st.cumulative_mass_limit(x, d)',
        '"mass_limit": st.cumulative_mass_limit(x, 3)',
        ["tests/test_refs_paper_b.py"],
    ),
    "b": (
        "Ministral-3: position off by one (floor(n / 16384) instead of floor((n - 1) / 16384))",
        SRC + "scaling_rules.py",
        "np.floor((_n(n) - 1.0) / 16384.0)",
        "np.floor(_n(n) / 16384.0)",
        ["tests/test_refs_rules.py"],
    ),
    "c": (
        "Llama 4: position off by one the other way (floor((n - 1) / 8192))",
        SRC + "scaling_rules.py",
        "np.floor(_n(n) / 8192.0)",
        "np.floor((_n(n) - 1.0) / 8192.0)",
        ["tests/test_refs_rules.py"],
    ),
    "d": (
        "phase diagram: critical lines at gamma n instead of gamma n^alpha",
        EXP + "paper_b_phase.py",
        "line_gammas * n**alpha",
        "line_gammas * n",
        ["tests/test_refs_paper_b.py"],
    ),
    "e": (
        "critical laws: nearest key scaled by n instead of n^alpha",
        EXP + "paper_b_laws.py",
        "T.min(axis=1) * n**alpha",
        "T.min(axis=1) * n",
        ["tests/test_refs_paper_b.py"],
    ),
    "f": (
        "Poisson limit: the truncated tail's mean contribution dropped",
        SRC + "poisson_limit.py",
        "1.0 / (1.0 + s_pts + tail)",
        "1.0 / (1.0 + s_pts)",
        ["tests/test_refs_paper_b.py"],
    ),
    "g": (
        "heat drift: the d = 3 noise law with 4 pi instead of 8 pi in the context planner",
        EXP + "paper_b_drift.py",
        "np.sqrt(8 * np.pi * n * rho_q)",
        "np.sqrt(4 * np.pi * n * rho_q)",
        ["tests/test_refs_paper_b.py"],
    ),
    "h": (
        "vector fields: north unit vector with the wrong sign of its z component",
        EXP + "paper_b_fields.py",
        "-np.sin(lat) * np.sin(lon), np.cos(lat)",
        "-np.sin(lat) * np.sin(lon), -np.cos(lat)",
        ["tests/test_refs_paper_b.py"],
    ),
    "i": (
        "standard error over draws with ddof = 0 (the one mean/SE: theorem table, findings)",
        SRC + "core/stats.py",
        "v.std(axis=axis, ddof=1)",
        "v.std(axis=axis, ddof=0)",
        ["tests/test_refs_paper_a.py"],
    ),
    "j": (
        "Paper A: critical row at the nominal rho instead of the realised rho_hat",
        EXP + "paper_a.py",
        "gc_hat = theory.gamma_c(rho_hat) if valid else np.nan",
        'gc_hat = theory.gamma_c(tok["rho"]) if valid else np.nan',
        ["tests/test_refs_paper_a.py"],
    ),
    "k": (
        "Paper A: eta plateau with d instead of d - 1",
        EXP + "paper_a_eta.py",
        "return ((d - 1) * (w2 + 2.0 * alpha * w1 + alpha**2) + alpha**2) / d",
        "return (d * (w2 + 2.0 * alpha * w1 + alpha**2) + alpha**2) / d",
        ["tests/test_refs_paper_a.py"],
    ),
    "l": (
        "Paper A theorem rows: self-weight as the mean of all weights (1/n)",
        EXP + "paper_a_theorem.py",
        "self_w = float(np.mean(np.diag(A)))",
        "self_w = float(np.mean(A))",
        ["tests/test_refs_paper_a.py"],
    ),
    "m": (
        "weight profile: x = (k - 1) / m_n instead of k / m_n",
        EXP + "paper_b_laws.py",
        "    x = k / m\n",
        "    x = (k - 1) / m\n",
        ["tests/test_refs_paper_b.py"],
    ),
}


def copy_sources(dest: Path) -> None:
    skip = {".venv", ".git", "results", "figures", "logs", "benchmarks", ".snakemake", "mutants"}

    def ignore(directory, names):
        top = Path(directory) == REPO
        return [n for n in names if (top and n in skip) or n in {"__pycache__", ".pytest_cache"}]

    shutil.copytree(REPO, dest, ignore=ignore)


def plant(bug_id: str, work: Path) -> tuple[bool, str]:
    desc, rel, old, new, tests = BUGS[bug_id]
    path = work / rel
    text = path.read_text()
    if text.count(old) != 1:
        return False, f"{bug_id}: the text to replace occurs {text.count(old)} times in {rel}"
    path.write_text(text.replace(old, new))
    env = dict(
        os.environ,
        PYTHONPATH=str(work / "src"),
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        ATTNSCALE_GIT_COMMIT="planted",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    path.write_text(text)
    failed = [ln for ln in proc.stdout.splitlines() if ln.startswith("FAILED")]
    return proc.returncode == 1, (failed[0] if failed else proc.stdout.strip().splitlines()[-1])


def main(ids: list[str]) -> int:
    ids = ids or list(BUGS)
    missed = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "repo"
        copy_sources(work)
        for bug_id in ids:
            caught, detail = plant(bug_id, work)
            missed += not caught
            print(
                f"{bug_id:3s} {'caught' if caught else 'MISSED'}  {BUGS[bug_id][0]}\n    {detail}"
            )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
