"""Entry functions of the critical-exponent experiments (ours) on the sphere: ``beta*(n)`` at a
fixed level of ``E A_(1)`` for uniform keys (d = 3 .. 10) and for keys on a great sub-sphere, and
the building blocks every exponent curve shares (docs/paper-b-beyond.md#critical-exponent-across-dimensions,
docs/paper-b-beyond.md#keys-on-a-submanifold).

RoPE-rotated keys are :mod:`attnscale.experiments.paper_b_exponent_rope`, the exponent fits
:mod:`attnscale.experiments.paper_b_exponent_fits`.

Every function is pure (tables in, table out) and draws only from
:func:`attnscale.core.seeding.job_rng` with a spawn key naming the experiment, its parameters and ``n``:
the contexts at different ``n`` are independent (the fit treats the points as independent), and
within one ``n`` the same contexts serve every beta of the root search (common random numbers).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.pipeline.io import provenance_columns
from attnscale.sphere import critical_exponent as ce
from attnscale.sphere import structured_keys as sk

__all__ = [
    "uniform_points",
    "subsphere_points",
    "sphere_points",
    "n_grid",
    "check_contexts_level",
    "as_list",
    "points_table",
]

UNIFORM_STREAM = "paper_b/exponent/uniform"
SUBSPHERE_STREAM = "paper_b/exponent/subsphere"

#: [choice] below this many keys every context is drawn in full (no cap) to bracket the root.
DENSE_MAX_N = 1000


def n_grid(n) -> np.ndarray:
    """The context sizes ``n`` of a curve as integers, checked: ``>= 2`` and strictly increasing
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions)."""
    v = check_vector("n", n, low=2.0)
    if np.any(np.diff(v) <= 0):
        raise ValueError(f"n must be strictly increasing, got {v.tolist()}")
    return np.round(v).astype(np.int64)


def check_contexts_level(contexts, level) -> tuple[int, float]:
    """``(contexts, level)`` checked: at least 8 contexts per ``n``, the level of ``E A_(1)`` in
    ``(0, 1)`` (docs/paper-b-beyond.md#critical-exponent-across-dimensions)."""
    return check_int("contexts", contexts, minimum=8), check_real(
        "level", level, low=0.0, high=1.0, low_open=True, high_open=True
    )


def _solve_dense(T, n: int, guess: float, level: float) -> dict:
    """``beta*`` for dense contexts ``T`` (``(size, n)``): bracket on all keys, then prune."""
    Tf, owner, size = ce.dense_to_flat(T)
    lo, hi = ce.bracket_dense(Tf, owner, size, guess, level)
    Tp, op = ce.prune_flat(Tf, owner, size, lo, n)
    res = ce.solve_critical_beta(Tp, op, size, lo, hi, level)
    res.update(keys_kept=Tp.size / size, tail_bound=ce.TAIL_EPS)  # prune_flat: <= n keys of eps/n
    return res


def _cap_curve(k: int, ns, contexts: int, level: float, root_seed: int, key_of) -> list[dict]:
    """``beta*(n)`` along ``ns`` for keys uniform on ``S^{k-1}`` (dense below DENSE_MAX_N,
    exact cap samples above; each ``n`` guesses from the previous one with slope ``2/(k-1)``)."""
    records, guess, prev = [], 1.0, None
    for n in ns:
        n = int(n)
        if prev is not None:
            guess = guess * (n / prev) ** (2.0 / (k - 1))
        if n <= DENSE_MAX_N:
            key = key_of(n, 0)
            rng = job_rng(root_seed, key)
            a = (k - 1) / 2
            res = _solve_dense(2.0 * rng.beta(a, a, size=(contexts, n)), n, guess, level)
            res.update(attempt=0, spawn=key)
        else:
            res = ce.critical_beta_cap(
                n, k, contexts, guess, lambda j, n=n: job_rng(root_seed, key_of(n, j)), level=level
            )
            res.update(keys_kept=res.pop("keys_in_cap"), spawn=key_of(n, res["attempt"]))
        guess, prev = res["beta_star"], n
        records.append({"n": n, **res})
    return records


def points_table(records, root_seed, base: dict, params: dict) -> pd.DataFrame:
    """The table of one curve: the columns of ``base`` (family, method, d, k, ...), then per
    record of ``records`` (one root per ``n``) ``n``, ``beta_star``, its ``se``, the mean and sd of
    ``A_(1)`` at the root, ``slope``, ``keys_kept``, ``tail_bound``, ``attempt`` and the
    provenance of the row's draws (``params`` with its ``n``)
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions)."""
    out = []
    for r in records:
        out.append(
            {
                **base,
                "n": r["n"],
                "beta_star": r["beta_star"],
                "se": r["se"],
                "mean_a1": r["mean_a1"],
                "sd_a1": r["sd_a1"],
                "slope": r["slope"],
                "keys_kept": r["keys_kept"],
                "tail_bound": r["tail_bound"],
                "attempt": r["attempt"],
                **provenance_columns(root_seed, r["spawn"], {**params, "n": r["n"]}),
            }
        )
    return pd.DataFrame(out)


# =========================================================================== curves
def as_list(name: str, v) -> list:
    """``v`` as a non-empty list (one value or a list of them, e.g. several ``d``)."""
    vals = list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]
    if not vals:
        raise ValueError(f"{name} must be a value or a non-empty list")
    return vals


