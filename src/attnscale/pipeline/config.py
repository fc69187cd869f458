"""The one place where the workflow's configuration is checked and expanded (docs/pipeline.md).

``Snakefile`` calls :func:`load` once, at parse time, before any job runs. It

1. validates ``config.yaml`` against the JSON schemas in ``workflow/schemas/`` (types) and fills
   every default (each key has a description and a default there; unknown keys are rejected);
2. runs the range checks of :data:`GRIDS`, :data:`VALUES` and :data:`CHECKS`, the one home of every
   allowed range (the schemas carry none), so that a bad value stops the run with
   ``config error: <key> must be <allowed range>; got <value>`` before any work;
3. returns a :class:`Config` whose :meth:`Config.grid`, :meth:`Config.labels` and
   :meth:`Config.exact` give rule files the expanded grids, their file-name labels and the exact
   value behind a label.

File names carry grid values as fixed-decimal labels (``label(0.05) == "0.0500"``). A value that
the label would round (``0.12345``) is refused with an error naming the key, so a file name never
stands for a value other than the one computed with (docs/pipeline.md#configuration).

To add a key: describe it (type, default) in the section's schema, add its range to
:data:`GRIDS` or :data:`VALUES` (or a function to :data:`CHECKS`), and read it in the rule file
through ``CFG``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "ConfigError",
    "expand_grid",
    "label",
    "Config",
    "SchemaError",
    "read_schema",
    "validate_schema",
    "GRIDS",
    "VALUES",
    "Range",
    "check",
    "load",
]

#: Decimals of a grid value in a file name.
LABEL_DIGITS = 4


class ConfigError(ValueError):
    """A configuration value outside its allowed range (the message names the key)."""


def fail(key: str, allowed: str, got) -> None:
    """Raise :class:`ConfigError` ``config error: <key> must be <allowed>; got <got>``."""
    raise ConfigError(f"config error: {key} must be {allowed}; got {got!r}")


def expand_grid(spec, name: str = "grid", *, increasing: bool = True) -> np.ndarray:
    """Expand a grid: a list of numbers, or ``{start, stop, num, spacing}``.

    ``spacing`` is ``"linear"`` (:func:`numpy.linspace`) or ``"log"`` (:func:`numpy.geomspace`).
    Values are rounded to 10 significant digits, so a grid written two ways (``0.3`` or
    ``linspace(0.1, 0.5, 3)[1]``) gives the same value and the same seeds.

    Raises
    ------
    ConfigError
        Empty grid, ``num < 1``, unknown spacing, log spacing from ``start <= 0``, non-finite
        values, or values not strictly increasing; the message names ``name``.
    """
    if isinstance(spec, dict):
        start, stop, num = spec.get("start"), spec.get("stop"), spec.get("num")
        for k, v in (("start", start), ("stop", stop)):
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                fail(f"{name}.{k}", "a finite number", v)
        if not isinstance(num, int) or num < 1:
            fail(f"{name}.num", "an integer >= 1", num)
        spacing = spec.get("spacing", "linear")
        if spacing == "log":
            if start <= 0 or stop <= 0:
                fail(name, "a log grid with start > 0 and stop > 0", spec)
            vals = np.geomspace(start, stop, num)
        elif spacing == "linear":
            vals = np.linspace(start, stop, num)
        else:
            fail(f"{name}.spacing", "'linear' or 'log'", spacing)
    else:
        seq = list(spec) if isinstance(spec, (list, tuple)) else [spec]
        if not seq:
            fail(name, "a non-empty grid", spec)
        for v in seq:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                fail(name, "a grid of finite numbers", spec)
        vals = np.asarray(seq, dtype=float)
    vals = np.array([float(f"{v:.10g}") for v in np.atleast_1d(vals)])
    if increasing and np.any(np.diff(vals) <= 0):
        fail(name, "a strictly increasing grid", vals.tolist())
    if not increasing and len(set(vals.tolist())) != vals.size:
        fail(name, "a list of distinct values", vals.tolist())
    return vals


def label(x: float, digits: int = LABEL_DIGITS) -> str:
    """The file-name label of a grid value: fixed decimals, e.g. ``label(0.05) == "0.0500"``."""
    return f"{float(x):.{digits}f}"


@dataclass(frozen=True)
class Range:
    """Allowed range of a value: ``low``/``high`` bounds (``None``: unbounded), open or closed."""

    low: float | None = None
    high: float | None = None
    low_open: bool = True
    high_open: bool = True
    integer: bool = False
    labelled: bool = False  # the values name files: must survive label() exactly
    increasing: bool = True  # False: a list of distinct values in the user's order

    def text(self) -> str:
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = (
            "inf"
            if self.high is None
            else (f"{self.high:g}" if self.high < 1e15 else str(self.high))
        )
        kind = "integers" if self.integer else "finite values"
        br = f"{'(' if self.low_open else '['}{lo}, {hi}{')' if self.high_open else ']'}"
        return f"{kind} in {br}"

    def ok(self, v) -> bool:
        if isinstance(v, float) and not math.isfinite(v):
            return False
        if self.integer and v != round(v):
            return False
        if self.low is not None and (v <= self.low if self.low_open else v < self.low):
            return False
        return not (self.high is not None and (v >= self.high if self.high_open else v > self.high))


#: Grids (lists or {start, stop, num, spacing}) and their ranges, by dotted key.
GRIDS: dict[str, Range] = {
    "paper_a.d": Range(low=2, low_open=False, integer=True, increasing=False),
    "paper_a.rho": Range(low=0.0, high=1.0, labelled=True),
    "paper_a.gamma": Range(low=0.0),
    "paper_a.theorem_table.rho": Range(low=0.0, high=1.0, labelled=True),
    "paper_a.theorem_table.alpha": Range(low=0.0, low_open=False),
    "paper_a.theorem_table.gamma_factors": Range(low=0.0),
    "paper_a.finite_size.n": Range(low=2, low_open=False, integer=True),
    "paper_a.finite_size.rho": Range(low=0.0, high=1.0, labelled=True),
    "paper_a.finite_size.alpha": Range(low=0.0, low_open=False),
    "paper_a.scaling_rules.n": Range(low=1.0),
    "benchmark.scaling.n": Range(low=2, low_open=False, integer=True),
    # finite d (issue 9): the theory's range is 3 <= d <= 4096, 2 <= n <= 1e7, 0 <= rho < 1
    "finite_d.transition.n": Range(low=3, low_open=False, high=1e7, high_open=False, integer=True),
    "finite_d.transition.d": Range(low=3, low_open=False, high=4096, high_open=False, integer=True),
    "finite_d.transition.rho": Range(low=0.0, low_open=False, high=1.0),
    "finite_d.transition.theory_n": Range(low=2, low_open=False, high=1e7, high_open=False),
    # causal mask and simulated scaling rules (issue 10 items 1-2; docs/realistic-attention.md)
    "causal.rho": Range(low=0.0, high=1.0),
    "causal.gamma": Range(low=0.0),
    "causal.self_weight.rho": Range(low=0.0, high=1.0),
    "causal.self_weight.gamma_factors": Range(low=0.0),
    "causal.rules_simulated.n": Range(
        low=2, low_open=False, high=1e7, high_open=False, integer=True
    ),
    "causal.rules_simulated.rho": Range(low=0.0, high=1.0),
    # learned Q^T K, attention sink, depth (issue 10 items 3-5; docs/realistic-attention.md)
    "realistic.learned_qk.gamma": Range(low=0.0),
    "realistic.learned_qk.epsilon": Range(low=0.0, low_open=False),
    "realistic.learned_qk.rank": Range(low=1, low_open=False, integer=True),
    "realistic.sink.gamma": Range(low=0.0),
    "realistic.sink.c_s": Range(low=-1.0, high=1.0, low_open=False, high_open=False),
    "realistic.sink.kappa": Range(low=0.0, low_open=False),
    "realistic.depth.gamma_factors": Range(low=0.0),
    "realistic.depth.alpha": Range(low=0.0, low_open=False),
    # Paper B (docs/paper-b.md, docs/paper-b-beyond.md#critical-output-law)
    "paper_b.vector_fields.beta_exponents": Range(low=0.0, increasing=False),
    "paper_b.vector_fields.sweep_beta": Range(low=0.0),
    "paper_b.phase.n": Range(low=1.5),  # rounded to integers (distinct: _check_paper_b)
    "paper_b.phase.beta": Range(low=0.0),
    "paper_b.phase.line_gamma": Range(low=0.0),
    "paper_b.phase.limit_gamma": Range(low=0.0),
    "paper_b.profile.d": Range(low=2, low_open=False, integer=True, increasing=False),
    "paper_b.critical_laws.d": Range(low=2, low_open=False, integer=True, increasing=False),
    "paper_b.critical_laws.n": Range(low=2, low_open=False, integer=True),
    "paper_b.critical_laws.gamma": Range(low=0.0),
    "paper_b.heat_drift.beta": Range(low=0.0, labelled=True),
    "paper_b.heat_drift.theory_beta": Range(low=0.0),
    "paper_b.output_law.d": Range(low=3, low_open=False, integer=True, increasing=False),
    "paper_b.output_law.n": Range(low=1, low_open=False, integer=True),
    "paper_b.output_law.gamma": Range(low=0.0),
    # critical exponent of beta*(n) (ours, issue 11 items 2-4; docs/paper-b-beyond.md)
    "paper_b_exponent.uniform.d": Range(low=3, low_open=False, integer=True),
    "paper_b_exponent.uniform.n": Range(low=2, low_open=False),
    "paper_b_exponent.subsphere.k": Range(low=3, low_open=False, integer=True),
    "paper_b_exponent.subsphere.n": Range(low=2, low_open=False),
    "paper_b_exponent.rope.d": Range(low=4, low_open=False, integer=True),
    "paper_b_exponent.rope.kappa_per_d": Range(low=0.0, low_open=False),
    "paper_b_exponent.rope.n": Range(low=2, low_open=False),
    "paper_b_exponent.rope_long.d": Range(low=4, low_open=False, integer=True),
    "paper_b_exponent.rope_long.n": Range(low=2, low_open=False),
    # critical-scale regimes (ours, issue 20; docs/regimes.md)
    "regimes.n": Range(low=3, low_open=False, high=1e7, high_open=False),
    "regimes.theory_n": Range(low=3, low_open=False, high=1e7, high_open=False),
    "regimes.finite_d.d": Range(low=3, low_open=False, high=4096, high_open=False, integer=True),
    "regimes.read_off.copy_cosine": Range(low=-1.0, high=1.0, high_open=False, increasing=False),
    # the explorer's theory grid (issue 29; docs/explorer.md): d-nodes in the theory's range
    "explorer.d": Range(low=3, low_open=False, high=4096, high_open=False, integer=True),
    "explorer.tier_d": Range(low=3, low_open=False, integer=True),
    "explorer.n_degree": Range(low=2, low_open=False, integer=True, increasing=False),
    "explorer.rho_degree": Range(low=1, low_open=False, integer=True, increasing=False),
}

#: Scalars and their ranges, by dotted key.
VALUES: dict[str, Range] = {
    "paper_a.n": Range(low=2, low_open=False, integer=True),
    "paper_a.trials": Range(low=1, low_open=False, integer=True),
    "paper_a.rho_per_job": Range(low=1, low_open=False, integer=True),
    "paper_a.alpha": Range(low=0.0, low_open=False),
    "paper_a.eta.trials": Range(low=1, low_open=False, integer=True),
    "paper_a.theorem_table.trials": Range(low=2, low_open=False, integer=True),  # SEs, z
    "paper_a.finite_size.trials": Range(low=2, low_open=False, integer=True),  # SEs, z
    "paper_a.scaling_rules.overlay_n": Range(low=2, low_open=False, integer=True),
    "paper_a.eta.probes": Range(low=1, low_open=False, integer=True),
    "finite_d.transition.trials": Range(low=2, low_open=False, integer=True),
    "finite_d.transition.rows": Range(low=1, low_open=False, integer=True),
    "finite_d.transition.read_off.n": Range(
        low=2, low_open=False, high=1e7, high_open=False, integer=True
    ),
    "finite_d.transition.read_off.d": Range(
        low=3, low_open=False, high=4096, high_open=False, integer=True
    ),
    "finite_d.intermediate.trials": Range(low=1, low_open=False, integer=True),
    "finite_d.intermediate.rows": Range(low=1, low_open=False, integer=True),
    "finite_d.intermediate.mass": Range(low=0.0, high=1.0, high_open=False),
    "causal.n": Range(low=2, low_open=False, integer=True),
    "causal.d": Range(low=1, low_open=False, integer=True),
    "causal.trials": Range(low=1, low_open=False, integer=True),
    "causal.self_weight.n": Range(low=2, low_open=False, integer=True),
    "causal.self_weight.bins": Range(low=1, low_open=False, integer=True),
    "causal.self_weight.trials": Range(low=1, low_open=False, integer=True),
    "causal.rules_simulated.d": Range(
        low=3, low_open=False, high=4096, high_open=False, integer=True
    ),
    "causal.rules_simulated.block": Range(low=2, low_open=False, integer=True),
    "causal.rules_simulated.trials": Range(low=1, low_open=False, integer=True),
    "realistic.learned_qk.n": Range(low=4, low_open=False, integer=True),
    "realistic.learned_qk.d": Range(low=2, low_open=False, integer=True),
    "realistic.learned_qk.rho": Range(low=0.0, high=1.0),
    "realistic.learned_qk.trials": Range(low=1, low_open=False, integer=True),
    "realistic.sink.n": Range(low=4, low_open=False, integer=True),
    "realistic.sink.d": Range(low=2, low_open=False, integer=True),
    "realistic.sink.rho": Range(low=0.0, high=1.0),
    "realistic.sink.trials": Range(low=1, low_open=False, integer=True),
    "realistic.depth.n": Range(low=4, low_open=False, integer=True),
    "realistic.depth.d": Range(low=2, low_open=False, integer=True),
    "realistic.depth.rho": Range(low=0.0, high=1.0),
    "realistic.depth.layers": Range(low=1, low_open=False, integer=True),
    "realistic.depth.trials": Range(low=1, low_open=False, integer=True),
    # Paper B
    "paper_b.vector_fields.n": Range(low=2, low_open=False, integer=True),
    "paper_b.vector_fields.queries": Range(low=1, low_open=False, integer=True),
    "paper_b.vector_fields.sweep_contexts": Range(low=1, low_open=False, integer=True),
    "paper_b.phase.d": Range(low=2, low_open=False, integer=True),
    "paper_b.phase.trials": Range(low=2, low_open=False, integer=True),
    "paper_b.phase.limit_trials": Range(low=2, low_open=False, integer=True),
    "paper_b.profile.n": Range(low=2, low_open=False, integer=True),
    "paper_b.profile.beta_exponent": Range(low=0.0),
    "paper_b.profile.trials": Range(low=2, low_open=False, integer=True),
    "paper_b.critical_laws.trials": Range(low=2, low_open=False, integer=True),
    "paper_b.critical_laws.limit_trials": Range(low=2, low_open=False, integer=True),
    "paper_b.heat_drift.n": Range(low=2, low_open=False, integer=True),
    "paper_b.heat_drift.target_se": Range(low=0.0),
    "paper_b.heat_drift.min_contexts": Range(low=2, low_open=False, integer=True),
    "paper_b.heat_drift.max_contexts": Range(low=2, low_open=False, integer=True),
    "paper_b.heat_drift.cut": Range(low=10.0, low_open=False),  # neglected weight < e^-cut / n
    "paper_b.output_law.trials": Range(low=2, low_open=False, integer=True),
    "paper_b.output_law.limit_trials": Range(low=2, low_open=False, integer=True),
    "paper_b.output_law.plot_points": Range(low=2, low_open=False, integer=True),
    "paper_b_exponent.level": Range(low=0.0, high=1.0),
    "paper_b_exponent.upper_n_min": Range(low=0.0, low_open=False),
    "paper_b_exponent.uniform.contexts": Range(low=8, low_open=False, integer=True),
    "paper_b_exponent.subsphere.d": Range(low=4, low_open=False, integer=True),
    "paper_b_exponent.subsphere.contexts": Range(low=8, low_open=False, integer=True),
    "paper_b_exponent.subsphere.full_keys_max_n": Range(low=0, low_open=False, integer=True),
    "paper_b_exponent.rope.base": Range(low=1.0),
    "paper_b_exponent.rope.contexts": Range(low=8, low_open=False, integer=True),
    "paper_b_exponent.rope_long.contexts": Range(low=8, low_open=False, integer=True),
    # benchmark suite (rule benchmark_suite)
    "benchmark.lambda.n": Range(low=2, low_open=False, integer=True),
    "benchmark.lambda.d": Range(low=1, low_open=False, integer=True),
    "benchmark.lambda.gammas": Range(low=1, low_open=False, integer=True),
    "benchmark.eta.n": Range(low=2, low_open=False, integer=True),
    "benchmark.eta.d": Range(low=1, low_open=False, integer=True),
    "benchmark.eta.probes": Range(low=1, low_open=False, integer=True),
    "benchmark.scaling.d": Range(low=1, low_open=False, integer=True),
    # the root of every SeedSequence (numpy takes any non-negative integer; 128 bits are plenty)
    "seed": Range(low=0, high=2**128 - 1, low_open=False, high_open=False, integer=True),
    # critical-scale regimes (issue 20; docs/regimes.md)
    "regimes.level": Range(low=0.0, high=1.0),
    "regimes.grid_points": Range(low=3, low_open=False, integer=True),
    "regimes.batches": Range(low=2, low_open=False, integer=True),
    "regimes.gap.d": Range(low=3, low_open=False, high=4096, high_open=False, integer=True),
    "regimes.gap.rho": Range(low=0.0, low_open=False, high=1.0),
    "regimes.gap.contexts": Range(low=4, low_open=False, integer=True),
    "regimes.rem.s": Range(low=0.0),
    "regimes.rem.contexts": Range(low=4, low_open=False, integer=True),
    "regimes.rem.truncation_eps": Range(low=0.0, high=1.0),
    "regimes.finite_d.rho": Range(low=0.0, low_open=False, high=1.0),
    "regimes.finite_d.contexts": Range(low=4, low_open=False, integer=True),
    "regimes.read_off.n": Range(low=3, low_open=False, high=1e7, high_open=False, integer=True),
    "regimes.read_off.d": Range(low=3, low_open=False, high=4096, high_open=False, integer=True),
    "regimes.read_off.rho": Range(low=0.0, low_open=False, high=1.0),
    "regimes.read_off.shift": Range(low=0.0, high=1.0),
    "regimes.read_off.contexts": Range(low=4, low_open=False, integer=True),
    # the explorer (issue 29; docs/explorer.md)
    "explorer.rho_max": Range(low=0.0, high=1.0),
    "explorer.heldout": Range(low=0, low_open=False, integer=True),
}


def _check_eta_trials(cfg: Config) -> None:
    if cfg.get("paper_a.eta.trials") > cfg.get("paper_a.trials"):
        fail("paper_a.eta.trials", "<= paper_a.trials (Figure 2 reuses Figure 1's draws)",
             cfg.get("paper_a.eta.trials"))  # fmt: skip


def _check_finite_d_intermediate_trials(cfg: Config) -> None:
    if cfg.get("finite_d.intermediate.trials") > cfg.get("paper_a.trials"):
        fail("finite_d.intermediate.trials",
             "<= paper_a.trials (the intermediate phase reuses Figure 1's draws)",
             cfg.get("finite_d.intermediate.trials"))  # fmt: skip


def _check_causal(cfg: Config) -> None:
    try:
        block = cfg.get("causal.rules_simulated.block")
        cfg.get("causal.self_weight.gamma_factors")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    n_min = min(cfg.grid("causal.rules_simulated.n"))
    if block > n_min:
        fail("causal.rules_simulated.block", f"<= the smallest causal.rules_simulated.n "
             f"({int(n_min)})", block)  # fmt: skip
    if not np.any(np.isclose(cfg.grid("causal.self_weight.gamma_factors"), 1.0)):
        fail("causal.self_weight.gamma_factors", "a grid containing 1 (gamma = gamma_c)",
             cfg.get("causal.self_weight.gamma_factors"))  # fmt: skip


def _check_realistic_rank(cfg: Config) -> None:
    try:
        d = cfg.get("realistic.learned_qk.d")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    r_max = max(cfg.ints("realistic.learned_qk.rank"))
    if r_max > d:
        fail("realistic.learned_qk.rank", f"ranks <= realistic.learned_qk.d ({d})", r_max)


def _check_paper_b(cfg: Config) -> None:
    try:
        cfg.get("paper_b.heat_drift.q")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    n = [int(round(v)) for v in cfg.grid("paper_b.phase.n")]
    if len(set(n)) != len(n):
        fail("paper_b.phase.n", "distinct after rounding to integers", n)
    q = cfg.get("paper_b.heat_drift.q")
    if not all(math.isfinite(v) for v in q) or math.hypot(*q) == 0:
        fail("paper_b.heat_drift.q", "three finite numbers, not all zero", q)
    if cfg.get("paper_b.heat_drift.max_contexts") < cfg.get("paper_b.heat_drift.min_contexts"):
        fail("paper_b.heat_drift.max_contexts", ">= paper_b.heat_drift.min_contexts",
             cfg.get("paper_b.heat_drift.max_contexts"))  # fmt: skip


def _check_paper_b_exponent(cfg: Config) -> None:
    try:
        d = cfg.get("paper_b_exponent.subsphere.d")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    k_max = max(cfg.ints("paper_b_exponent.subsphere.k"))
    if k_max >= d:
        fail("paper_b_exponent.subsphere.k", f"sub-sphere dimensions 3 <= k < "
             f"paper_b_exponent.subsphere.d ({d})", k_max)  # fmt: skip
    extra = set(cfg.ints("paper_b_exponent.rope_long.d")) - set(cfg.ints("paper_b_exponent.rope.d"))
    if extra:
        fail("paper_b_exponent.rope_long.d", "a subset of paper_b_exponent.rope.d (the long run "
             "shares the job of its d)", sorted(extra))  # fmt: skip
    for sec in ("rope", "rope_long"):
        bad = [v for v in cfg.ints(f"paper_b_exponent.{sec}.d") if v % 2]
        if bad:
            fail(f"paper_b_exponent.{sec}.d", "even head dimensions (RoPE rotates planes)", bad)
    for sec in ("uniform", "subsphere", "rope", "rope_long"):
        n = [int(round(v)) for v in cfg.grid(f"paper_b_exponent.{sec}.n")]
        if len(set(n)) != len(n) or len(n) < 4:
            fail(f"paper_b_exponent.{sec}.n", "at least 4 values, distinct after rounding to "
                 "integers (the exponent fits need them)", n)  # fmt: skip


def _check_regimes(cfg: Config) -> None:
    try:
        batches = cfg.get("regimes.batches")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    for sec in ("gap", "rem", "finite_d", "read_off"):
        if batches > cfg.get(f"regimes.{sec}.contexts"):
            fail("regimes.batches", f"<= regimes.{sec}.contexts "
                 f"({cfg.get(f'regimes.{sec}.contexts')})", batches)  # fmt: skip
    n = [int(round(v)) for v in cfg.grid("regimes.n")]
    if len(set(n)) != len(n):
        fail("regimes.n", "distinct after rounding to integers", n)


def _check_explorer(cfg: Config) -> None:
    try:
        d = cfg.ints("explorer.d")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    if d[0] != 3:
        fail("explorer.d", "d-nodes starting at 3 (the theory's smallest d; the page covers "
             "3 .. 4096)", d)  # fmt: skip
    tiers = cfg.ints("explorer.tier_d")
    if tiers[-1] < d[-1]:
        fail("explorer.tier_d", f"tiers whose last is >= the largest d-node ({d[-1]})", tiers)
    for key in ("explorer.n_degree", "explorer.rho_degree"):
        if len(cfg.ints(key)) != len(tiers):
            fail(key, f"one degree per tier of explorer.tier_d ({len(tiers)})", cfg.get(key))


def _check_backend(cfg: Config) -> None:
    # backend_memory_gb: null (detect per job) or a number > 0; backend: jax needs JAX and enough
    # memory (docs/gpu.md#choosing-the-backend)
    from attnscale.backend import check_workflow

    try:
        gb = cfg.get("backend_memory_gb")
    except KeyError:
        gb = None
    if gb is not None and (isinstance(gb, bool) or not isinstance(gb, (int, float))
                           or not Range(low=0.0).ok(gb)):  # fmt: skip
        fail("backend_memory_gb", "null or a finite number in (0, inf)", gb)
    check_workflow(cfg)


#: Checks that involve several keys: functions of the :class:`Config` that call :func:`fail`.
CHECKS: list = [_check_causal, _check_eta_trials, _check_finite_d_intermediate_trials,
                _check_realistic_rank, _check_paper_b, _check_paper_b_exponent,
                _check_regimes, _check_explorer, _check_backend]  # fmt: skip


class Config:
    """A validated configuration: dotted-key access, checked grids and exact labelled values."""

    def __init__(self, raw: dict):
        self.raw = raw
        self._grids: dict[str, np.ndarray] = {}

    def get(self, key: str):
        """The raw value at a dotted key (``"paper_a.eta.trials"``)."""
        node = self.raw
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(f"config has no key {key!r}")
            node = node[part]
        return node

    def grid(self, key: str) -> np.ndarray:
        """The expanded, range-checked grid at ``key`` (ranges in :data:`GRIDS`)."""
        if key not in self._grids:
            rng = GRIDS.get(key, Range())
            vals = expand_grid(self.get(key), key, increasing=rng.increasing)
            for v in vals:
                if not rng.ok(float(v)):
                    fail(key, f"a grid of {rng.text()}", float(v))
            if rng.labelled:
                labs = [label(v) for v in vals]
                for v, lab in zip(vals, labs, strict=True):
                    if float(lab) != float(v):
                        fail(key, f"values with at most {LABEL_DIGITS} decimals (they name "
                             "files)", float(v))  # fmt: skip
            self._grids[key] = vals
        return self._grids[key]

    def ints(self, key: str) -> list[int]:
        """An integer grid as a list of ``int``."""
        return [int(round(v)) for v in self.grid(key)]

    def labels(self, key: str) -> list[str]:
        """File-name labels of a labelled grid (exact by construction, see :meth:`grid`)."""
        return [label(v) for v in self.grid(key)]

    def exact(self, key: str, lab: str) -> float:
        """The grid value at ``key`` whose label is ``lab`` (raises if there is none)."""
        for v in self.grid(key):
            if label(v) == lab:
                return float(v)
        raise KeyError(f"{key} has no value labelled {lab!r}")

    def chunks(self, key: str, size: int) -> list[list[float]]:
        """The grid at ``key`` cut into consecutive pieces of ``size`` values (the last may be
        shorter): the work of one job each."""
        vals = [float(v) for v in self.grid(key)]
        return [vals[i : i + size] for i in range(0, len(vals), size)]

    def value(self, key: str):
        """A range-checked scalar (ranges in :data:`VALUES`)."""
        v = self.get(key)
        rng = VALUES.get(key)
        if rng is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not rng.ok(v):
                fail(key, f"one of {rng.text()}", v)
        return v


class SchemaError(ValueError):
    """``config.yaml`` does not match the JSON schema; the message is jsonschema's, which names
    the failing keyword and the schema path (``Failed validating 'minimum' in
    schema['properties']['paper_a']['properties']['trials']``)."""


def _inline_refs(node, folder: Path, cache: dict):
    """``node`` with every ``{$ref: <file>, ...}`` replaced by that schema file (refs inlined
    too), its sibling keys (``default``, ``description``: annotations only) kept on top."""
    if isinstance(node, list):
        return [_inline_refs(v, folder, cache) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _inline_refs(v, folder, cache) for k, v in node.items() if k != "$ref"}
    ref = node.get("$ref")
    if ref is None:
        return out
    if ref not in cache:
        cache[ref] = _inline_refs(_read_yaml(folder / ref), folder, cache)
    target = {k: v for k, v in cache[ref].items() if k != "$schema"}
    return {**target, **out}


def _read_yaml(path: Path):
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - safe loader


def read_schema(schema_path) -> dict:
    """The configuration schema as the workflow validates against it: the YAML file at
    ``schema_path`` with every ``$ref`` to a sibling file inlined."""
    schema_path = Path(schema_path)
    return _inline_refs(_read_yaml(schema_path), schema_path.parent, {})


def validate_schema(raw: dict, schema_path) -> None:
    """Validate ``raw`` against a JSON schema file (YAML), filling defaults in place.

    The semantics of :func:`snakemake.utils.validate` (JSON Schema 2020-12, each ``default``
    filled as its property is visited), with every ``$ref`` to a sibling schema file inlined
    once, so that section defaults are filled too and each file is read once. (Snakemake's own
    validate re-read a referenced file for every ``$ref``: 75 YAML loads, ~0.4 s of every parse
    and of every Slurm job.) Raises :class:`SchemaError` with jsonschema's message.
    """
    import jsonschema

    schema = read_schema(schema_path)
    base = jsonschema.Draft202012Validator
    validate_properties = base.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, sub):
        # the jsonschema FAQ's default-filling validator, as snakemake.utils.validate uses it
        if validator.is_type(instance, "object"):
            for name, subschema in properties.items():
                if "default" in subschema:
                    instance.setdefault(name, subschema["default"])
        yield from validate_properties(validator, properties, instance, sub)

    filling = jsonschema.validators.extend(base, {"properties": set_defaults})
    try:
        filling(schema).validate(raw)
    except jsonschema.ValidationError as err:
        raise SchemaError(f"Error validating config file.\n{err}") from None


def check(cfg: Config) -> Config:
    """Run every range check (:data:`GRIDS`, :data:`VALUES`, :data:`CHECKS`) on ``cfg``."""
    for key in GRIDS:
        try:
            cfg.get(key)
        except KeyError:
            continue
        cfg.grid(key)
    for key in VALUES:
        try:
            cfg.get(key)
        except KeyError:
            continue
        cfg.value(key)
    for fn in CHECKS:
        fn(cfg)
    return cfg


def load(raw: dict, schema: str | Path | None = None) -> Config:
    """Validate (schema, defaults, ranges) and wrap a configuration dict; see the module doc."""
    if schema is not None:
        validate_schema(raw, schema)
    return check(Config(raw))


def source_label(configfiles, workdir) -> str:
    """The configuration a run was made with, for the findings page's header: the config files in
    the order they were merged (the workflow's ``config.yaml`` first, then ``--configfile`` files,
    each relative to ``workdir`` where it lies below it; docs/pipeline.md#numbers-in-the-prose).
    Values set with ``--config`` are not visible here."""
    root = Path(workdir).resolve()
    names = []
    for f in configfiles:
        p = Path(f)
        p = (root / p).resolve() if not p.is_absolute() else p.resolve()
        names.append(str(p.relative_to(root)) if p.is_relative_to(root) else str(p))
    names = list(dict.fromkeys(names))
    names.sort(key=lambda n: n != "config.yaml")  # stable: config.yaml first, others in order
    return " + ".join(names) or "unknown"
