"""Shared fixtures. The smoke workflow runs once per test session in a temporary copy of the
repository (see ``smoke_run``); workflow tests reuse it."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from attnscale.pipeline.deps import jobs_to_run  # noqa: F401  (re-exported to the tests)

REPO = Path(__file__).resolve().parents[1]
# top-level entries that are outputs or local state, never copied
EXCLUDE = {".venv", "results", "figures", ".snakemake", "logs", "benchmarks", ".git", "build", "mutants",
           ".pytest_cache", ".ruff_cache", "report.html"}  # fmt: skip
CACHES = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def copy_repo(dest: Path) -> Path:
    """Copy the repository (sources only, no outputs) to ``dest``."""

    def ignore(directory, names):
        top = Path(directory) == REPO
        return [
            n for n in names if (top and n in EXCLUDE) or n in CACHES or n.endswith(".egg-info")
        ]

    shutil.copytree(REPO, dest, ignore=ignore)
    (dest / "results").mkdir(exist_ok=True)
    (dest / "figures").mkdir(exist_ok=True)
    return dest


def hermetic_env(workdir: Path) -> dict:
    """Environment for a run in a copy: the copy's own ``src/`` first on the path (the editable
    install would otherwise import the original checkout), a fixed git-commit label."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(workdir) / "src"), *filter(None, [env.get("PYTHONPATH")])]
    )
    env.setdefault("ATTNSCALE_GIT_COMMIT", "test")
    return env


def snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 900):
    """Run Snakemake (from this interpreter's environment) in ``workdir``."""
    exe = Path(sys.executable).parent / "snakemake"
    cmd = [str(exe), *args]
    env = hermetic_env(workdir)
    proc = subprocess.run(
        cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=env
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` keyed by relative path, except ``benchmarks/``
    (timings are the one output that is not deterministic by nature). For runs made on the same
    machine only: on another CPU the last bits differ (docs/pipeline.md#golden-tables-across-cpus)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.relative_to(root).parts[0] != "benchmarks":
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


SMOKE = ("--configfile", "tests/smoke.yaml")


def finished_copy(smoke_run: dict, dest: Path) -> Path:
    """A copy of the finished smoke tree (sources, outputs, logs and Snakemake's metadata), so a
    test can change, interrupt or rerun part of the workflow without running all of it again."""
    shutil.copytree(smoke_run["dir"], dest, symlinks=True)
    return dest


def _needs_smoke(item) -> bool:
    """The test uses the smoke run (directly, or through test_docs' ``site`` fixture)."""
    return "smoke_run" in getattr(item, "fixturenames", ()) or "site" in getattr(
        item, "fixturenames", ()
    )


#: System programs that some tests need and the README's set-up does not install: the program's
#: names on PATH, in order of preference, and the one command that installs it (Debian).
SYSTEM_PROGRAMS = {
    "Chromium": (("chromium", "chromium-browser", "google-chrome"),
                 "apt-get install -y chromium"),
}  # fmt: skip


def pytest_addoption(parser):
    parser.addoption(
        "--require-programs", action="store_true", default=False,
        help="fail, instead of skipping, tests whose system program (Chromium) is missing; "
        "the default in CI (CI=true) and with ATTNSCALE_REQUIRE_PROGRAMS=1",
    )  # fmt: skip


def programs_required(config) -> bool:
    """Is a missing system program a failure? In CI (``CI=true``), with ``--require-programs``
    or ``ATTNSCALE_REQUIRE_PROGRAMS=1``; otherwise the tests that need it are skipped."""
    truthy = {"1", "true", "yes"}
    return (
        config.getoption("--require-programs")
        or os.environ.get("CI", "").lower() in truthy
        or os.environ.get("ATTNSCALE_REQUIRE_PROGRAMS", "").lower() in truthy
    )


def require_program(config, program: str) -> str:
    """The path of a system program of :data:`SYSTEM_PROGRAMS`; if none of its names is on PATH,
    skip the test with a reason that names the program and how to install it, or fail where
    :func:`programs_required` says so (docs/pipeline.md#what-the-tests-check)."""
    names, install = SYSTEM_PROGRAMS[program]
    for name in names:
        exe = shutil.which(name)
        if exe is not None:
            return exe
    why = (f"{program} is not installed (none of {', '.join(names)} on PATH), so this test "
           f"cannot open the docs in a real browser; install it with: {install}")  # fmt: skip
    if programs_required(config):
        pytest.fail(why + " (required: CI=true, --require-programs or ATTNSCALE_REQUIRE_PROGRAMS)")
    pytest.skip(why)


#: the BLAS thread limit of the test process, held for the whole session
BLAS_LIMIT = pytest.StashKey[object]()


def pytest_configure(config):
    """One BLAS thread in the test process: the smoke workflow runs on both cores in the
    background, and OpenBLAS threads that wait for a busy core spin instead of sleeping (a 0.6 s
    unit test took 14 s beside the smoke run with two threads). Tests that need more threads
    ask for them with ``threadpool_limits``.

    threadpoolctl limits only the BLAS libraries already loaded, so NumPy's and SciPy's OpenBLAS
    are loaded first (before this, nothing had loaded them and the limit did nothing)."""
    import numpy  # noqa: F401 - loads NumPy's OpenBLAS
    import scipy.linalg  # noqa: F401 - loads SciPy's own OpenBLAS
    from threadpoolctl import threadpool_info, threadpool_limits

    config.stash[BLAS_LIMIT] = threadpool_limits(limits=1)
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    assert blas and all(i["num_threads"] == 1 for i in blas), blas


def _needs_gpu_run(item) -> bool:
    """The test uses the tiny run of tools/gpu_run.py (:func:`gpu_run_tiny`)."""
    return "gpu_run_tiny" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(session, config, items):
    """Tests that need the smoke run go last, and after them the one that needs the tiny GPU-script
    run (stable order otherwise), so that the unit tests run while those workflows run in the
    background (see :func:`_background_smoke`)."""
    rank = [0 if not (_needs_smoke(i) or _needs_gpu_run(i)) else 2 if _needs_gpu_run(i) else 1
            for i in items]  # fmt: skip
    items[:] = [i for _, _, i in sorted(zip(rank, range(len(items)), items, strict=True))]


#: Background runs of this session, kept in pytest's public per-config stash
WANTS = pytest.StashKey[set]()
SMOKE_PROC = pytest.StashKey[tuple]()
FORCED_PROC = pytest.StashKey[tuple]()
SITE_PROC = pytest.StashKey[tuple]()
GPU_RUN_PROC = pytest.StashKey[tuple]()


def start_gpu_run_tiny(out: Path, *, nice: int = 0):
    """``tools/gpu_run.py --tiny`` (docs/gpu.md#gpu-run-script) into ``out`` in the background,
    in a process group of its own (stopped as a whole), at niceness ``nice``; returns
    ``(out, process, log file)``."""
    log = open(out.parent / "gpu_run.log", "w+")  # noqa: SIM115 - read back by gpu_run_tiny
    cmd = [sys.executable, str(REPO / "tools/gpu_run.py"), "--tiny", "--out", str(out),
           "--budget", "600", "--cores", "2"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=(lambda: os.nice(nice)) if nice else None)  # fmt: skip
    return out, proc, log


@pytest.fixture(scope="session", autouse=True)
def _background_smoke(request, tmp_path_factory):
    """Start the smoke workflow before the first test if a selected test needs it: it runs
    (``--cores 2``) while the unit tests use the CPU it leaves idle (they run first, see
    :func:`pytest_collection_modifyitems`); ``smoke_run`` waits for it. At the end of the session
    any background run that no test waited for (e.g. after ``-x`` stopped early) is stopped."""
    config, items = request.config, request.session.items
    config.stash[WANTS] = {
        name for i in items for name in ("forced_rerun", "site")
        if name in getattr(i, "fixturenames", ())
    }  # fmt: skip
    if not os.environ.get("ATTNSCALE_SMOKE_TREE") and any(_needs_smoke(i) for i in items):
        work = copy_repo(tmp_path_factory.mktemp("smoke") / "repo")
        out = open(work.parent / "smoke.out", "w+")  # noqa: SIM115 - read back by smoke_run
        err = open(work.parent / "smoke.err", "w+")  # noqa: SIM115
        exe = Path(sys.executable).parent / "snakemake"
        proc = subprocess.Popen([str(exe), "--cores", "2", "--verbose", *SMOKE], cwd=work,
                                stdout=out, stderr=err, env=hermetic_env(work), text=True)  # fmt: skip
        config.stash[SMOKE_PROC] = (work, proc, out, err)
    if any(_needs_gpu_run(i) for i in items):
        # at the lowest priority: it fills the cores the unit tests and the smoke run leave idle
        config.stash[GPU_RUN_PROC] = start_gpu_run_tiny(tmp_path_factory.mktemp("gpu_run") / "out",
                                                        nice=19)  # fmt: skip
    yield
    for key in (SMOKE_PROC, FORCED_PROC, SITE_PROC, GPU_RUN_PROC):
        started = config.stash.get(key, ())
        for proc in (p for p in started if isinstance(p, subprocess.Popen)):
            if proc.poll() is None:
                if key == GPU_RUN_PROC:
                    os.killpg(proc.pid, signal.SIGKILL)
                else:
                    proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def gpu_run_tiny(request, tmp_path_factory):
    """The finished ``tools/gpu_run.py --tiny`` run, started in the background at the start of
    the session (:func:`_background_smoke`; here if it was not): ``{"out", "returncode", "log"}``."""
    started = request.config.stash.get(GPU_RUN_PROC, None)
    if started is None:
        started = start_gpu_run_tiny(tmp_path_factory.mktemp("gpu_run") / "out")
    out, proc, log = started
    proc.wait(timeout=900)
    log.seek(0)
    return {"out": out, "returncode": proc.returncode, "log": log.read()}


@pytest.fixture(scope="session")
def smoke_run(request, tmp_path_factory):
    """A completed smoke run (``--cores 2 --verbose``: test_scheduler_fix counts the scheduling
    rounds in its log) in a fresh copy of the repository, started in the background right after
    collection (:func:`pytest_collection_finish`).

    While developing a workflow test, ``ATTNSCALE_SMOKE_TREE=<finished smoke tree>`` reuses a
    tree made by this fixture (or by ``snakemake --cores 2 --configfile tests/smoke.yaml`` in a
    copy of the same sources): it is copied and brought up to date instead of run from scratch.
    Never set it in CI."""
    started = request.config.stash.get(SMOKE_PROC, None)
    if started is not None:
        work, proc, out, err = started
        proc.wait(timeout=900)
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())
        if result.returncode != 0:
            raise AssertionError(
                f"smoke run failed ({result.returncode}):\n{result.stdout[-4000:]}\n"
                f"{result.stderr[-6000:]}"
            )
        _start_after_smoke(request.config, tmp_path_factory, work)
        return {"dir": work, "proc": result}
    reuse = os.environ.get("ATTNSCALE_SMOKE_TREE")
    if reuse:
        work = tmp_path_factory.mktemp("smoke") / "repo"
        shutil.copytree(reuse, work, symlinks=True)
        for name in ("src", "workflow", "tests", "Snakefile", "config.yaml"):
            src, dst = REPO / name, work / name
            if src.is_dir():
                shutil.rmtree(dst)
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*CACHES))
            else:
                shutil.copy2(src, dst)  # keeps mtimes: only changed sources rerun
    else:
        work = copy_repo(tmp_path_factory.mktemp("smoke") / "repo")
    proc = snakemake(work, "--cores", "2", "--verbose", *SMOKE)
    _start_after_smoke(request.config, tmp_path_factory, work)
    return {"dir": work, "proc": proc}


# One compute rule per family of random draws (Hutchinson probes over the cached Paper A tokens,
# finite-d, causal and Paper B key draws), each drawing from its job's SeedSequence: forcing them
# and everything downstream with one core (every rule runs with threads: 1, so --cores only changes
# the order and interleaving of jobs) checks determinism across core counts and forced reruns in
# about 20 jobs (tests/test_reliability.py). A whole --forceall of the smoke DAG (80 jobs,
# ~170 CPU-s) would add nothing these do not cover.
FORCED = ["paper_a_eta", "finite_d_transition_points", "causal_lambda", "paper_b_phase_column",
          "paper_b_heat_drift"]  # fmt: skip


def _start_after_smoke(config, tmp, smoke_dir: Path) -> None:
    """Start, in the background, the two long jobs that need the finished smoke tree, if a
    selected test asks for them: the one-core forced rerun (in a copy of the tree;
    ``forced_rerun`` waits for it) and the docs build with the smoke figures in its gallery
    (test_docs' ``site`` waits for it). They use the second core while the other
    smoke-dependent tests run in this process."""
    wants = config.stash.get(WANTS, {"forced_rerun", "site"})
    if "site" in wants:
        config.stash[SITE_PROC] = start_docs_build(tmp.mktemp("site"), smoke_dir / "figures")
    if "forced_rerun" not in wants:
        return
    work = finished_copy({"dir": smoke_dir}, tmp.mktemp("forced") / "repo")
    out = open(work.parent / "forced.out", "w+")  # noqa: SIM115 - read back by forced_rerun
    exe = Path(sys.executable).parent / "snakemake"
    proc = subprocess.Popen([str(exe), "--cores", "1", "--forcerun", *FORCED, *SMOKE], cwd=work,
                            stdout=out, stderr=subprocess.STDOUT, env=hermetic_env(work),
                            text=True)  # fmt: skip
    config.stash[FORCED_PROC] = (work, proc, out)


def start_docs_build(out: Path, figures: Path | None):
    """``sphinx-build -W`` of docs/ into ``out/html`` in the background (gallery: ``figures``);
    returns ``(out, figures, process, log file)``."""
    env = dict(os.environ)
    if figures is not None:
        env["ATTNSCALE_DOCS_FIGURES"] = str(figures)
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-d", str(out / "doctrees"), str(REPO / "docs"), str(out / "html")]  # fmt: skip
    log = open(out / "sphinx.log", "w+")  # noqa: SIM115 - read back by test_docs' site
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    return out, figures, proc, log


@pytest.fixture(scope="session")
def forced_rerun(request, smoke_run):
    """The finished one-core forced rerun of :data:`FORCED` (started by ``smoke_run``)."""
    work, proc, out = request.config.stash[FORCED_PROC]
    proc.wait(timeout=2400)
    out.seek(0)
    text = out.read()
    out.close()
    if proc.returncode != 0:
        raise AssertionError(f"forced rerun failed ({proc.returncode}):\n{text[-8000:]}")
    return {"dir": work, "output": text}


def resolve_dotted(dotted: str):
    """The object an ``attnscale.x.y`` name refers to (longest importable module prefix, then
    attributes), or ``None``; old flat paths resolve through their aliases without warnings."""
    import importlib
    import warnings

    parts = dotted.split(".")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr, None)
            return obj
    return None
