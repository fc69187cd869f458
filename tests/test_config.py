"""Bad configurations are rejected before any job runs, with a message naming the key and the
allowed range (issue: reliability). Each case runs `snakemake -n` on config.yaml extended by a
small bad file, in a temporary copy of the repository, and checks that nothing was written."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from conftest import copy_repo, snakemake

pytestmark = pytest.mark.workflow

# (id, config fragment, substrings that must all appear in the error output)
BAD = [
    ("seed-negative", {"seed": -3}, ["seed", "less than the minimum of 0"]),
    ("seed-float", {"seed": 1.5}, ["seed", "not of type 'integer'"]),
    ("seed-string", {"seed": "abc"}, ["seed", "not of type 'integer'"]),
    ("seed-too-big", {"seed": 2**128}, ["seed", "maximum"]),
    ("n-too-small", {"paper_a": {"n": 1}}, ["['n']", "less than the minimum of 2"]),
    ("n-string", {"paper_a": {"n": "12"}}, ["['n']", "not of type 'integer'"]),
    ("d-zero", {"paper_a": {"d": [0]}}, ["['d']", "less than the minimum of 1"]),
    ("d-empty", {"paper_a": {"d": []}}, ["['d']", "should be non-empty"]),
    ("trials-zero", {"paper_a": {"trials": 0}}, ["['trials']", "less than the minimum of 1"]),
    ("rho-zero", {"paper_a": {"rho": [0.0, 0.5]}}, ["paper_a.rho", "(0.0, 1.0)"]),
    ("rho-above-one", {"paper_a": {"rho": [0.5, 1.2]}}, ["paper_a.rho", "(0.0, 1.0)"]),
    ("rho-unsorted", {"paper_a": {"rho": [0.5, 0.3]}}, ["paper_a.rho", "strictly increasing"]),
    ("rho-empty", {"paper_a": {"rho": []}}, ["['rho']"]),
    ("gamma-negative", {"paper_a": {"gamma": [-1.0, 2.0]}}, ["paper_a.gamma", "(0.0, inf)"]),
    (
        "gamma-infinite",
        {"paper_a": {"gamma": {"start": 1.0, "stop": float("inf"), "num": 3}}},
        ["paper_a.gamma", "finite"],
    ),
    (
        "gamma-bad-spacing",
        {"paper_a": {"gamma": {"start": 1.0, "stop": 2.0, "num": 3, "spacing": "cubic"}}},
        ["['gamma']"],
    ),
    ("alpha-negative", {"paper_a": {"alpha": -0.5}}, ["['alpha']", "less than the minimum of 0"]),
    ("alpha-nan", {"paper_a": {"alpha": float("nan")}}, ["paper_a.alpha", ">= 0"]),
    ("unknown-top-key", {"sead": 1}, ["Additional properties are not allowed", "'sead'"]),
    ("unknown-nested-key", {"paper_a": {"foo": 1}}, ["Additional properties", "'foo'"]),
]


@pytest.fixture(scope="module")
def bad_results(tmp_path_factory):
    work = copy_repo(tmp_path_factory.mktemp("badcfg") / "repo")

    def run(case):
        name, frag, _ = case
        path = work / f"bad_{name}.yaml"
        path.write_text(yaml.safe_dump(frag))
        proc = snakemake(work, "-n", "--configfile", path.name, check=False, timeout=300)
        return name, proc

    with ThreadPoolExecutor(max_workers=2) as pool:
        out = dict(pool.map(run, BAD))
    return work, out


@pytest.mark.parametrize("name, frag, needles", BAD, ids=[b[0] for b in BAD])
def test_bad_config_is_rejected_with_a_clear_message(bad_results, name, frag, needles):
    work, out = bad_results
    proc = out[name]
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"{name} was accepted:\n{text[-2000:]}"
    for needle in needles:
        assert needle in text, f"{name}: {needle!r} not in\n{text[-3000:]}"
    assert "Building DAG of jobs" not in text, "validation must fail before the DAG is built"
    assert not any((work / "results").iterdir()), "a rejected config wrote results"


def test_at_least_fifteen_cases():
    assert len(BAD) >= 15
