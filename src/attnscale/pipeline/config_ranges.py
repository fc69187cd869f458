"""The allowed range of every configuration value, in one place (docs/pipeline.md#configuration).

:data:`GRIDS` holds the range of every grid (a list, or ``{start, stop, num, spacing}``,
:func:`expand_grid`) and :data:`VALUES` that of every scalar, by dotted key; the JSON schemas in
``workflow/schemas/`` carry types and defaults only (``tests/test_schema.py`` checks that every
number of the schema has exactly one range here). A value outside its range is refused by
:func:`fail` with ``config error: <key> must be <allowed range>; got <value>``. The checks that
involve several keys are in :mod:`attnscale.pipeline.config_checks`; :mod:`attnscale.pipeline.config`
runs them all and is where these names are documented (they import from there too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "LABEL_DIGITS",
    "ConfigError",
    "fail",
    "expand_grid",
    "label",
    "Range",
    "GRIDS",
    "VALUES",
    "CHOICES",
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
    "benchmark.sampled.n": Range(low=2, low_open=False, integer=True),
    "benchmark.sampled.d": Range(low=1, low_open=False, integer=True, increasing=False),
    # finite d (issue 9): the theory's range is 3 <= d <= 4096, 2 <= n <= 1e7, 0 <= rho < 1
    "finite_d.transition.n": Range(low=3, low_open=False, high=1e7, high_open=False, integer=True),
    "finite_d.transition.d": Range(low=3, low_open=False, high=4096, high_open=False, integer=True),
    "finite_d.transition.rho": Range(low=0.0, low_open=False, high=1.0),
    "finite_d.transition.theory_n": Range(low=2, low_open=False, high=1e7, high_open=False),
    "finite_d.eta_check.x": Range(low=0.0),
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
    "regimes.ties_finite_d.d": Range(
        low=3, low_open=False, high=4096, high_open=False, integer=True
    ),
    "regimes.rem_orders.n": Range(low=3, low_open=False, high=1e30, high_open=False),
    "regimes.rem_orders.factors": Range(low=0.0),
    "regimes.read_off.copy_cosine": Range(low=-1.0, high=1.0, high_open=False, increasing=False),
    # transition sharpness against context length (ours, issue 27; docs/long-context.md): the
    # finite-d theory's range, n <= 1e7 (sharpness.sizes: config_checks)
    "sharpness.n": Range(low=3, low_open=False, high=1e7, high_open=False, integer=True),
    "sharpness.rho": Range(low=0.0, high=1.0),
    "sharpness.x": Range(low=0.0),
    # a real transformer (issue 36; docs/real-transformer.md): windows within 512 positions
    "transformer.n": Range(low=8, low_open=False, high=512, high_open=False, integer=True),
    "transformer.multipliers": Range(low=0.0),
    "transformer.global.multipliers": Range(low=0.0),
    "training.lm.probes.multipliers": Range(low=0.0),
    "training.retrieval.probes.multipliers": Range(low=0.0),
    # trained models (issue 44; docs/training.md)
    "training.retrieval.test_n": Range(low=2, low_open=False, integer=True),
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
    "paper_a.regenerate_n": Range(low=2, low_open=False, integer=True),
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
    "finite_d.eta_check.n": Range(low=3, low_open=False, high=8192, high_open=False, integer=True),
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
    "benchmark.sampled.m": Range(low=2, low_open=False, integer=True),
    "benchmark.sampled.gammas": Range(low=1, low_open=False, integer=True),
    "benchmark.sampled.max_gib": Range(low=0.0),
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
    "regimes.ties_finite_d.contexts": Range(low=4, low_open=False, integer=True),
    "regimes.read_off.n": Range(low=3, low_open=False, high=1e7, high_open=False, integer=True),
    "regimes.read_off.d": Range(low=3, low_open=False, high=4096, high_open=False, integer=True),
    "regimes.read_off.rho": Range(low=0.0, low_open=False, high=1.0),
    "regimes.read_off.shift": Range(low=0.0, high=1.0),
    "regimes.read_off.contexts": Range(low=4, low_open=False, integer=True),
    # transition sharpness against context length (ours, issue 27; docs/long-context.md)
    "sharpness.rows": Range(low=2, low_open=False, integer=True),
    "sharpness.probes": Range(low=1, low_open=False, integer=True),
    "sharpness.trials": Range(low=2, low_open=False, integer=True),
    # a real transformer (issue 36; docs/real-transformer.md)
    "transformer.windows": Range(low=2, low_open=False, integer=True),
    "transformer.rows": Range(low=4, low_open=False, integer=True),
    "transformer.position_bands": Range(low=1, low_open=False, integer=True),
    "transformer.position_band": Range(low=2, low_open=False, integer=True),
    "transformer.calibration_parts": Range(low=0, low_open=False, integer=True),
    "transformer.n_ref": Range(low=8, low_open=False, high=512, high_open=False, integer=True),
    "transformer.n_train": Range(low=2, low_open=False, integer=True),
    "transformer.global.n": Range(low=8, low_open=False, high=512, high_open=False, integer=True),
    "transformer.global.windows": Range(low=2, low_open=False, integer=True),
    "transformer.bootstrap.block": Range(low=1, low_open=False, integer=True),
    "transformer.bootstrap.resamples": Range(low=20, low_open=False, integer=True),
    "transformer.bootstrap.calibration_replicates": Range(low=10, low_open=False, integer=True),
    # trained models (issue 44; docs/training.md)
    "training.retrieval.d": Range(low=4, low_open=False, integer=True),
    "training.retrieval.heads": Range(low=1, low_open=False, integer=True),
    "training.retrieval.keys": Range(low=4, low_open=False, integer=True),
    "training.retrieval.values": Range(low=2, low_open=False, integer=True),
    "training.retrieval.n_min": Range(low=2, low_open=False, integer=True),
    "training.retrieval.n_train": Range(low=3, low_open=False, integer=True),
    "training.retrieval.seeds": Range(low=2, low_open=False, integer=True),
    "training.retrieval.steps": Range(low=1, low_open=False, integer=True),
    "training.retrieval.batch": Range(low=1, low_open=False, integer=True),
    "training.retrieval.lr": Range(low=0.0),
    "training.retrieval.warmup": Range(low=0, low_open=False, integer=True),
    "training.retrieval.weight_decay": Range(low=0.0, low_open=False),
    "training.retrieval.log_every": Range(low=1, low_open=False, integer=True),
    "training.retrieval.examples": Range(low=8, low_open=False, integer=True),
    "training.retrieval.probes.contexts": Range(low=1, low_open=False, integer=True),
    "training.retrieval.probes.rows": Range(low=2, low_open=False, integer=True),
    "training.lm.heldout": Range(low=0.0, high=1.0),
    "training.lm.d": Range(low=4, low_open=False, integer=True),
    "training.lm.heads": Range(low=1, low_open=False, integer=True),
    "training.lm.probes.windows": Range(low=1, low_open=False, integer=True),
    "training.lm.probes.rows": Range(low=2, low_open=False, integer=True),
    "training.lm.layers": Range(low=1, low_open=False, integer=True),
    "training.lm.context": Range(low=4, low_open=False, integer=True),
    "training.lm.seeds": Range(low=2, low_open=False, integer=True),
    "training.lm.steps": Range(low=1, low_open=False, integer=True),
    "training.lm.batch": Range(low=1, low_open=False, integer=True),
    "training.lm.lr": Range(low=0.0),
    "training.lm.warmup": Range(low=0, low_open=False, integer=True),
    "training.lm.weight_decay": Range(low=0.0, low_open=False),
    "training.lm.log_every": Range(low=1, low_open=False, integer=True),
    "training.lm.windows": Range(low=1, low_open=False, integer=True),
    "training.lm.length_factor": Range(low=2, low_open=False, integer=True),
    # the explorer (issue 29; docs/explorer.md)
    "explorer.rho_max": Range(low=0.0, high=1.0),
    "explorer.heldout": Range(low=0, low_open=False, integer=True),
}


#: Values that are one of a few words (or null) or a number in a range, by dotted key: the
#: allowed words and the range of the numbers (checked by
#: :func:`attnscale.pipeline.config_checks.check_choices`).
CHOICES: dict[str, tuple[tuple, Range]] = {
    # rows behind lambda and eta: all, or m sampled rows (docs/long-context.md#the-rows-choice);
    # m < n is checked against the job's n by the entry functions
    "paper_a.rows": (("all",), Range(low=2, low_open=False, integer=True)),
    # the theorem table's n: null (paper_a.n) or its own
    "paper_a.theorem_table.n": ((None,), Range(low=2, low_open=False, integer=True)),
}
