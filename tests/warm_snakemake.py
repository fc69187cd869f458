"""Snakemake's command line, started from a warm process: the tests that parse the workflow
(dry runs of a configuration, ``--lint``) pay Snakemake's own start-up once per test process
instead of once per run.

A plain ``snakemake`` start imports Snakemake, its plugins and their dependencies (pandas,
SQLAlchemy) before it reads the Snakefile: ~2.5 of the 5 to 11 CPU-s of a dry run. Here one
server process per test process imports ``snakemake.cli`` once and forks a child for each run;
the child takes the run's working directory, environment, ``sys.path`` and arguments, calls
Snakemake's ``main()`` as the ``snakemake`` command does, and writes its output to files. The
workflow itself (the Snakefile, ``attnscale`` from the copy's ``src/`` first on the path, the
configuration) is read afresh in each child: the server never imports ``attnscale``.
See docs/pipeline.md#what-the-tests-check.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: third-party modules imported by every run (measured with Snakemake 9.27: a dry run of the smoke
#: configuration); never ``attnscale``, which each run imports from its own tree
PRELOAD = (
    "scipy.special",
    "jsonschema",
    "fastjsonschema",
    "requests",
    "jinja2",
    "nbformat",
    "docutils",
    "pygments",
    "yte",
    "dpath",
    "PIL.Image",
    "smart_open",
    "argparse_dataclass",
    "platformdirs",
    "unittest",
    "pydoc",
    "difflib",
)

_SERVER = r"""
import json, os, sys, traceback
# as the `snakemake` console script: its folder first on the path, not the working directory
BIN = sys.path[0] = os.path.dirname(sys.executable)
from snakemake.cli import main
import snakemake.workflow
import importlib
# third-party modules a run imports after main() starts (Snakemake's own lazy imports, SciPy for
# the library): the same files for every run, imported once here
for name in PRELOAD:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
assert "attnscale" not in sys.modules  # the workflow's library comes from each run's own tree
for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setpgid(0, 0)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.chdir(req["cwd"])
            # the one value Snakemake takes from the working directory at import (9.27)
            snakemake.workflow.Workflow._rundir = os.getcwd()
            os.environ.clear()
            os.environ.update(req["env"])
            sys.path[:0] = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
            for fd, name in ((1, "stdout"), (2, "stderr")):
                f = os.open(req[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(f, fd)
                os.close(f)
            sys.argv = [os.path.join(BIN, "snakemake"), *req["args"]]
            try:
                if req["code"]:
                    exec(req["code"], {"__name__": "__main__"})
                else:
                    main()
                code = 0
            except SystemExit as e:
                if e.code is None or isinstance(e.code, int):
                    code = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    print(json.dumps({"started": pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"returncode": os.waitstatus_to_exitcode(status), "pid": pid}), flush=True)
"""

_server: subprocess.Popen | None = None


def _start() -> subprocess.Popen:
    global _server
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen(
            [sys.executable, "-c", f"PRELOAD = {PRELOAD!r}\n{_SERVER}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=(log := tempfile.TemporaryFile()),  # the server's own errors, if it fails
            text=True,
        )
        _server.lines = _Lines(_server.stdout.fileno(), log)
        atexit.register(_stop)
    return _server


def _stop() -> None:
    """Close the server (it ends at the end of its input)."""
    global _server
    if _server is not None:
        if _server.poll() is None:
            _server.stdin.close()
            try:
                _server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                _server.kill()
        _server = None


def snakemake(
    workdir: Path,
    *args: str,
    env: dict,
    check: bool = True,
    timeout: int = 900,
    code: str | None = None,
) -> subprocess.CompletedProcess:
    """``snakemake *args`` in ``workdir`` with environment ``env`` (``code``: Python run instead
    of Snakemake's ``main()``, with ``sys.argv`` set, e.g. to hide a package first), as
    :func:`conftest.snakemake` runs it but from the warm server; a run over ``timeout`` seconds
    is killed and raises :class:`subprocess.TimeoutExpired`. Off Linux, a plain process per run
    (Windows has no ``os.fork``; on macOS forking after Snakemake's imports is not safe, as for
    the workflow's warm jobs, docs/pipeline.md#warm-jobs)."""
    if sys.platform != "linux":
        first = ["-c", code] if code else ["-m", "snakemake"]
        proc = subprocess.run(
            [sys.executable, *first, *args],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return _checked(proc, args, check)
    server = _start()
    with tempfile.TemporaryDirectory(prefix="warm-snakemake-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        req = {
            "cwd": str(workdir),
            "env": env,
            "args": list(args),
            "code": code,
            "stdout": str(out),
            "stderr": str(err),
        }
        server.stdin.write(json.dumps(req) + "\n")
        server.stdin.flush()
        started = server.lines.read(120)
        if started is None:
            _stop()
            raise RuntimeError("the warm Snakemake server did not start the run within 120 s")
        pid = started["started"]
        reply = server.lines.read(timeout)
        if reply is None:
            os.killpg(pid, signal.SIGKILL)
            _stop()
            raise subprocess.TimeoutExpired(["snakemake", *args], timeout)
        proc = subprocess.CompletedProcess(
            ["snakemake", *args], reply["returncode"], out.read_text(), err.read_text()
        )
    return _checked(proc, args, check)


def _checked(proc: subprocess.CompletedProcess, args, check: bool) -> subprocess.CompletedProcess:
    """``proc``; with ``check``, an error with the end of its output if it failed."""
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


class _Lines:
    """The server's replies, one JSON object a line, read from its output with a timeout."""

    def __init__(self, fd: int, log):
        self.fd, self.buf, self.log = fd, b"", log

    def read(self, timeout: float) -> dict | None:
        """The next reply; ``None`` if none came within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(self.fd, selectors.EVENT_READ)
            while b"\n" not in self.buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    self.log.seek(0)
                    raise RuntimeError(
                        "the warm Snakemake server ended unexpectedly:\n"
                        + self.log.read().decode(errors="replace")[-4000:]
                    )
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)
