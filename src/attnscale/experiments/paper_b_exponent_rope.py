"""Entry function of the critical exponent for RoPE-rotated keys (ours): ``beta*(n)`` at a fixed
level of ``E A_(1)`` around the fixed query of :func:`attnscale.sphere.structured_keys.rope_query`
(docs/paper-b-beyond.md#rope-like-keys).

Same conventions as :mod:`attnscale.experiments.paper_b_exponent` (whose checks and table this
module uses): pure, every draw from :func:`attnscale.core.seeding.job_rng` with a spawn key
naming the experiment, its parameters and ``n``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.sphere import critical_exponent as ce
from attnscale.sphere import keys
from attnscale.sphere import structured_keys as sk

from .paper_b_exponent import as_list, check_contexts_level, n_grid, points_table

__all__ = ["rope_points"]

ROPE_STREAM = "paper_b/exponent/rope"

#: Float64 entries per block of dense contexts (32 MiB).
BLOCK_ENTRIES = 4 * 2**20


def _rope_solve(d, kappa, base, n, contexts, rng, guess, level, widen) -> dict:
    """``beta*`` for ``contexts`` RoPE contexts of ``n`` positions, drawn in chunks of contexts.

    The first chunk (all its keys) brackets the root; every chunk is then pruned for
    ``beta >= lo / (2 widen)`` (:func:`attnscale.sphere.critical_exponent.prune_flat`) and the root is
    solved on ``[lo / (2 widen), 2 widen hi]`` over all contexts (status ``"low"``/``"high"`` if
    the wider sample's root falls outside; the caller redraws with a larger ``widen``).
    """
    chunk = max(1, min(contexts, BLOCK_ENTRIES // n))
    mu = keys.sample_uniform_sphere(contexts, d, rng)
    Ts, owners, lo = [], [], None
    for s in range(0, contexts, chunk):
        T = sk.rope_vmf_d2q(mu[s : s + chunk], kappa, n, rng, base)
        Tf, o, size = ce.dense_to_flat(T)
        if lo is None:
            lo, hi = ce.bracket_dense(Tf, o, size, guess, level)
            if chunk < contexts:
                lo, hi = lo / (2 * widen), hi * 2 * widen
        Tp, op = ce.prune_flat(Tf, o, size, lo, n)
        Ts.append(Tp)
        owners.append(op + s)
    res = ce.solve_critical_beta(
        np.concatenate(Ts), np.concatenate(owners), contexts, lo, hi, level
    )
    kept = sum(t.size for t in Ts) / contexts
    res.update(keys_kept=kept, tail_bound=ce.TAIL_EPS)
    return res


def _rope_curve(
    *,
    d: int,
    kappa_per_d: float,
    base: float,
    n,
    contexts: int,
    level: float,
    root_seed: int,
    family: str = "rope",
) -> pd.DataFrame:
    """``beta*(n)`` for RoPE-rotated keys around the fixed query of
    :func:`attnscale.sphere.structured_keys.rope_query` (docs/paper-b-beyond.md#rope-like-keys).

    Context: a mean content direction ``mu`` uniform on ``S^{d-1}``; content keys
    ``x_m ~ vMF(mu, kappa)`` i.i.d. at relative positions ``m = 0 .. n-1``,
    ``kappa = kappa_per_d * d`` (``0``: uniform keys, the no-RoPE baseline in law; ``inf``: one
    repeated content key); key ``m`` is ``R_m x_m``. ``alpha_theory = 2/(d-1)`` is the exponent
    the question asks about, not a prediction for every ``kappa``; ``alpha_orbit = 2/r`` with
    ``r`` from :func:`attnscale.sphere.structured_keys.rope_orbit_dimension` is the derived large-n
    exponent of the repeated key. ``family`` (``"rope"`` or ``"rope_long"``) names the curve, so
    that a long-n run of the same (d, kappa) is fitted separately.
    """
    if family not in ("rope", "rope_long"):
        raise ValueError(f"family must be 'rope' or 'rope_long', got {family!r}")
    d, base = sk.check_rope(d, base)
    if d < 4:
        raise ValueError(f"d must be >= 4 for the RoPE experiment, got {d}")
    kpd = sk.check_kappa(kappa_per_d)
    kappa = kpd * d
    contexts, level = check_contexts_level(contexts, level)
    grid = n_grid(n)
    params = {
        "d": d,
        "kappa_per_d": kpd,
        "base": base,
        "contexts": contexts,
        "level": level,
        "family": family,
    }
    kid = (1, 0) if np.isinf(kpd) else (0, value_id(kpd))
    records, guess, prev = [], 1.0, None
    r_orbit = sk.rope_orbit_dimension(d, base)
    slope = 2.0 / r_orbit if (np.isinf(kpd) and r_orbit) else 2.0 / (d - 1)
    for m in grid:
        m = int(m)
        if prev is not None:
            guess = guess * (m / prev) ** slope
        for widen in range(4):
            key = spawn_key(
                ROPE_STREAM, d, *kid, value_id(base, 1), int(family == "rope_long"), m, widen
            )
            res = _rope_solve(
                d, kappa, base, m, contexts, job_rng(root_seed, key), guess, level, 4.0**widen
            )
            if res["status"] == "ok":
                break
        else:
            raise RuntimeError(f"no bracket of beta* for RoPE keys (d={d}, kappa={kappa}, n={m})")
        guess, prev = res["beta_star"], m
        records.append({"n": m, **res, "attempt": widen, "spawn": key})
    base_cols = {
        "family": family,
        "method": "d2q",
        "d": d,
        "k": d,
        "kappa": kappa,
        "base": base,
        "level": level,
        "contexts": contexts,
        "alpha_theory": 2.0 / (d - 1),
        "alpha_orbit": 2.0 / r_orbit if r_orbit else np.nan,
    }
    return points_table(records, root_seed, base_cols, params)


def rope_points(
    *,
    d,
    kappa_per_d,
    base: float,
    n,
    contexts: int,
    level: float,
    root_seed: int,
    family: str = "rope",
    long_n=None,
    long_contexts: int | None = None,
) -> pd.DataFrame:
    """``beta*(n)`` for RoPE-rotated keys, for one ``d`` or a list and one ``kappa_per_d`` or a
    list (``inf``: one repeated content key); see :func:`_rope_curve`
    (docs/paper-b-beyond.md#rope-like-keys).

    With ``long_n`` (a grid) the same job also runs the repeated key (``kappa = inf``) on that
    grid with ``long_contexts`` contexts, as family ``"rope_long"`` (one job per d saves job
    start-ups).
    """
    if family not in ("rope", "rope_long"):
        raise ValueError(f"family must be 'rope' or 'rope_long', got {family!r}")
    ds = []
    for v in as_list("d", d):
        dv, _ = sk.check_rope(v, base)
        if dv < 4:
            raise ValueError(f"d must be >= 4 for the RoPE experiment, got {dv}")
        ds.append(dv)
    kps = [sk.check_kappa(v) for v in as_list("kappa_per_d", kappa_per_d)]
    check_contexts_level(contexts, level)
    n_grid(n)
    if long_n is not None:
        n_grid(long_n)
        check_contexts_level(long_contexts, level)
    out = [
        _rope_curve(
            d=dv,
            kappa_per_d=kp,
            base=base,
            n=n,
            contexts=contexts,
            level=level,
            root_seed=root_seed,
            family=family,
        )
        for dv in ds
        for kp in kps
    ]
    if long_n is not None:
        out += [
            _rope_curve(
                d=dv,
                kappa_per_d=np.inf,
                base=base,
                n=long_n,
                contexts=long_contexts,
                level=level,
                root_seed=root_seed,
                family="rope_long",
            )
            for dv in ds
        ]
    return pd.concat(out, ignore_index=True)
