"""Bad configurations are rejected before any job runs, with a message naming the key and the
allowed range (docs/pipeline.md#configuration). Every case is checked in-process against
``attnscale.pipeline.config.load`` (schema, defaults, ranges: exactly what the Snakefile runs at parse
time); two cases also run end to end through ``snakemake -n`` to show that the workflow stops
before building the DAG and writes nothing."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from snakemake.utils import update_config

from attnscale.pipeline.config import Config, ConfigError, expand_grid, label, load
from conftest import copy_repo, hermetic_env
from warm_snakemake import snakemake

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
BASE = yaml.safe_load((REPO / "config.yaml").read_text())

# (id, config fragment, substrings that must all appear in the error message)
BAD = [
    ("seed-negative", {"seed": -3}, ["config error: seed must be", "[0, "]),
    ("seed-float", {"seed": 1.5}, ["seed", "not of type 'integer'"]),
    ("seed-string", {"seed": "abc"}, ["seed", "not of type 'integer'"]),
    ("seed-too-big", {"seed": 2**128}, ["config error: seed must be", str(2**128 - 1)]),
    ("n-too-small", {"paper_a": {"n": 1}}, ["paper_a.n", "integers in [2, inf)"]),
    ("n-string", {"paper_a": {"n": "12"}}, ["'n'", "not of type 'integer'"]),
    ("d-zero", {"paper_a": {"d": [0]}}, ["paper_a.d", "integers in [2, inf)"]),
    ("d-empty", {"paper_a": {"d": []}}, ["'d'", "should be non-empty"]),
    ("d-repeated", {"paper_a": {"d": [32, 32]}}, ["'d'", "non-unique"]),
    ("trials-zero", {"paper_a": {"trials": 0}}, ["paper_a.trials", "integers in [1, inf)"]),
    ("rho-zero", {"paper_a": {"rho": [0.0, 0.5]}}, ["paper_a.rho", "(0, 1)"]),
    ("rho-above-one", {"paper_a": {"rho": [0.5, 1.2]}}, ["paper_a.rho", "(0, 1)"]),
    ("rho-unsorted", {"paper_a": {"rho": [0.5, 0.3]}}, ["paper_a.rho", "strictly increasing"]),
    ("rho-empty", {"paper_a": {"rho": []}}, ["'rho'"]),
    # a value that names files must survive its 4-decimal label exactly (issue: no silent rounding)
    ("rho-rounded", {"paper_a": {"rho": [0.12345, 0.5]}}, ["paper_a.rho", "4 decimals", "0.12345"]),
    (
        "theorem-rho-rounded",
        {"paper_a": {"theorem_table": {"rho": [0.33333]}}},
        ["paper_a.theorem_table.rho", "4 decimals"],
    ),
    ("gamma-negative", {"paper_a": {"gamma": [-1.0, 2.0]}}, ["paper_a.gamma", "(0, inf)"]),
    (
        "gamma-infinite",
        {"paper_a": {"gamma": {"start": 1.0, "stop": float("inf"), "num": 3}}},
        ["paper_a.gamma", "finite"],
    ),
    (
        "gamma-bad-spacing",
        {"paper_a": {"gamma": {"start": 1.0, "stop": 2.0, "num": 3, "spacing": "cubic"}}},
        ["'gamma'"],
    ),
    ("alpha-negative", {"paper_a": {"alpha": -0.5}}, ["paper_a.alpha", "[0, inf)"]),
    ("alpha-nan", {"paper_a": {"alpha": float("nan")}}, ["paper_a.alpha", "[0, inf)"]),
    (
        "eta-trials-above-trials",
        {"paper_a": {"eta": {"trials": 9}}},
        ["paper_a.eta.trials", "<= paper_a.trials"],
    ),
    (
        "finite-size-n-one",
        {"paper_a": {"finite_size": {"n": [1, 64]}}},
        ["paper_a.finite_size.n", "integers in [2, inf)"],
    ),
    ("benchmark-n-zero", {"benchmark": {"lambda": {"n": 0}}}, ["benchmark.lambda.n", "[2, inf)"]),
    (
        "benchmark-scaling-unsorted",
        {"benchmark": {"scaling": {"n": [2048, 1024]}}},
        ["benchmark.scaling.n", "strictly increasing"],
    ),
    ("paper-b-unknown-key", {"paper_b": {"phase": {"dd": 5}}}, ["Additional properties", "'dd'"]),
    (
        "paper-b-trials-zero",
        {"paper_b": {"phase": {"trials": 0}}},
        ["paper_b.phase.trials", "[2, inf)"],
    ),
    ("rows-word", {"paper_a": {"rows": "some"}}, ["paper_a.rows", "'all' or one of", "[2, inf)"]),
    ("rows-one", {"paper_a": {"rows": 1}}, ["paper_a.rows", "integers in [2, inf)"]),
    ("rows-float", {"paper_a": {"rows": 2.5}}, ["'rows'", "not of type"]),
    ("z0-unknown", {"paper_a": {"z0": "fixed"}}, ["'fixed' is not one of", "fixed_norm"]),
    (
        "theorem-n-one",
        {"paper_a": {"theorem_table": {"n": 1}}},
        ["paper_a.theorem_table.n", "null or one of"],
    ),
    ("regenerate-n-one", {"paper_a": {"regenerate_n": 1}}, ["paper_a.regenerate_n", "[2, inf)"]),
    ("unknown-top-key", {"sead": 1}, ["Additional properties are not allowed", "'sead'"]),
    ("unknown-nested-key", {"paper_a": {"foo": 1}}, ["Additional properties", "'foo'"]),
    (
        "transformer-widths-n-not-in-n",
        {"transformer": {"widths_n": [100]}},
        ["transformer.widths_n", "values of transformer.n"],
    ),
    (
        "transformer-parts-too-many",
        {"transformer": {"calibration_parts": 20}},
        ["transformer.calibration_parts", "transformer.bootstrap.block"],
    ),
    ("transformer-bands-zero", {"transformer": {"position_bands": 0}}, ["position_bands"]),
]


def merged(frag: dict) -> dict:
    """config.yaml with ``frag`` merged over it, as ``snakemake --configfile`` merges it."""
    cfg = copy.deepcopy(BASE)
    update_config(cfg, copy.deepcopy(frag))
    return cfg


@pytest.mark.parametrize("name, frag, needles", BAD, ids=[b[0] for b in BAD])
def test_bad_config_is_rejected_with_a_clear_message(name, frag, needles):
    with pytest.raises(Exception) as err:  # noqa: PT011 - jsonschema (WorkflowError) or ConfigError
        load(merged(frag), SCHEMA)
    text = str(err.value)
    for needle in needles:
        assert needle in text, f"{name}: {needle!r} not in\n{text[-3000:]}"


def test_config_yaml_and_smoke_are_accepted():
    load(copy.deepcopy(BASE), SCHEMA)
    load(merged(yaml.safe_load((REPO / "tests/smoke.yaml").read_text())), SCHEMA)


def test_cluster_config_is_accepted():
    load(merged(yaml.safe_load((REPO / "config/cluster.yaml").read_text())), SCHEMA)


def test_transformer_calibration_config_is_accepted():
    over = yaml.safe_load((REPO / "config/transformer-calibration.yaml").read_text())
    load(merged(over), SCHEMA)


def test_labels_are_exact_and_map_back_to_the_value():
    cfg = load(merged({"paper_a": {"rho": [0.05, 0.1235, 0.5]}}), SCHEMA)
    assert cfg.labels("paper_a.rho") == ["0.0500", "0.1235", "0.5000"]
    assert cfg.exact("paper_a.rho", "0.1235") == 0.1235
    with pytest.raises(KeyError):
        cfg.exact("paper_a.rho", "0.1234")


def test_expand_grid_linear_and_log_and_rounding():
    np.testing.assert_array_equal(
        expand_grid({"start": 0.05, "stop": 0.9, "num": 35}),
        np.round(np.linspace(0.05, 0.9, 35), 12),
    )
    g = expand_grid({"start": 0.25, "stop": 12.0, "num": 48, "spacing": "log"})
    assert g[0] == 0.25 and g[-1] == 12.0 and np.all(np.diff(np.log(g)) > 0)
    # 10 significant digits: linspace's 0.30000000000000004 and the literal 0.3 are one value
    assert expand_grid({"start": 0.1, "stop": 0.5, "num": 3})[1] == expand_grid([0.3])[0]
    assert label(0.05) == "0.0500" and label(0.12345) == "0.1235"
    for bad in ([], [1.0, math.nan], {"start": -1.0, "stop": 1.0, "num": 3, "spacing": "log"}):
        with pytest.raises(ConfigError):
            expand_grid(bad, "x")


def test_config_get_names_missing_keys():
    cfg = Config({"a": {"b": 1}})
    assert cfg.get("a.b") == 1
    with pytest.raises(KeyError, match="a.c"):
        cfg.get("a.c")


# ---- end to end: the workflow stops at parse time and writes nothing -------------------------
E2E = [BAD[0], next(b for b in BAD if b[0] == "rho-rounded")]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("badcfg") / "repo")


@pytest.mark.workflow
@pytest.mark.parametrize("name, frag, needles", E2E, ids=[b[0] for b in E2E])
def test_bad_config_stops_snakemake_before_the_dag(work, name, frag, needles):
    path = work / f"bad_{name}.yaml"
    path.write_text(yaml.safe_dump(frag))
    proc = snakemake(
        work, "-n", "--configfile", path.name, env=hermetic_env(work), check=False, timeout=300
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"{name} was accepted:\n{text[-2000:]}"
    for needle in needles:
        assert needle in text, f"{name}: {needle!r} not in\n{text[-3000:]}"
    assert "Building DAG of jobs" not in text, "validation must fail before the DAG is built"
    assert not any((work / "results").iterdir()), "a rejected config wrote results"


def test_the_jax_check_sizes_the_configured_lambda_jobs():
    """The workflow knows which keys size its lambda-type jobs (pipeline.config_checks, not
    backend: issue 26); backend.check_jax_fits refuses a job over the memory budget, naming it."""
    pytest.importorskip("jax")
    from attnscale.backend import BackendError, check_jax_fits
    from attnscale.pipeline.config_checks import lambda_jobs

    cfg = load(copy.deepcopy(BASE), schema=SCHEMA)
    n, d = BASE["paper_a"]["n"], max(BASE["paper_a"]["d"])
    assert lambda_jobs(cfg)[0] == ("Figures 1 and 2 (paper_a.n, paper_a.d)", n, d)
    assert [w for w, *_ in lambda_jobs(Config({"paper_a": {"n": 8, "d": [2, 3]}}))] == [
        "Figures 1 and 2 (paper_a.n, paper_a.d)"
    ]  # a section the configuration lacks is skipped
    check_jax_fits(lambda_jobs(cfg), memory_gb=64)
    with pytest.raises(BackendError, match=rf"^backend: jax: Figures 1 and 2 .* n = {n}, d = {d}"):
        check_jax_fits(lambda_jobs(cfg), memory_gb=1e-6)
