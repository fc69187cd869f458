"""Warm jobs (attnscale.pipeline.warm, docs/pipeline.md#warm-jobs): a job handed to the server
runs as itself -- its streams, directory, environment, arguments and exit status -- a failing job
fails with its traceback, a killed job's child ends, and without a server the job runs in its own
process. That a whole run's outputs are byte-identical with and without warm jobs is checked by
the forced rerun, which runs without them (test_reliability, conftest.FORCED), against the smoke
run, which runs with them."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from attnscale.pipeline import warm

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="warm jobs need Linux")

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def server():
    """A warm server of this process that imports nothing (so it starts in milliseconds)."""
    path = warm.start(preload=())
    yield path
    warm.stop()
    assert not os.path.exists(os.path.dirname(path))  # socket and its folder removed


def _client(script: Path, env: dict, cwd: Path, **kw) -> subprocess.Popen:
    """A job's process: hands ``script`` to the server, exits with the child's status."""
    code = (
        f"import sys; sys.path.insert(0, {str(SRC)!r}); "
        "from attnscale.pipeline.warm import delegate; "
        f"s = delegate({str(script)!r}); print('ran here', file=sys.stderr) if s is None else None; "
        "sys.exit(s or 0)"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, "arg1"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_job_runs_in_the_child_as_itself(server, tmp_path):
    script = _script(
        tmp_path,
        """
        import os, sys
        from pathlib import Path
        print("to stdout")
        print("to stderr", file=sys.stderr)
        Path("made.txt").write_text(os.environ["JOB_VALUE"] + " " + " ".join(sys.argv[1:]))
        assert "ATTNSCALE_WARM" not in os.environ
        Path("pid.txt").write_text(str(os.getpid()))
        sys.exit(3)
        """,
    )
    env = dict(os.environ, JOB_VALUE="forty-two", ATTNSCALE_WARM=server)
    proc = _client(script, env, tmp_path)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert out == "to stdout\n"
    assert err == "to stderr\n"
    assert (tmp_path / "made.txt").read_text() == "forty-two arg1"
    assert int((tmp_path / "pid.txt").read_text()) != proc.pid  # it ran in the server's child


def test_a_failing_job_fails_with_its_traceback(server, tmp_path):
    script = _script(tmp_path, "raise ValueError('rule x: bad value')\n")
    proc = _client(script, dict(os.environ, ATTNSCALE_WARM=server), tmp_path)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "Traceback" in err and "ValueError: rule x: bad value" in err


def test_two_jobs_at_once_and_one_after_the_other(server, tmp_path):
    script = _script(
        tmp_path, "import sys, time; time.sleep(0.3); sys.exit(int(sys.argv[1] == 'arg1'))\n"
    )
    env = dict(os.environ, ATTNSCALE_WARM=server)
    procs = [_client(script, env, tmp_path) for _ in range(3)]
    assert [p.wait(timeout=30) for p in procs] == [1, 1, 1]
    assert _client(script, env, tmp_path).wait(timeout=30) == 1


def test_a_killed_job_ends_its_child(server, tmp_path):
    script = _script(
        tmp_path,
        """
        import os, time
        from pathlib import Path
        Path("pid.txt").write_text(str(os.getpid()))
        time.sleep(60)
        """,
    )
    proc = _client(script, dict(os.environ, ATTNSCALE_WARM=server), tmp_path)
    pid_file = tmp_path / "pid.txt"
    for _ in range(300):
        if pid_file.is_file() and pid_file.read_text():
            break
        time.sleep(0.05)
    child = int(pid_file.read_text())
    proc.send_signal(signal.SIGKILL)  # as Snakemake ends a job it gives up on
    proc.wait(timeout=10)
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the child {child} of a killed job still runs")


def test_without_a_server_the_job_runs_in_its_own_process(tmp_path):
    script = _script(tmp_path, "raise SystemExit('not reached')\n")
    env = {k: v for k, v in os.environ.items() if k != warm.ENV}
    for extra in ({}, {warm.ENV: str(tmp_path / "no-such-socket")}):
        proc = _client(script, dict(env, **extra), tmp_path)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0 and err == "ran here\n"


def test_a_server_ends_when_the_run_that_started_it_ends(tmp_path):
    """The run (here a short Python process) starts a server and ends without stopping it: the
    server notices within a second, removes its socket and exits."""
    path = tmp_path / "s"
    run = (
        "import os, subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, {warm.__file__!r}, {str(path)!r}, str(os.getpid()), '']); "
        f"[time.sleep(0.05) for _ in range(200) if not os.path.exists({str(path)!r})]"
    )
    subprocess.run([sys.executable, "-c", run], check=True, timeout=30)
    assert path.exists()  # the server was listening when the run ended
    for _ in range(100):
        if not path.exists():
            break
        time.sleep(0.05)
    else:
        pytest.fail("the server outlived the run that started it")


@pytest.mark.parametrize(
    "executor, deployment, environ, platform, why",
    [
        (None, (), {}, "linux", ""),
        ("local", (), {"ATTNSCALE_WARM_JOBS": "1"}, "linux", ""),
        ("slurm", (), {}, "linux", "executor slurm"),
        (None, ("conda",), {}, "linux", "software deployment conda"),
        (None, (), {"ATTNSCALE_WARM_JOBS": "0"}, "linux", "ATTNSCALE_WARM_JOBS=0"),
        (None, (), {}, "darwin", "platform darwin"),
    ],
)
def test_where_warm_jobs_are_used(executor, deployment, environ, platform, why):
    assert warm.wanted(executor, deployment, environ, platform) == why
    assert warm.wanted(executor, deployment, environ, platform, jobs=warm.MIN_JOBS) == why


def test_a_run_of_a_few_jobs_starts_no_server():
    few = warm.MIN_JOBS - 1
    assert warm.wanted(None, jobs=few, environ={}) == f"{few} jobs; the server pays off from 8"
