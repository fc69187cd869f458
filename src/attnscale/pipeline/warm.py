"""Warm jobs: one process per local run imports the heavy libraries once and forks a child for
each job (docs/pipeline.md#warm-jobs).

A job of this workflow is a short Python script (workflow/scripts/entry.py) that spends one to
three CPU-seconds importing numpy, pandas, SciPy, matplotlib and JAX before it computes anything
(measured 2026-12-03 on the 2-core machine, docs/performance.md). In a local run on Linux the
workflow starts this module's server before the first job (:func:`start`, from ``onstart``); each
job's script then hands itself to the server (:func:`delegate`), which forks a child that has
those libraries imported already and runs the same script there, with the job's working
directory, environment, arguments and standard streams. The job's own process waits and exits
with the child's status, so Snakemake sees the same job. The child runs the job's code from the
workflow's ``src/`` (the server imports only third-party libraries), and every output is
byte-identical to a run without the server (the forced rerun of tests/test_reliability.py runs
without it and compares its bytes with the smoke run's; the server itself: tests/test_warm.py).

Where it is not used (:func:`wanted`), each job runs in its own process as before: another
executor (Slurm), ``--sdm conda`` or a container, off Linux (fork after importing these libraries
is not safe on macOS), ``ATTNSCALE_WARM_JOBS=0``, or a run of fewer than :data:`MIN_JOBS` jobs.
If the server cannot be reached, a job runs in its own process. A Snakemake benchmark file then
measures the waiting process: its wall time ``s`` is the job's, its CPU and memory columns are not.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["ENV", "MIN_JOBS", "OFF_ENV", "PRELOAD", "delegate", "serve", "start", "stop", "wanted"]

#: Environment variable that names the server's socket (set by :func:`start` for the jobs).
ENV = "ATTNSCALE_WARM"
#: ``ATTNSCALE_WARM_JOBS=0`` runs every job in its own process.
OFF_ENV = "ATTNSCALE_WARM_JOBS"
#: The libraries the server imports before it forks (third-party only: the jobs import the
#: workflow's own ``attnscale`` themselves).
PRELOAD = (
    "numpy",
    "pandas",
    "scipy.special",
    "scipy.stats",
    "scipy.optimize",
    "scipy.integrate",
    "matplotlib.pyplot",
    "seaborn",
    "threadpoolctl",
    "jax.numpy",
    "optax",
    "snakemake.script",
)
_HEADER = struct.Struct("!I")
_SERVER = {}
_WAKE = {}  # the server's wake-up pipe: read and write ends


#: Fewest jobs for which a run starts the server: its imports cost about six CPU-seconds once
#: and save one to three a job [choice; docs/pipeline.md#warm-jobs].
MIN_JOBS = 8


def wanted(
    executor: str | None,
    deployment=(),
    environ=os.environ,
    platform=sys.platform,
    jobs: int | None = None,
) -> str:
    """Why a run does not use warm jobs, or ``""`` when it does.

    Parameters
    ----------
    executor : str or None
        Snakemake's executor plugin name (``None`` or ``"local"`` for a local run).
    deployment : collection of str
        The software deployment methods of the run (``conda``, ``apptainer``), lower case.
    environ : mapping
        The environment (:data:`OFF_ENV` set to ``0`` turns warm jobs off).
    platform : str
        ``sys.platform``; warm jobs need ``linux``.
    jobs : int, optional
        The number of jobs the run will run; under :data:`MIN_JOBS` the server would cost more
        than it saves.
    """
    if environ.get(OFF_ENV, "1") == "0":
        return f"{OFF_ENV}=0"
    if executor not in (None, "local"):
        return f"executor {executor}"
    if deployment:
        return f"software deployment {', '.join(sorted(deployment))}"
    if platform != "linux":
        return f"platform {platform}"
    if jobs is not None and jobs < MIN_JOBS:
        return f"{jobs} jobs; the server pays off from {MIN_JOBS}"
    return ""


def start(preload=PRELOAD, python: str = sys.executable) -> str:
    """Start the server for this process's jobs and export its socket (:data:`ENV`); returns the
    socket's path. The server imports the modules ``preload`` and stops with :func:`stop`, or by
    itself when this process ends."""
    folder = tempfile.mkdtemp(prefix="attnscale-warm-")
    path = os.path.join(folder, "s")
    here = str(Path(__file__).resolve())
    proc = subprocess.Popen(
        [python, here, path, str(os.getpid()), ",".join(preload)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # Ctrl-C goes to the jobs, not to the server
    )
    _SERVER.update(proc=proc, folder=folder)
    for _ in range(400):  # until it listens (before it imports): jobs then wait for it
        if os.path.exists(path) or proc.poll() is not None:
            break
        time.sleep(0.025)
    os.environ[ENV] = path
    return path


def stop() -> None:
    """Stop the server started by :func:`start` (nothing if none)."""
    proc = _SERVER.pop("proc", None)
    os.environ.pop(ENV, None)
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    folder = _SERVER.pop("folder", None)
    if folder is not None:  # the socket is gone if the server removed it
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(folder, "s"))
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def delegate(script: str) -> int | None:
    """Run this job's ``script`` in a child of the server; its exit status, or ``None`` when
    there is no server to reach (the caller then runs the job itself)."""
    path = os.environ.get(ENV)
    if not path:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    env = dict(os.environ)
    env.pop(ENV)  # the child runs the job itself
    request = json.dumps(
        {"script": os.path.abspath(script), "cwd": os.getcwd(), "env": env, "argv": sys.argv}
    ).encode()
    with conn:
        socket.send_fds(conn, [_HEADER.pack(len(request))], [0, 1, 2])
        conn.sendall(request)
        reply = _recv_exact(conn, _HEADER.size)
    if reply is None:
        print("attnscale warm jobs: the server stopped during this job", file=sys.stderr)
        return 1
    return _HEADER.unpack(reply)[0]


def serve(path: str, owner: int, preload=PRELOAD) -> None:
    """The server: listen on ``path``, import the modules ``preload``, then fork one child per
    request until stopped (SIGTERM) or until the process ``owner`` that started it has ended."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    listener.listen(64)  # jobs that connect while the libraries load wait in the backlog
    os.rename(path + ".new", path)  # the path appears when it accepts connections
    _preload(preload)
    running = {}  # child pid -> connection of the job that waits for it
    signal.signal(signal.SIGTERM, lambda *_: _exit_server(listener, path, running))
    # an ended child wakes the loop at once (SIGCHLD writes to this pipe), not at its next tick
    wake, _WAKE["w"] = os.pipe()
    for fd in (wake, _WAKE["w"]):
        os.set_blocking(fd, False)
    _WAKE["r"] = wake
    signal.set_wakeup_fd(_WAKE["w"])
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while os.getppid() == owner:
        conns = {c.fileno(): (pid, c) for pid, c in running.items()}
        ready, _, _ = select.select([listener, wake, *[c for _, c in conns.values()]], [], [], 1)
        for sock in ready:
            if sock == wake:
                with contextlib.suppress(OSError):
                    os.read(wake, 4096)
            elif sock is listener:
                conn, _ = listener.accept()
                pid = _fork_job(conn, listener, running)
                if pid is not None:
                    running[pid] = conn
            else:  # a waiting job's process ended (killed): end its child
                pid, conn = conns[sock.fileno()]
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
        _reap(running)
    _exit_server(listener, path, running)


