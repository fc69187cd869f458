# Shared helpers: config checks beyond the JSON schema, grids, library file lists.
import math
from pathlib import Path

from attnscale.grids import expand_grid, fmt


def _fail(key, allowed, got):
    raise ValueError(f"config error: {key} must be {allowed}; got {got!r}")


def checked_grid(section, key, *, low=None, high=None, low_open=True, high_open=True):
    """Expand config[section][key] and check every value is finite and inside (low, high)."""
    name = f"{section}.{key}"
    spec = config[section][key]
    raw = (
        [spec.get("start"), spec.get("stop")] if isinstance(spec, dict) else list(spec)
    )
    for v in raw:
        if isinstance(v, (int, float)) and not math.isfinite(v):
            _fail(name, "a grid of finite numbers", spec)
    try:
        vals = expand_grid(spec, name)
    except ValueError as err:
        _fail(
            name,
            "a non-empty, strictly increasing grid",
            f"{config[section][key]} ({err})",
        )
    lo = "-inf" if low is None else low
    hi = "inf" if high is None else high
    rng = f"{'(' if low_open else '['}{lo}, {hi}{')' if high_open else ']'}"
    for v in vals:
        bad = not math.isfinite(v)
        if low is not None:
            bad |= v <= low if low_open else v < low
        if high is not None:
            bad |= v >= high if high_open else v > high
        if bad:
            _fail(name, f"a grid of finite values in {rng}", float(v))
    return vals


def lib(*modules):
    """Source files of attnscale modules, declared as inputs so library edits rerun jobs."""
    return [f"src/attnscale/{m.replace('.', '/')}.py" for m in modules]


def checked_values(path, *, low=0.0):
    """The list or grid at a dotted config path (e.g. "paper_b.phase.n"), expanded: finite
    values > low, strictly increasing; else ValueError("config error: <path> must be ...").
    """
    spec = config
    for part in path.split("."):
        spec = spec[part]
    raw = (
        [spec.get("start"), spec.get("stop")] if isinstance(spec, dict) else list(spec)
    )
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in raw):
        _fail(path, "a grid of finite numbers", spec)
    try:
        vals = expand_grid(spec, path)
    except ValueError as err:
        _fail(path, "a non-empty, strictly increasing grid", f"{spec} ({err})")
    for v in vals:
        if v <= low:
            _fail(path, f"a grid of finite values > {low:g}", float(v))
    return vals


ROOT_SEED = int(config["seed"])

# ---------------- Paper A ----------------
PA = config["paper_a"]
PA_RHO = checked_grid("paper_a", "rho", low=0.0, high=1.0)
PA_GAMMA = checked_grid("paper_a", "gamma", low=0.0, high=None)
PA_RULES_N = checked_values("paper_a.scaling_rules.n", low=1.0)
if not math.isfinite(PA["alpha"]) or PA["alpha"] < 0:
    _fail("paper_a.alpha", "a finite number >= 0", PA["alpha"])
PA_RHO_STR = [fmt(r) for r in PA_RHO]
if len(set(PA_RHO_STR)) != len(PA_RHO_STR):
    _fail("paper_a.rho", "distinct at 4 decimals (they name files)", PA_RHO.tolist())
PA_TRIALS = list(range(int(PA["trials"])))


def paper_a_lambda_csvs(wildcards):
    return expand(
        "results/paper_a/lambda/n{n}/d{d}/rho{rho}.csv",
        n=PA["n"],
        d=PA["d"],
        rho=PA_RHO_STR,
    )


wildcard_constraints:
    n=r"\d+",
    d=r"\d+",
    trial=r"\d+",
    rho=r"0\.\d{4}",
