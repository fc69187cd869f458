"""Configuration checks that involve several keys (docs/pipeline.md#configuration).

Each check is a function of a :class:`attnscale.pipeline.config.Config` that calls
:func:`attnscale.pipeline.config_ranges.fail` with the key at fault; :data:`CHECKS` lists them in
the order :func:`attnscale.pipeline.config.check` runs them, after the single-key ranges. The last
one checks ``backend: jax`` (docs/gpu.md#choosing-the-backend): JAX must be importable and the
largest lambda-type job of the configuration (:data:`LAMBDA_JOBS`) must fit the memory budget.
Which configuration keys size those jobs is the workflow's knowledge, kept here;
:mod:`attnscale.backend` sizes the kernel for given ``(n, d)``.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from .config_ranges import CHOICES, Range, fail

__all__ = ["CHECKS", "LAMBDA_JOBS", "check_backend", "check_choices", "lambda_jobs"]


def check_choices(cfg) -> None:
    """Each key of :data:`attnscale.pipeline.config_ranges.CHOICES`: one of its words (or null)
    or a number in its range."""
    for key, (words, rng) in CHOICES.items():
        try:
            v = cfg.get(key)
        except KeyError:
            continue
        if v in words and not isinstance(v, bool):
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not rng.ok(v):
            allowed = " or ".join("null" if w is None else repr(w) for w in words)
            fail(key, f"{allowed} or one of {rng.text()}", v)


def _check_eta_trials(cfg) -> None:
    if cfg.get("paper_a.eta.trials") > cfg.get("paper_a.trials"):
        fail(
            "paper_a.eta.trials",
            "<= paper_a.trials (Figure 2 reuses Figure 1's draws)",
            cfg.get("paper_a.eta.trials"),
        )


def _check_finite_d_intermediate_trials(cfg) -> None:
    if cfg.get("finite_d.intermediate.trials") > cfg.get("paper_a.trials"):
        fail(
            "finite_d.intermediate.trials",
            "<= paper_a.trials (the intermediate phase reuses Figure 1's draws)",
            cfg.get("finite_d.intermediate.trials"),
        )


def _check_causal(cfg) -> None:
    try:
        block = cfg.get("causal.rules_simulated.block")
        cfg.get("causal.self_weight.gamma_factors")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    n_min = min(cfg.grid("causal.rules_simulated.n"))
    if block > n_min:
        fail(
            "causal.rules_simulated.block",
            f"<= the smallest causal.rules_simulated.n ({int(n_min)})",
            block,
        )
    if not np.any(np.isclose(cfg.grid("causal.self_weight.gamma_factors"), 1.0)):
        fail(
            "causal.self_weight.gamma_factors",
            "a grid containing 1 (gamma = gamma_c)",
            cfg.get("causal.self_weight.gamma_factors"),
        )


def _check_realistic_rank(cfg) -> None:
    try:
        d = cfg.get("realistic.learned_qk.d")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    r_max = max(cfg.ints("realistic.learned_qk.rank"))
    if r_max > d:
        fail("realistic.learned_qk.rank", f"ranks <= realistic.learned_qk.d ({d})", r_max)


def _check_paper_b(cfg) -> None:
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
        fail(
            "paper_b.heat_drift.max_contexts",
            ">= paper_b.heat_drift.min_contexts",
            cfg.get("paper_b.heat_drift.max_contexts"),
        )


def _check_paper_b_exponent(cfg) -> None:
    try:
        d = cfg.get("paper_b_exponent.subsphere.d")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    k_max = max(cfg.ints("paper_b_exponent.subsphere.k"))
    if k_max >= d:
        fail(
            "paper_b_exponent.subsphere.k",
            f"sub-sphere dimensions 3 <= k < paper_b_exponent.subsphere.d ({d})",
            k_max,
        )
    extra = set(cfg.ints("paper_b_exponent.rope_long.d")) - set(cfg.ints("paper_b_exponent.rope.d"))
    if extra:
        fail(
            "paper_b_exponent.rope_long.d",
            "a subset of paper_b_exponent.rope.d (the long run shares the job of its d)",
            sorted(extra),
        )
    for sec in ("rope", "rope_long"):
        bad = [v for v in cfg.ints(f"paper_b_exponent.{sec}.d") if v % 2]
        if bad:
            fail(f"paper_b_exponent.{sec}.d", "even head dimensions (RoPE rotates planes)", bad)
    for sec in ("uniform", "subsphere", "rope", "rope_long"):
        n = [int(round(v)) for v in cfg.grid(f"paper_b_exponent.{sec}.n")]
        if len(set(n)) != len(n) or len(n) < 4:
            fail(
                f"paper_b_exponent.{sec}.n",
                "at least 4 values, distinct after rounding to "
                "integers (the exponent fits need them)",
                n,
            )


def _check_regimes(cfg) -> None:
    try:
        batches = cfg.get("regimes.batches")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    for sec in ("gap", "rem", "finite_d", "ties_finite_d", "read_off"):
        if batches > cfg.get(f"regimes.{sec}.contexts"):
            fail(
                "regimes.batches",
                f"<= regimes.{sec}.contexts ({cfg.get(f'regimes.{sec}.contexts')})",
                batches,
            )
    n = [int(round(v)) for v in cfg.grid("regimes.n")]
    if len(set(n)) != len(n):
        fail("regimes.n", "distinct after rounding to integers", n)


def _check_explorer(cfg) -> None:
    try:
        d = cfg.ints("explorer.d")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    if d[0] != 3:
        fail(
            "explorer.d",
            "d-nodes starting at 3 (the theory's smallest d; the page covers 3 .. 4096)",
            d,
        )
    tiers = cfg.ints("explorer.tier_d")
    if tiers[-1] < d[-1]:
        fail("explorer.tier_d", f"tiers whose last is >= the largest d-node ({d[-1]})", tiers)
    for key in ("explorer.n_degree", "explorer.rho_degree"):
        if len(cfg.ints(key)) != len(tiers):
            fail(key, f"one degree per tier of explorer.tier_d ({len(tiers)})", cfg.get(key))


def _check_sharpness(cfg) -> None:
    try:
        sizes = cfg.get("sharpness.sizes")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    if not sizes:
        fail("sharpness.sizes", "a non-empty list of {d, n_max}", sizes)
    n_min = min(cfg.ints("sharpness.n"))
    d_range = Range(low=3, low_open=False, high=4096, high_open=False, integer=True)
    n_range = Range(low=n_min, low_open=False, high=1e7, high_open=False, integer=True)
    for k, s in enumerate(sizes):
        if not d_range.ok(s["d"]):
            fail(f"sharpness.sizes[{k}].d", d_range.text(), s["d"])
        if not n_range.ok(s["n_max"]):
            fail(
                f"sharpness.sizes[{k}].n_max",
                f"{n_range.text()} (>= the smallest sharpness.n)",
                s["n_max"],
            )
    ds = [s["d"] for s in sizes]
    if any(b <= a for a, b in zip(ds, ds[1:], strict=False)):
        fail("sharpness.sizes", "entries with increasing d", ds)
    _check_points(
        cfg,
        "sharpness.calibration",
        {
            "d": (2, None),
            "n": (2, None),
            "draws": (2, None),
            "rows": (2, None),
            "experiments": (3, None),
        },
    )
    _check_points(
        cfg,
        "sharpness.fixed_norm",
        {"d": (3, 4096), "n": (2, None), "draws": (2, None), "rows": (2, None)},
    )


def _check_points(cfg, key: str, ints: dict, gamma: bool = False) -> None:
    """A list of measurement points (``sharpness.calibration``, ``paper_a.z0_spread``): each
    integer field within its bounds, ``rho`` in (0, 1), and for ``gamma`` a non-empty list of
    values > 0."""
    try:
        points = cfg.get(key)
    except KeyError:
        return
    rho_range = Range(low=0.0, high=1.0)
    for k, p in enumerate(points or []):
        for field, (low, high) in ints.items():
            r = Range(low=low, low_open=False, high=high, high_open=False, integer=True)
            if not r.ok(p[field]):
                fail(f"{key}[{k}].{field}", r.text(), p[field])
        if not rho_range.ok(p["rho"]):
            fail(f"{key}[{k}].rho", rho_range.text(), p["rho"])
        if gamma and (not p["gamma"] or any(not g > 0 for g in p["gamma"])):
            fail(f"{key}[{k}].gamma", "a non-empty list of values > 0", p["gamma"])
        if "rows" in p and "n" in p and p["rows"] > p["n"]:
            fail(f"{key}[{k}].rows", f"<= its n ({p['n']})", p["rows"])


def _check_z0_spread(cfg) -> None:
    _check_points(
        cfg,
        "paper_a.z0_spread",
        {"n": (2, None), "d": (2, None), "draws": (3, None), "rows": (2, None)},
        gamma=True,
    )


def _check_eta_check(cfg) -> None:
    """``finite_d.eta_check.points``: d in [3, 4096], rho in [0, 1), draws >= 2, distinct (d, rho)
    (docs/finite-d.md#mean-field-eta-against-the-exact-eta)."""
    key = "finite_d.eta_check.points"
    try:
        points = cfg.get(key)
    except KeyError:
        return
    ranges = {
        "d": Range(low=3, low_open=False, high=4096, high_open=False, integer=True),
        "rho": Range(low=0.0, low_open=False, high=1.0),
        "draws": Range(low=2, low_open=False, integer=True),
    }
    seen = set()
    for k, p in enumerate(points):
        for field, r in ranges.items():
            if not r.ok(p[field]):
                fail(f"{key}[{k}].{field}", r.text(), p[field])
        if (p["d"], p["rho"]) in seen:
            fail(f"{key}[{k}]", "a (d, rho) not listed before", p)
        seen.add((p["d"], p["rho"]))


def _check_transformer(cfg) -> None:
    try:
        n = cfg.ints("transformer.n")
    except KeyError:  # section absent (only the schema's defaults create it)
        return
    if cfg.get("transformer.n_ref") not in n:
        fail("transformer.n_ref", f"one of transformer.n ({n})", cfg.get("transformer.n_ref"))
    parts, windows = cfg.get("transformer.calibration_parts"), cfg.get("transformer.windows")
    block = cfg.get("transformer.bootstrap.block")
    if parts and (parts < 2 or windows // parts <= block):
        fail(
            "transformer.calibration_parts",
            f"0, or at least 2 parts of more than transformer.bootstrap.block ({block}) of the "
            f"{windows} windows (a part of one block has no bootstrap spread)",
            parts,
        )
    widths_n = cfg.get("transformer.widths_n")
    if widths_n is not None and (not widths_n or any(v not in n for v in widths_n)):
        fail(
            "transformer.widths_n",
            f"null or a non-empty list of values of transformer.n ({n})",
            widths_n,
        )
    if not np.any(np.isclose(cfg.grid("transformer.multipliers"), 1.0)):
        fail(
            "transformer.multipliers",
            "a grid containing 1 (the trained scale)",
            cfg.get("transformer.multipliers"),
        )


#: The jobs that run the lambda-type kernels (Paper A's lambda and eta grids, the causal lambda
#: map): what they are, and the configuration keys of their ``n`` and ``d`` (a grid of d: its
#: largest value counts).
LAMBDA_JOBS = [
    ("Figures 1 and 2 (paper_a.n, paper_a.d)", "paper_a.n", "paper_a.d"),
    ("causal lambda map (causal.n, causal.d)", "causal.n", "causal.d"),
]


def lambda_jobs(cfg) -> list[tuple[str, int, int]]:
    """The largest ``(what, n, d)`` of each configured job of :data:`LAMBDA_JOBS` (a section the
    configuration lacks is skipped)."""
    out = []
    for what, nkey, dkey in LAMBDA_JOBS:
        with contextlib.suppress(KeyError):
            n, d = cfg.get(nkey), cfg.get(dkey)
            out.append((what, int(n), int(max(d if isinstance(d, list) else [d]))))
    return out


def check_backend(cfg) -> None:
    """Parse-time check of ``backend`` and ``backend_memory_gb`` (docs/gpu.md#choosing-the-backend):
    ``backend: jax`` needs JAX and enough memory for the largest job of :data:`LAMBDA_JOBS`."""
    # backend_memory_gb: null (detect per job) or a number > 0; backend: jax needs JAX and enough
    # memory for the largest lambda-type job (docs/gpu.md#choosing-the-backend)
    from attnscale.backend import check_jax_fits, check_name

    try:
        gb = cfg.get("backend_memory_gb")
    except KeyError:
        gb = None
    if gb is not None and (
        isinstance(gb, bool) or not isinstance(gb, (int, float)) or not Range(low=0.0).ok(gb)
    ):
        fail("backend_memory_gb", "null or a finite number in (0, inf)", gb)
    try:
        name = cfg.get("backend")
    except KeyError:
        return
    check_name(name)
    if name == "jax":
        check_jax_fits(lambda_jobs(cfg), gb)


#: Checks that involve several keys: functions of the :class:`Config` that call :func:`fail`.
CHECKS: list = [
    check_choices,
    _check_causal,
    _check_eta_trials,
    _check_finite_d_intermediate_trials,
    _check_realistic_rank,
    _check_paper_b,
    _check_paper_b_exponent,
    _check_regimes,
    _check_explorer,
    _check_sharpness,
    _check_z0_spread,
    _check_eta_check,
    _check_transformer,
    check_backend,
]
