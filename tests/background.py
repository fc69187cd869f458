"""Long background runs shared by every process of one test session.

The test command runs its tests in two processes (pytest-xdist, ``-n auto`` in pyproject.toml), but
the smoke workflow, the tiny GPU-script run, the one-core forced rerun and the docs build must run
once per session, not once per process. A :class:`Job` is started by whichever process asks first
(under a file lock) in a directory shared by the session's processes; any process waits for it by
polling the file its shell wrapper writes when the command ends. The process that controls the
session (the xdist controller, or the one process without xdist) stops whatever is still running
at the end (:func:`stop_unfinished`), never a worker: the other worker may still be waiting for it.
See docs/pipeline.md#what-the-tests-check.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

#: the environment variable that names the session's shared directory (set by conftest)
ENV = "ATTNSCALE_TEST_SHARED"

# the shell wrapper: run the command, then write its exit status atomically (rename)
_WRAPPER = (
    'd=$1; shift; "$@" >"$d/stdout" 2>"$d/stderr"; echo $? >"$d/returncode.tmp"; '
    'mv "$d/returncode.tmp" "$d/returncode"'
)

#: processes this process started, kept referenced while they run
_STARTED: list[subprocess.Popen] = []


def shared_root() -> Path:
    """The session's shared directory (``$ATTNSCALE_TEST_SHARED``)."""
    return Path(os.environ[ENV])


class Job:
    """One named background command of the session, in ``shared_root() / name``."""

    def __init__(self, name: str):
        self.name = name
        self.dir = shared_root() / name

    @contextlib.contextmanager
    def _lock(self):
        with open(shared_root() / f"{self.name}.lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    @property
    def started(self) -> bool:
        return (self.dir / "pid").is_file()

    @property
    def finished(self) -> bool:
        return (self.dir / "returncode").is_file()

    def start(
        self,
        cmd: list,
        *,
        cwd: Path | Callable[[Path], Path],
        env: dict | None = None,
        nice: int = 0,
    ) -> bool:
        """Start ``cmd`` in a process group of its own, unless a process of this session has:
        ``True`` if this call started it. ``cwd`` may be a function of the job's directory that
        prepares the working directory (e.g. copies the repository) and returns it; it runs
        under the lock, so it runs once."""
        with self._lock():
            if self.started:
                return False
            self.dir.mkdir(parents=True, exist_ok=True)
            workdir = cwd(self.dir) if callable(cwd) else cwd
            args = [str(a) for a in cmd]
            (self.dir / "args.json").write_text(json.dumps(args))
            proc = subprocess.Popen(
                ["/bin/sh", "-c", _WRAPPER, "sh", str(self.dir), *args],
                cwd=workdir,
                env=env,
                start_new_session=True,
                preexec_fn=(lambda: os.nice(nice)) if nice else None,
            )
            _STARTED.append(proc)
            (self.dir / "pid.tmp").write_text(str(proc.pid))
            (self.dir / "pid.tmp").rename(self.dir / "pid")
            return True

    def wait(self, timeout: float) -> subprocess.CompletedProcess:
        """The finished job (its arguments, exit status, stdout and stderr); an error if no
        process of the session started it, or after ``timeout`` seconds."""
        if not self.started:
            raise RuntimeError(f"background job {self.name!r} was never started")
        deadline = time.monotonic() + timeout
        while not self.finished:
            if time.monotonic() > deadline:
                raise TimeoutError(f"background job {self.name!r} still running after {timeout} s")
            time.sleep(0.2)
        args = json.loads((self.dir / "args.json").read_text())
        code = int((self.dir / "returncode").read_text())
        out, err = ((self.dir / f).read_text(errors="replace") for f in ("stdout", "stderr"))
        return subprocess.CompletedProcess(args, code, out, err)


def stop_unfinished(root: Path) -> list[str]:
    """Kill the process group of every job under ``root`` that has not finished (e.g. after
    ``-x`` stopped the session early); the names of the jobs stopped."""
    stopped = []
    for pid_file in sorted(root.glob("*/pid")):
        if (pid_file.parent / "returncode").is_file():
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
            stopped.append(pid_file.parent.name)
    for proc in _STARTED:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
    return stopped


def reap_finished() -> None:
    """Collect the exit of every finished job this process started (so that its CPU time counts
    as this process's children's, e.g. in ``/usr/bin/time pytest``)."""
    for proc in _STARTED:
        proc.poll()