def _preload(names) -> None:
    """Import the modules ``names`` (matplotlib with the Agg backend), skipping what is missing;
    with pyplot, draw one small figure with math text to PNG and PDF in memory, so that each
    figure job finds the math-text parser built and the fonts loaded (a third of a second a
    figure on the 2-core machine). Nothing a job reads is changed: no setting is touched and pyplot
    has no figure."""
    import importlib

    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    if "matplotlib.pyplot" in sys.modules:
        import io

        from matplotlib.figure import Figure

        fig = Figure()  # not pyplot's: its figure numbers stay as a job's process has them
        fig.subplots().set_xlabel(r"$\gamma = \beta / \log n$")
        for fmt in ("png", "pdf"):
            fig.savefig(io.BytesIO(), format=fmt)


def _fork_job(conn, listener, running) -> int | None:
    """Read one request from ``conn`` and fork its child; the child's pid, or ``None``."""
    msg, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
    if len(msg) != _HEADER.size or len(fds) != 3:
        conn.close()
        return None
    body = _recv_exact(conn, _HEADER.unpack(msg)[0])
    if body is None:
        conn.close()
        return None
    request = json.loads(body)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in running.values():
            other.close()
        conn.close()
        _run_child(request, fds)
    for fd in fds:
        os.close(fd)
    return pid


def _run_child(request: dict, fds) -> None:
    """In the forked child: become the job (streams, directory, environment, arguments), run its
    script as ``__main__`` and exit with its status."""
    import logging
    import runpy
    import traceback

    os.setpgid(0, 0)  # the server can end the child and anything it starts
    signal.set_wakeup_fd(-1)
    for fd in _WAKE.values():
        os.close(fd)
    for sig in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        runpy.run_path(request["script"], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - reported as the job's traceback, status 1
        traceback.print_exc()
    finally:
        logging.shutdown()
        with contextlib.suppress(OSError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _reap(running) -> None:
    """Send each ended child's exit status to the job that waits for it."""
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError), conn:
            conn.sendall(_HEADER.pack(code if code >= 0 else 128 - code))


def _exit_server(listener, path, running) -> None:
    """End every child, remove the socket and exit."""
    for pid in list(running):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    listener.close()
    with contextlib.suppress(OSError):
        os.unlink(path)
    os._exit(0)


def _recv_exact(conn, size: int) -> bytes | None:
    """``size`` bytes from ``conn``, or ``None`` if it closes first."""
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), [m for m in sys.argv[3].split(",") if m])
