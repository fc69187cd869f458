"""Bad configurations for the Paper B, benchmark and scaling-rules sections, checked in-process
(issue 13; ``tests/test_config.py`` has the Paper A cases).

:func:`attnscale.pipeline.config.load` is what the Snakefile runs at parse time (schema with defaults,
then the range checks), so calling it directly on ``config.yaml`` merged with a bad fragment
checks the same thing as ``snakemake -n`` without starting Snakemake (~0.05 s per case instead
of ~3 s). Each case must be refused with a message naming the key; ``tests/test_config.py``
keeps the end-to-end cases that also prove nothing is written.
"""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml

from attnscale.pipeline import config as cfgmod

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
BASE = yaml.safe_load((REPO / "config.yaml").read_text())


def merged(fragment: dict) -> dict:
    """``config.yaml`` extended by ``fragment`` as Snakemake's --configfile does (nested update)."""
    out = copy.deepcopy(BASE)

    def update(dst, src):
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                update(dst[k], v)
            else:
                dst[k] = v

    update(out, fragment)
    return out


def refuse(fragment: dict) -> str:
    """Load the merged config; return the error text (the test fails if it is accepted)."""
    try:
        cfgmod.load(merged(fragment), schema=SCHEMA)
    except (cfgmod.ConfigError, jsonschema.ValidationError, ValueError) as err:
        return str(err)
    except Exception as err:  # snakemake.utils.validate wraps schema errors in WorkflowError
        return str(err)
    pytest.fail(f"accepted: {fragment}")


# (id, fragment, substrings that must appear in the message)
BAD = [
    ("pb-sampler", {"paper_b": {"uniform_sampler": "cube"}}, ["uniform_sampler", "cube"]),
    ("pb-vf-n", {"paper_b": {"vector_fields": {"n": 1}}}, ["paper_b.vector_fields.n", "[2, inf)"]),
    (
        "pb-vf-exponent",
        {"paper_b": {"vector_fields": {"beta_exponents": [1.0, -0.5]}}},
        ["beta_exponents", "-0.5"],
    ),
    (
        "pb-vf-six-panels",
        {"paper_b": {"vector_fields": {"beta_exponents": [1, 2, 3, 4, 5, 6]}}},
        ["beta_exponents", "too long"],
    ),
    (
        "pb-vf-queries",
        {"paper_b": {"vector_fields": {"queries": 0}}},
        ["paper_b.vector_fields.queries", "[1, inf)"],
    ),
    ("pb-phase-d", {"paper_b": {"phase": {"d": 1}}}, ["paper_b.phase.d", "[2, inf)"]),
    (
        "pb-phase-trials",
        {"paper_b": {"phase": {"trials": 1}}},
        ["paper_b.phase.trials", "[2, inf)"],
    ),
    (
        "pb-phase-unknown",
        {"paper_b": {"phase": {"trails": 10}}},
        ["Additional properties", "trails"],
    ),
    ("pb-phase-grid", {"paper_b": {"phase": {"beta": "fast"}}}, ["beta", "fast"]),
    ("pb-profile-d", {"paper_b": {"profile": {"d": [5, 1]}}}, ["paper_b.profile.d", "[2, inf)"]),
    ("pb-profile-exponent", {"paper_b": {"profile": {"beta_exponent": 0}}}, ["beta_exponent"]),
    ("pb-laws-trials", {"paper_b": {"critical_laws": {"limit_trials": 1}}}, ["limit_trials"]),
    ("pb-heat-q-length", {"paper_b": {"heat_drift": {"q": [1.0, 1.0]}}}, ["q"]),
    ("pb-heat-contexts", {"paper_b": {"heat_drift": {"min_contexts": 1}}}, ["min_contexts"]),
    ("bench-lambda-n", {"benchmark": {"lambda": {"n": 1}}}, ["benchmark.lambda.n", "[2, inf)"]),
    (
        "bench-eta-probes",
        {"benchmark": {"eta": {"probes": 0}}},
        ["benchmark.eta.probes", "[1, inf)"],
    ),
    ("bench-scaling-empty", {"benchmark": {"scaling": {"n": []}}}, ["should be non-empty"]),
    (
        "bench-scaling-n",
        {"benchmark": {"scaling": {"n": [1, 1024]}}},
        ["benchmark.scaling.n", "[2, inf)"],
    ),
    ("bench-unknown", {"benchmark": {"gemm": {"n": 8}}}, ["Additional properties", "gemm"]),
    ("pa-rules-n", {"paper_a": {"scaling_rules": {"n": [1024, 0.5]}}}, ["paper_a.scaling_rules.n"]),
    (
        "pa-rules-unsorted",
        {"paper_a": {"scaling_rules": {"n": [4096, 1024]}}},
        ["paper_a.scaling_rules.n", "increasing"],
    ),
]


@pytest.mark.parametrize("name, frag, needles", BAD, ids=[b[0] for b in BAD])
def test_bad_config_is_refused_in_process(name, frag, needles):
    text = refuse(frag)
    for needle in needles:
        assert needle in text, f"{name}: {needle!r} not in {text[-1500:]}"


def test_default_and_smoke_configs_are_accepted():
    cfgmod.load(merged({}), schema=SCHEMA)
    cfgmod.load(merged(yaml.safe_load((REPO / "tests/smoke.yaml").read_text())), schema=SCHEMA)