def _uniform_curve(*, d: int, n, contexts: int, level: float, root_seed: int) -> pd.DataFrame:
    """``beta*(n)`` for ``n`` i.i.d. uniform keys on ``S^{d-1}`` (exact D2Q Beta law, exact caps)
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions).

    Returns one row per ``n``: ``beta_star``, ``se`` (delta method), the mean and sd of ``A_(1)``
    at the root, ``keys_kept`` (mean keys per context after the cap / pruning), ``tail_bound``
    (largest bound on the relative weight of the keys not drawn), ``alpha_theory = 2/(d-1)``.
    """
    d = check_int("d", d, minimum=3)
    contexts, level = check_contexts_level(contexts, level)
    grid = n_grid(n)
    params = {"d": d, "contexts": contexts, "level": level}
    records = _cap_curve(
        d, grid, contexts, level, root_seed, lambda m, j: spawn_key(UNIFORM_STREAM, d, m, j)
    )
    base = {
        "family": "uniform",
        "method": "d2q",
        "d": d,
        "k": d,
        "kappa": np.nan,
        "base": np.nan,
        "level": level,
        "contexts": contexts,
        "alpha_theory": 2.0 / (d - 1),
    }
    return points_table(records, root_seed, base, params)


def _subsphere_curve(
    *, d: int, k: int, n, contexts: int, level: float, full_keys_max_n: int, root_seed: int
) -> pd.DataFrame:
    """``beta*(n)`` for keys uniform on a great sub-sphere ``S^{k-1}`` of ``S^{d-1}`` through ``q``
    (docs/paper-b-beyond.md#keys-on-a-submanifold).

    Two methods, independent draws: ``method = "full"`` draws the keys in ``R^d``
    (:func:`attnscale.sphere.structured_keys.sample_subsphere`, a random sub-sphere per context,
    ``q = e_1``) for ``n <= full_keys_max_n``; ``method = "d2q"`` uses the exact D2Q law
    ``T/2 ~ Beta((k-1)/2, (k-1)/2)`` with exact caps for the whole grid.
    ``alpha_theory = 2/(k-1)``.
    """
    d, k = sk.check_subsphere(d, k)
    if k < 3:
        raise ValueError(f"k must be >= 3 for the exponent experiment (alpha = 2/(k-1)), got {k}")
    contexts, level = check_contexts_level(contexts, level)
    full_keys_max_n = check_int("full_keys_max_n", full_keys_max_n, minimum=0)
    grid = n_grid(n)
    params = {"d": d, "k": k, "contexts": contexts, "level": level}
    base = {
        "family": "subsphere",
        "d": d,
        "k": k,
        "kappa": np.nan,
        "base": np.nan,
        "level": level,
        "contexts": contexts,
        "alpha_theory": 2.0 / (k - 1),
    }
    records = _cap_curve(
        k, grid, contexts, level, root_seed, lambda m, j: spawn_key(SUBSPHERE_STREAM, d, k, 0, m, j)
    )
    out = [points_table(records, root_seed, {**base, "method": "d2q"}, {**params, "method": "d2q"})]
    full_rows, guess = [], records[0]["beta_star"]
    q = np.zeros(d)
    q[0] = 1.0
    for m in grid[grid <= full_keys_max_n]:
        m = int(m)
        key = spawn_key(SUBSPHERE_STREAM, d, k, 1, m, 0)
        rng = job_rng(root_seed, key)
        T = np.empty((contexts, m))
        for i in range(contexts):
            T[i] = 1.0 - sk.sample_subsphere(m, q, k, rng) @ q
        res = _solve_dense(np.clip(T, 0.0, 2.0), m, guess, level)
        guess = res["beta_star"]
        full_rows.append({"n": m, **res, "attempt": 0, "spawn": key})
    if full_rows:
        out.append(
            points_table(
                full_rows, root_seed, {**base, "method": "full"}, {**params, "method": "full"}
            )
        )
    return pd.concat(out, ignore_index=True)


