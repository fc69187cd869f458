"""Shared fixtures. The tests run in one process per CPU (pytest-xdist, ``-n auto``); the smoke
workflow, the tiny GPU-script run, the forced rerun and the docs build run once per session, in
the background, in a directory shared by those processes (tests/background.py), and the tests
that need them reuse them (see ``smoke_run``)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import background
import pytest
from background import Job

from attnscale.pipeline.deps import jobs_to_run  # noqa: F401  (re-exported to the tests)

REPO = Path(__file__).resolve().parents[1]
# top-level entries that are outputs or local state, never copied
EXCLUDE = {
    ".venv",
    "results",
    "figures",
    ".snakemake",
    "logs",
    "benchmarks",
    ".git",
    "build",
    "mutants",
    ".pytest_cache",
    ".ruff_cache",
    "report.html",
}
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
#: names on PATH, in order of preference, and how to install it (on any OS: one line each).
SYSTEM_PROGRAMS = {
    "Chromium": (
        ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"),
        "apt-get install -y chromium (Debian, Ubuntu), dnf install chromium (Fedora), "
        "brew install --cask chromium (macOS, then put its binary on PATH as chromium)",
    ),
}


def pytest_addoption(parser):
    parser.addoption(
        "--require-programs",
        action="store_true",
        default=False,
        help="fail, instead of skipping, tests whose system program (Chromium) is missing; "
        "the default in CI (CI=true) and with ATTNSCALE_REQUIRE_PROGRAMS=1",
    )


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
    why = (
        f"{program} is not installed (none of {', '.join(names)} on PATH), so this test "
        f"cannot open the docs in a real browser; install it with: {install}"
    )
    if programs_required(config):
        pytest.fail(why + " (required: CI=true, --require-programs or ATTNSCALE_REQUIRE_PROGRAMS)")
    pytest.skip(why)


#: the BLAS thread limit of the test process, held for the whole session
BLAS_LIMIT = pytest.StashKey[object]()


@pytest.hookimpl(trylast=True)  # after pytest's tmp_path plugin has set up its factory
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
    if _sessions_own(config):  # the workers inherit the directory of the shared background runs
        shared = config._tmp_path_factory.getbasetemp() / "shared"
        shared.mkdir(exist_ok=True)
        os.environ[background.ENV] = str(shared)


def _needs_gpu_run(item) -> bool:
    """The test uses the tiny run of tools/gpu_run.py (:func:`gpu_run_tiny`)."""
    return "gpu_run_tiny" in getattr(item, "fixturenames", ())


#: Module-scoped fixtures too costly to build in both test processes (a Snakemake summary of the
#: smoke DAG, a parse of every rule, a headless-Chromium run): the tests of one module that use
#: one of them run in one process (an ``xdist_group``, with ``--dist loadgroup``)
SHARED_MODULE_FIXTURES = ("summary", "workflow_rules", "rendered", "probed")


def _rank(item) -> int:
    """Where a test goes in the session (see :func:`pytest_collection_modifyitems`)."""
    names = set(getattr(item, "fixturenames", ()))
    if _needs_gpu_run(item):
        return 3
    if names & {"site", "forced_rerun"}:
        return 2
    return 1 if _needs_smoke(item) else 0


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(session, config, items):
    """Tests that need the smoke run go last; after them those that need the runs that start
    when the smoke run ends (the docs build, the forced rerun), and then the one that needs the
    tiny GPU-script run (stable order otherwise), so that the unit tests run while those
    workflows run in the background (see :func:`_background_runs`) and the tests of the smoke
    tree run while the docs build and the forced rerun go on; the tests of a module that share
    one of :data:`SHARED_MODULE_FIXTURES` are grouped into one process."""
    rank = [_rank(i) for i in items]
    items[:] = [i for _, _, i in sorted(zip(rank, range(len(items)), items, strict=True))]
    groups = {}
    for item, r in zip(items, sorted(rank), strict=True):  # r: the rank of the sorted item
        shared = [f for f in SHARED_MODULE_FIXTURES if f in getattr(item, "fixturenames", ())]
        declared = item.get_closest_marker("xdist_group")  # a module's own group
        if declared is not None:
            groups[item.nodeid] = str(
                declared.args[0] if declared.args else declared.kwargs.get("name", "default")
            )
        elif shared:
            groups[item.nodeid] = f"{item.module.__name__}.{shared[0]}"
        elif r == 0 and (item.path.name == "test_backend_jax.py" or "jax" in item.name):
            # one process compiles the JAX kernels (each process compiles what it runs)
            groups[item.nodeid] = "jax"
    for item in items:
        if item.nodeid in groups and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    if hasattr(config, "workerinput") and background.ENV in os.environ:
        _write_groups(groups)


# pytest-xdist 3.8 puts a test in its xdist_group by appending "@group" to the test's node id in
# the worker (``item._nodeid``); pytest 9 computes node ids from another attribute, so the groups
# are silently lost and the tests of one group run in both processes, each building the group's
# module fixture (measured 2026-12-01: the `summary` and `workflow_rules` fixtures built twice, the
# JAX tests split between the processes). So the workers also write the groups to a file of the
# session's shared directory, and the controller's scheduler (:class:`GroupScheduling`) reads it.
GROUPS_FILE = "xdist_groups.json"


def _write_groups(groups: dict) -> None:
    """Write {node id: group} atomically (both workers write the same collection's groups)."""
    import json

    path = background.shared_root() / GROUPS_FILE
    tmp = path.with_name(f".{GROUPS_FILE}.{os.getpid()}")
    tmp.write_text(json.dumps(groups, sort_keys=True))
    tmp.rename(path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` that works with pytest 9: the groups come from the workers' file
    (:func:`_write_groups`; a worker writes it before it reports its collection, and the
    scheduler reads it in ``schedule()``, once every worker has reported); a test in no group
    is its own unit of work, as with pytest-xdist's own loadgroup."""
    if config.getvalue("dist") != "loadgroup":
        return None
    import json

    from xdist.scheduler import LoadGroupScheduling

    class GroupScheduling(LoadGroupScheduling):
        _groups: dict | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                path = background.shared_root() / GROUPS_FILE
                self._groups = json.loads(path.read_text()) if path.is_file() else {}
            group = self._groups.get(nodeid)
            return group if group is not None else super()._split_scope(nodeid)

    return GroupScheduling(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one test process per CPU this process may use (logical CPUs: a 2-vCPU
    machine has two, whatever its physical cores), at most 8."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity else os.cpu_count() or 1
    return max(1, min(8, cpus))


def _sessions_own(config) -> bool:
    """This process controls the session: the pytest-xdist controller, or the one process of a
    run without xdist (not a worker)."""
    return not hasattr(config, "workerinput")


def pytest_sessionfinish(session):
    """Stop the background runs that no test waited for (e.g. after ``-x`` stopped early), once
    every worker is done (tests/background.py)."""
    if _sessions_own(session.config) and background.ENV in os.environ:
        background.stop_unfinished(background.shared_root())
    background.reap_finished()


def gpu_run_tiny_command(out: Path) -> list[str]:
    """``tools/gpu_run.py --tiny`` (docs/gpu.md#gpu-run-script) into ``out``."""
    return [
        sys.executable,
        str(REPO / "tools/gpu_run.py"),
        "--tiny",
        "--out",
        str(out),
        "--budget",
        "600",
        "--cores",
        "2",
    ]


def _smoke_tree(job_dir: Path) -> Path:
    """The tree the smoke run runs in: a fresh copy of the repository, or, with
    ``ATTNSCALE_SMOKE_TREE``, a copy of that finished tree with this checkout's sources (mtimes
    kept: only changed sources rerun)."""
    work = job_dir / "repo"
    reuse = os.environ.get("ATTNSCALE_SMOKE_TREE")
    if not reuse:
        return copy_repo(work)
    shutil.copytree(reuse, work, symlinks=True)
    for name in ("src", "workflow", "tests", "Snakefile", "config.yaml"):
        src, dst = REPO / name, work / name
        if src.is_dir():
            shutil.rmtree(dst)
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*CACHES))
        else:
            shutil.copy2(src, dst)
    return work


def _start_smoke() -> Job:
    job = Job("smoke")
    exe = Path(sys.executable).parent / "snakemake"
    job.start(
        [exe, "--cores", "2", "--verbose", *SMOKE],
        cwd=_smoke_tree,
        env=hermetic_env(job.dir / "repo"),
    )
    return job


@pytest.fixture(scope="session", autouse=True)
def _background_runs(request):
    """Start the smoke workflow, and the tiny GPU-script run, before the first test if a selected
    test needs them (once per session, whichever process comes first: tests/background.py):
    they run while the unit tests use the CPU they leave idle (the unit tests run first, see
    :func:`pytest_collection_modifyitems`); ``smoke_run`` and ``gpu_run_tiny`` wait for them."""
    config, items = request.config, request.session.items
    config.stash[WANTS] = {
        name
        for i in items
        for name in ("forced_rerun", "site")
        if name in getattr(i, "fixturenames", ())
    }
    if any(_needs_smoke(i) for i in items):
        _start_smoke()
    if any(_needs_gpu_run(i) for i in items):
        # at the lowest priority: it fills the cores the unit tests and the smoke run leave idle
        job = Job("gpu_run")
        job.start(gpu_run_tiny_command(job.dir / "out"), cwd=REPO, nice=19)
    yield


#: which runs that need the smoke tree a selected test asks for ({"forced_rerun", "site"})
WANTS = pytest.StashKey[set]()


@pytest.fixture(scope="session")
def gpu_run_tiny():
    """The finished ``tools/gpu_run.py --tiny`` run, started in the background at the start of
    the session (:func:`_background_runs`): ``{"out", "returncode", "log"}``."""
    job = Job("gpu_run")
    job.start(gpu_run_tiny_command(job.dir / "out"), cwd=REPO)  # if it was not started
    done = job.wait(timeout=900)
    return {"out": job.dir / "out", "returncode": done.returncode, "log": done.stdout + done.stderr}


@pytest.fixture(scope="session")
def smoke_run(request):
    """A completed smoke run (``--cores 2 --verbose``: test_scheduler_fix counts the scheduling
    rounds in its log) in a fresh copy of the repository, started in the background before the
    first test (:func:`_background_runs`).

    While developing a workflow test, ``ATTNSCALE_SMOKE_TREE=<finished smoke tree>`` reuses a
    tree made by this fixture (or by ``snakemake --cores 2 --configfile tests/smoke.yaml`` in a
    copy of the same sources): it is copied and brought up to date instead of run from scratch.
    Never set it in CI."""
    job = _start_smoke()  # if it was not started
    done = job.wait(timeout=900)
    if done.returncode != 0:
        raise AssertionError(
            f"smoke run failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-6000:]}"
        )
    work = job.dir / "repo"
    _start_after_smoke(request.config, work)
    return {"dir": work, "proc": done}


# One compute rule per family of random draws (Hutchinson probes over the cached Paper A tokens,
# finite-d, causal and Paper B key draws), each drawing from its job's SeedSequence: forcing them
# and everything downstream with one core (every rule runs with threads: 1, so --cores only changes
# the order and interleaving of jobs) checks determinism across core counts and forced reruns in
# about 20 jobs (tests/test_reliability.py). A whole --forceall of the smoke DAG (80 jobs,
# ~170 CPU-s) would add nothing these do not cover.
FORCED = [
    "paper_a_eta",
    "finite_d_transition_points",
    "causal_lambda",
    "paper_b_phase_column",
    "paper_b_heat_drift",
]


def _start_after_smoke(config, smoke_dir: Path) -> None:
    """Start, in the background, the two long jobs that need the finished smoke tree, if a
    selected test asks for them and no process of the session has: the one-core forced rerun (in
    a copy of the tree; ``forced_rerun`` waits for it) and the docs build with the smoke figures
    in its gallery (test_docs' ``site`` waits for it)."""
    wants = config.stash.get(WANTS, {"forced_rerun", "site"})
    if "site" in wants:
        site = Job("site")
        cmd, env = docs_build_command(site.dir, smoke_dir / "figures")
        site.start(cmd, cwd=REPO, env=env)
    if "forced_rerun" in wants:
        job = Job("forced")
        exe = Path(sys.executable).parent / "snakemake"
        job.start(
            [exe, "--cores", "1", "--forcerun", *FORCED, *SMOKE],
            cwd=lambda d: finished_copy({"dir": smoke_dir}, d / "repo"),
            # without warm jobs (the smoke run has them): its bytes are compared with the
            # smoke run's, so the rerun also shows that warm jobs change no byte
            env=dict(hermetic_env(job.dir / "repo"), ATTNSCALE_WARM_JOBS="0"),
        )


def docs_build_command(out: Path, figures: Path | None) -> tuple[list[str], dict]:
    """``sphinx-build -W`` of docs/ into ``out/html`` (gallery: ``figures``): the command and its
    environment."""
    env = dict(os.environ)
    if figures is not None:
        env["ATTNSCALE_DOCS_FIGURES"] = str(figures)
    cmd = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-q",
        "-b",
        "html",
        "-d",
        str(out / "doctrees"),
        str(REPO / "docs"),
        str(out / "html"),
    ]
    return cmd, env


@pytest.fixture(scope="session")
def smoke_summary(smoke_run) -> str:
    """Snakemake's ``--detailed-summary`` of the finished smoke tree (its stdout: one row per
    output with its rule, inputs and status), made once per session whichever test process asks
    first (tests/background.py): test_deps reads the rules' library inputs from it and
    test_workflow the declared outputs, one parse instead of two."""
    job = Job("smoke_summary")
    exe = Path(sys.executable).parent / "snakemake"
    work = smoke_run["dir"]
    job.start([exe, "--detailed-summary", "--cores", "1", *SMOKE], cwd=work, env=hermetic_env(work))
    done = job.wait(timeout=900)
    if done.returncode != 0:
        raise AssertionError(f"--detailed-summary failed:\n{done.stderr[-6000:]}")
    return done.stdout


@pytest.fixture(scope="session")
def forced_rerun(smoke_run):
    """The finished one-core forced rerun of :data:`FORCED` (started by ``smoke_run``)."""
    job = Job("forced")
    done = job.wait(timeout=2400)
    text = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(f"forced rerun failed ({done.returncode}):\n{text[-8000:]}")
    return {"dir": job.dir / "repo", "output": text}


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
