"""The test harness itself: tests of one group run in one test process
(tests/conftest.py::pytest_xdist_make_scheduler; docs/pipeline.md#what-the-tests-check).

pytest-xdist 3.8's own ``--dist loadgroup`` appends "@group" to ``item._nodeid``, which pytest 9
no longer reads, so its groups were silently lost: the workers now also write the groups to a
file, and the controller's scheduler takes each test's unit of work from that file."""

from __future__ import annotations

import json
import types

import background
import pytest

import conftest


def _config(dist: str):
    values = {"dist": dist, "tx": ["2*popen"]}
    return types.SimpleNamespace(getvalue=values.__getitem__, option=types.SimpleNamespace())


def test_the_scheduler_takes_the_groups_the_workers_wrote(tmp_path, monkeypatch):
    monkeypatch.setenv(background.ENV, str(tmp_path))
    grouped = {
        "tests/test_a.py::test_one": "test_a.summary",
        "tests/test_b.py::test_two[x]": "test_a.summary",
        "tests/test_c.py::test_jax_kernel": "jax",
    }
    conftest._write_groups(grouped)
    assert json.loads((tmp_path / conftest.GROUPS_FILE).read_text()) == grouped
    assert not list(tmp_path.glob(".*")), "the temporary file was left behind"
    sched = conftest.pytest_xdist_make_scheduler(_config("loadgroup"), None)
    for nodeid, group in grouped.items():
        assert sched._split_scope(nodeid) == group
    # a test in no group is a unit of its own; xdist's "@group" suffix still counts
    assert sched._split_scope("tests/test_d.py::test_free") == "tests/test_d.py::test_free"
    assert sched._split_scope("tests/test_d.py::test_free@g") == "g"


def test_other_distribution_modes_keep_xdist_s_schedulers():
    assert conftest.pytest_xdist_make_scheduler(_config("load"), None) is None


def test_the_collection_hook_groups_shared_fixtures_and_jax(request):
    """In this session's collection: the tests that share a costly module fixture carry one
    group per module, and the JAX tests one group."""
    items = request.session.items
    groups = {}
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is not None:
            groups[item.nodeid] = mark.args[0]
    jax_tests = [
        i
        for i in items
        if i.path.name == "test_backend_jax.py"
        and not ({"smoke_run", "gpu_run_tiny"} & set(i.fixturenames))
    ]
    if not jax_tests:
        pytest.skip("test_backend_jax.py not selected")
    assert {groups.get(i.nodeid) for i in jax_tests} == {"jax"}
    for item in items:
        shared = [f for f in conftest.SHARED_MODULE_FIXTURES if f in item.fixturenames]
        if shared:
            assert groups.get(item.nodeid) == f"{item.module.__name__}.{shared[0]}"