# =========================================================================== entry functions
def uniform_points(*, d, n, contexts: int, level: float, root_seed: int) -> pd.DataFrame:
    """``beta*(n)`` for ``n`` i.i.d. uniform keys on ``S^{d-1}``, for one ``d`` or a list
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions).

    Exact D2Q Beta law, dense contexts up to :data:`DENSE_MAX_N` keys and exact caps above
    (:func:`attnscale.sphere.critical_exponent.critical_beta_cap`). One row per ``(d, n)``:
    ``beta_star``, ``se`` (delta method), the mean and sd of ``A_(1)`` at the root, ``slope``,
    ``keys_kept`` (mean keys per context after the cap or pruning), ``tail_bound`` (largest bound
    on the relative weight of the keys not drawn), ``alpha_theory = 2/(d-1)``, provenance.
    """
    ds = [check_int("d", v, minimum=3) for v in as_list("d", d)]
    check_contexts_level(contexts, level)
    n_grid(n)
    return pd.concat(
        [_uniform_curve(d=v, n=n, contexts=contexts, level=level, root_seed=root_seed) for v in ds],
        ignore_index=True,
    )


def subsphere_points(
    *, d: int, k, n, contexts: int, level: float, full_keys_max_n: int, root_seed: int
) -> pd.DataFrame:
    """``beta*(n)`` for keys uniform on a great sub-sphere ``S^{k-1}`` of ``S^{d-1}`` through the
    query, for one ``k`` or a list (docs/paper-b-beyond.md#keys-on-a-submanifold).

    Two methods, independent draws: ``method = "full"`` draws the keys in ``R^d``
    (:func:`attnscale.sphere.structured_keys.sample_subsphere`, a random sub-sphere per context,
    ``q = e_1``) for ``n <= full_keys_max_n``; ``method = "d2q"`` uses the exact D2Q law
    ``T/2 ~ Beta((k-1)/2, (k-1)/2)`` with exact caps on the whole grid. ``alpha_theory = 2/(k-1)``.
    """
    ks = []
    for v in as_list("k", k):
        dd, kk = sk.check_subsphere(d, v)
        if kk < 3:
            raise ValueError(
                f"k must be >= 3 for the exponent experiment (alpha = 2/(k-1)), got {kk}"
            )
        ks.append(kk)
    check_contexts_level(contexts, level)
    n_grid(n)
    check_int("full_keys_max_n", full_keys_max_n, minimum=0)
    return pd.concat(
        [
            _subsphere_curve(
                d=dd,
                k=v,
                n=n,
                contexts=contexts,
                level=level,
                full_keys_max_n=full_keys_max_n,
                root_seed=root_seed,
            )
            for v in ks
        ],
        ignore_index=True,
    )


def sphere_points(*, uniform: dict, subsphere: dict, level: float, root_seed: int) -> pd.DataFrame:
    """Uniform keys across d and keys on great sub-spheres in one job (job start-up costs more than
    the small sizes; docs/paper-b-beyond.md#critical-exponent-across-dimensions).

    ``uniform``: ``{"d", "n", "contexts"}`` for :func:`uniform_points`; ``subsphere``:
    ``{"d", "k", "n", "contexts", "full_keys_max_n"}`` for :func:`subsphere_points`. Both are
    validated before any work.
    """
    for name, sec, need in (
        ("uniform", uniform, {"d", "n", "contexts"}),
        ("subsphere", subsphere, {"d", "k", "n", "contexts", "full_keys_max_n"}),
    ):
        if not isinstance(sec, dict) or set(sec) != need:
            raise ValueError(f"{name} must be a dict with keys {sorted(need)}, got {sec!r}")
    for v in as_list("uniform.d", uniform["d"]):
        check_int("uniform.d", v, minimum=3)
    for v in as_list("subsphere.k", subsphere["k"]):
        sk.check_subsphere(subsphere["d"], v)
    check_contexts_level(uniform["contexts"], level)
    check_contexts_level(subsphere["contexts"], level)
    n_grid(uniform["n"])
    n_grid(subsphere["n"])
    return pd.concat(
        [
            uniform_points(**uniform, level=level, root_seed=root_seed),
            subsphere_points(**subsphere, level=level, root_seed=root_seed),
        ],
        ignore_index=True,
    )
