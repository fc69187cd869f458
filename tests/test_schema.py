"""The configuration schema: every key described with a default, defaults equal config.yaml,
and tests/smoke.yaml valid. Uses Snakemake's own validate, the reference for
attnscale.pipeline.config.validate_schema (the faster one the Snakefile calls): both must fill the same
defaults and refuse the same configurations."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import snakemake.utils
import yaml
from snakemake.utils import validate

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "workflow/schemas"


@pytest.fixture(autouse=True, scope="module")
def _schema_files_read_once():
    """Snakemake's ``validate`` (the reference here) reads each schema file again, with the
    pure-Python YAML parser, for every ``$ref`` it follows: ~650 reads of the same ~12 files in
    this module (~5 of its ~7 CPU-s). Each file is read once here and Snakemake is given a
    fresh copy of what it read (its validation, defaults and references are its own)."""
    read = snakemake.utils._load_configfile
    cache: dict = {}

    def load(path, *args, **kwargs):
        if not isinstance(path, (str, Path)):
            return read(path, *args, **kwargs)
        key = (str(Path(path).resolve()), args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = read(path, *args, **kwargs)
        return copy.deepcopy(cache[key])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(snakemake.utils, "_load_configfile", load)
        yield


def _sections() -> list[str]:
    top = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())
    return [k for k, v in top["properties"].items() if "$ref" in v]


def _validate(cfg: dict) -> dict:
    cfg = copy.deepcopy(cfg)
    validate(cfg, str(SCHEMAS / "config.schema.yaml"))
    for s in _sections():
        validate(cfg[s], str(SCHEMAS / f"{s}.schema.yaml"))
    return cfg


def _walk(schema: dict, path: str, problems: list[str]) -> None:
    for key, sub in schema.get("properties", {}).items():
        where = f"{path}.{key}" if path else key
        if "description" not in sub:
            problems.append(f"{where}: no description")
        if "default" not in sub:
            problems.append(f"{where}: no default")
        if sub.get("type") == "object" and "properties" in sub:
            _walk(sub, where, problems)


def test_every_key_has_a_description_and_a_default():
    problems: list[str] = []
    for f in sorted(SCHEMAS.glob("*.schema.yaml")):
        if f.name == "grid.schema.yaml":
            continue  # a value type, documented and defaulted where it is used
        schema = yaml.safe_load(f.read_text())
        assert schema.get("additionalProperties") is False, f"{f.name}: unknown keys not rejected"
        _walk(schema, f.stem.replace(".schema", ""), problems)
    assert not problems, problems


def test_defaults_equal_config_yaml():
    """Leaving a key out of config.yaml changes nothing: the schema defaults are the
    paper-scale values."""
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    full = _validate(cfg)
    assert full == cfg, "config.yaml relies on a default it does not spell out"
    minimal = _validate({"seed": cfg["seed"], **{s: {} for s in _sections()}})
    assert minimal == cfg


def test_smoke_config_is_valid():
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    smoke = yaml.safe_load((REPO / "tests/smoke.yaml").read_text())
    for key, val in smoke.items():
        if isinstance(val, dict):
            cfg[key] = {**cfg.get(key, {}), **val}
        else:
            cfg[key] = val
    _validate(cfg)
    assert set(smoke) >= set(_sections()), "tests/smoke.yaml must shrink every section"


def test_library_validation_fills_what_snakemake_validate_fills():
    from snakemake.utils import update_config

    from attnscale.pipeline.config import SchemaError, validate_schema

    base = yaml.safe_load((REPO / "config.yaml").read_text())
    configs = [{"seed": 1}, {"seed": 1, "paper_b": {"phase": {}}}, copy.deepcopy(base)]
    for extra in ("tests/smoke.yaml", "config/cluster.yaml"):
        cfg = copy.deepcopy(base)
        update_config(cfg, yaml.safe_load((REPO / extra).read_text()))
        configs.append(cfg)
    for cfg in configs:
        ours = copy.deepcopy(cfg)
        validate_schema(ours, SCHEMAS / "config.schema.yaml")
        assert ours == _validate(cfg)
    # wrong types: both validators refuse them
    for bad in (
        {"seed": 1, "paper_b": {"phase": {"beta": "x"}}},
        {"seed": 1, "finite_d": {"transition": {"rows": 1.5}}},
        {"seed": "1"},
    ):
        with pytest.raises(Exception):  # noqa: B017, PT011 - Snakemake's WorkflowError
            _validate(bad)
        with pytest.raises(SchemaError, match="Failed validating"):
            validate_schema(copy.deepcopy(bad), SCHEMAS / "config.schema.yaml")
    # out of range: the ranges live in attnscale.pipeline.config, which names key and range
    from attnscale.pipeline.config import ConfigError, load

    for bad, key in (
        ({"seed": 1, "paper_a": {"trials": 0}}, "paper_a.trials"),
        ({"seed": -1}, "seed"),
    ):
        with pytest.raises(ConfigError, match=rf"config error: {key} must be"):
            load(copy.deepcopy(bad), schema=SCHEMAS / "config.schema.yaml")


BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def test_ranges_live_in_config_py_only():
    """One home for every allowed range: ``attnscale.pipeline.config`` (``GRIDS``, ``VALUES``).
    The schemas give types, descriptions and defaults; a bound written there as well could
    disagree (it did, on six keys). Only the grid type's own ``num >= 1`` is structural."""
    found = []
    for f in sorted(SCHEMAS.glob("*.schema.yaml")):
        if f.name == "grid.schema.yaml":
            continue
        for line_no, line in enumerate(f.read_text().splitlines(), 1):
            if any(f"{b}:" in line for b in BOUNDS):
                found.append(f"{f.name}:{line_no}: {line.strip()}")
    assert not found, found


def _numeric_keys(node: dict, path: str, out: set[str]) -> None:
    for key, sub in node.get("properties", {}).items():
        where = f"{path}.{key}" if path else key
        items = sub.get("items", {}) if sub.get("type") == "array" else {}
        if sub.get("type") in ("integer", "number") or items.get("type") in ("integer", "number"):
            out.add(where)
        elif "oneOf" in sub:  # a grid (grid.schema.yaml)
            out.add(where)
        elif sub.get("type") == "object":
            _numeric_keys(sub, where, out)


def test_every_number_of_the_config_has_exactly_one_range():
    from attnscale.pipeline import config as cfgmod

    schema = cfgmod.read_schema(SCHEMAS / "config.schema.yaml")
    numeric: set[str] = set()
    _numeric_keys(schema, "", numeric)
    # the heat-drift query q (three numbers, not all zero) is checked in CHECKS (_check_paper_b)
    # paper_b.heat_drift.q (three numbers, not all zero) and backend_memory_gb (null or > 0) are
    # checked in CHECKS
    ranged = set(cfgmod.GRIDS) | set(cfgmod.VALUES) | {"paper_b.heat_drift.q"}
    assert not set(cfgmod.GRIDS) & set(cfgmod.VALUES)
    assert numeric - ranged == set(), "numbers without a range in attnscale.pipeline.config"
    assert ranged - numeric == set(), "ranges of keys the schema does not have"
