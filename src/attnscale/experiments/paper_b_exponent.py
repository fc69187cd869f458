"""Entry functions of the critical-exponent experiments (ours): ``beta*(n)`` at a fixed level of
``E A_(1)`` for uniform keys (d = 3 .. 10), keys on a great sub-sphere, and RoPE-rotated keys, and
the exponent fits (docs/paper-b-beyond.md#critical-exponent-across-dimensions,
docs/paper-b-beyond.md#keys-on-a-submanifold, docs/paper-b-beyond.md#rope-like-keys).

Every function is pure (tables in, table out) and draws only from
:func:`attnscale.core.seeding.job_rng` with a spawn key naming the experiment, its parameters and ``n``:
the contexts at different ``n`` are independent (the fit treats the points as independent), and
within one ``n`` the same contexts serve every beta of the root search (common random numbers).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.pipeline.io import provenance, provenance_columns
from attnscale.sphere import critical_exponent as ce
from attnscale.sphere import keys
from attnscale.sphere import structured_keys as sk

__all__ = [
    "uniform_points",
    "subsphere_points",
    "sphere_points",
    "rope_points",
    "exponent_tables",
    "exponent_fits",
]

UNIFORM_STREAM = "paper_b/exponent/uniform"
SUBSPHERE_STREAM = "paper_b/exponent/subsphere"
ROPE_STREAM = "paper_b/exponent/rope"

#: [choice] below this many keys every context is drawn in full (no cap) to bracket the root.
DENSE_MAX_N = 1000

#: Float64 entries per block of dense contexts (32 MiB).
BLOCK_ENTRIES = 4 * 2**20

FIT_MODELS = ("correction", "plain", "upper", "top3")


_prov = provenance_columns  # one definition, in attnscale.pipeline.io


def _n_grid(n) -> np.ndarray:
    v = check_vector("n", n, low=2.0)
    if np.any(np.diff(v) <= 0):
        raise ValueError(f"n must be strictly increasing, got {v.tolist()}")
    return np.round(v).astype(np.int64)


def _common(contexts, level):
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


def _cap_curve(k: int, n_grid, contexts: int, level: float, root_seed: int, key_of) -> list[dict]:
    """``beta*(n)`` along ``n_grid`` for keys uniform on ``S^{k-1}`` (dense below DENSE_MAX_N,
    exact cap samples above; each ``n`` guesses from the previous one with slope ``2/(k-1)``)."""
    rows, guess, prev = [], 1.0, None
    for n in n_grid:
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
        rows.append({"n": n, **res})
    return rows


def _table(rows, root_seed, base: dict, params: dict) -> pd.DataFrame:
    out = []
    for r in rows:
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
                **_prov(root_seed, r["spawn"], {**params, "n": r["n"]}),
            }
        )
    return pd.DataFrame(out)


# =========================================================================== curves
def _as_list(name: str, v) -> list:
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
    contexts, level = _common(contexts, level)
    grid = _n_grid(n)
    params = {"d": d, "contexts": contexts, "level": level}
    rows = _cap_curve(
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
    return _table(rows, root_seed, base, params)


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
    contexts, level = _common(contexts, level)
    full_keys_max_n = check_int("full_keys_max_n", full_keys_max_n, minimum=0)
    grid = _n_grid(n)
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
    rows = _cap_curve(
        k, grid, contexts, level, root_seed, lambda m, j: spawn_key(SUBSPHERE_STREAM, d, k, 0, m, j)
    )
    out = [_table(rows, root_seed, {**base, "method": "d2q"}, {**params, "method": "d2q"})]
    full_rows, guess = [], rows[0]["beta_star"]
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
            _table(full_rows, root_seed, {**base, "method": "full"}, {**params, "method": "full"})
        )
    return pd.concat(out, ignore_index=True)


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
    res = ce.solve_critical_beta(np.concatenate(Ts), np.concatenate(owners), contexts, lo, hi,
                                 level)  # fmt: skip
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
    contexts, level = _common(contexts, level)
    grid = _n_grid(n)
    params = {
        "d": d,
        "kappa_per_d": kpd,
        "base": base,
        "contexts": contexts,
        "level": level,
        "family": family,
    }
    kid = (1, 0) if np.isinf(kpd) else (0, value_id(kpd))
    rows, guess, prev = [], 1.0, None
    r_orbit = sk.rope_orbit_dimension(d, base)
    slope = 2.0 / r_orbit if (np.isinf(kpd) and r_orbit) else 2.0 / (d - 1)
    for m in grid:
        m = int(m)
        if prev is not None:
            guess = guess * (m / prev) ** slope
        for widen in range(4):
            key = spawn_key(ROPE_STREAM, d, *kid, value_id(base, 1), int(family == "rope_long"),
                            m, widen)  # fmt: skip
            res = _rope_solve(d, kappa, base, m, contexts, job_rng(root_seed, key), guess, level,
                              4.0**widen)  # fmt: skip
            if res["status"] == "ok":
                break
        else:
            raise RuntimeError(f"no bracket of beta* for RoPE keys (d={d}, kappa={kappa}, n={m})")
        guess, prev = res["beta_star"], m
        rows.append({"n": m, **res, "attempt": widen, "spawn": key})
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
    return _table(rows, root_seed, base_cols, params)


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
    ds = [check_int("d", v, minimum=3) for v in _as_list("d", d)]
    _common(contexts, level)
    _n_grid(n)
    return pd.concat([_uniform_curve(d=v, n=n, contexts=contexts, level=level,
                                     root_seed=root_seed) for v in ds], ignore_index=True)  # fmt: skip


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
    for v in _as_list("k", k):
        dd, kk = sk.check_subsphere(d, v)
        if kk < 3:
            raise ValueError(
                f"k must be >= 3 for the exponent experiment (alpha = 2/(k-1)), got {kk}"
            )
        ks.append(kk)
    _common(contexts, level)
    _n_grid(n)
    check_int("full_keys_max_n", full_keys_max_n, minimum=0)
    return pd.concat([_subsphere_curve(d=dd, k=v, n=n, contexts=contexts, level=level,
                                       full_keys_max_n=full_keys_max_n, root_seed=root_seed)
                      for v in ks], ignore_index=True)  # fmt: skip


def sphere_points(*, uniform: dict, subsphere: dict, level: float, root_seed: int) -> pd.DataFrame:
    """Uniform keys across d and keys on great sub-spheres in one job (job start-up costs more than
    the small sizes; docs/paper-b-beyond.md#critical-exponent-across-dimensions).

    ``uniform``: ``{"d", "n", "contexts"}`` for :func:`uniform_points`; ``subsphere``:
    ``{"d", "k", "n", "contexts", "full_keys_max_n"}`` for :func:`subsphere_points`. Both are
    validated before any work.
    """
    for name, sec, need in (("uniform", uniform, {"d", "n", "contexts"}),
                            ("subsphere", subsphere, {"d", "k", "n", "contexts",
                                                      "full_keys_max_n"})):  # fmt: skip
        if not isinstance(sec, dict) or set(sec) != need:
            raise ValueError(f"{name} must be a dict with keys {sorted(need)}, got {sec!r}")
    for v in _as_list("uniform.d", uniform["d"]):
        check_int("uniform.d", v, minimum=3)
    for v in _as_list("subsphere.k", subsphere["k"]):
        sk.check_subsphere(subsphere["d"], v)
    _common(uniform["contexts"], level)
    _common(subsphere["contexts"], level)
    _n_grid(uniform["n"])
    _n_grid(subsphere["n"])
    return pd.concat([uniform_points(**uniform, level=level, root_seed=root_seed),
                      subsphere_points(**subsphere, level=level, root_seed=root_seed)],
                     ignore_index=True)  # fmt: skip


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
    for v in _as_list("d", d):
        dv, _ = sk.check_rope(v, base)
        if dv < 4:
            raise ValueError(f"d must be >= 4 for the RoPE experiment, got {dv}")
        ds.append(dv)
    kps = [sk.check_kappa(v) for v in _as_list("kappa_per_d", kappa_per_d)]
    _common(contexts, level)
    _n_grid(n)
    if long_n is not None:
        _n_grid(long_n)
        _common(long_contexts, level)
    out = [_rope_curve(d=dv, kappa_per_d=kp, base=base, n=n, contexts=contexts, level=level,
                       root_seed=root_seed, family=family) for dv in ds for kp in kps]  # fmt: skip
    if long_n is not None:
        out += [_rope_curve(d=dv, kappa_per_d=np.inf, base=base, n=long_n, contexts=long_contexts,
                            level=level, root_seed=root_seed, family="rope_long") for dv in ds]  # fmt: skip
    return pd.concat(out, ignore_index=True)


def exponent_tables(*, points, upper_n_min: float) -> dict:
    """All points in one table and their fits: ``{"points": ..., "fits": ...}``
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions)."""
    P = pd.concat(points, ignore_index=True) if isinstance(points, list) else points
    return {"points": P, "fits": exponent_fits(points=P, upper_n_min=upper_n_min)}


def exponent_fits(*, points, upper_n_min: float) -> pd.DataFrame:
    """Exponent fits of ``log beta*`` on ``log n`` for every curve in ``points`` (one table or a list)
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions).

    Models (:func:`attnscale.sphere.critical_exponent.fit_exponent`): ``correction`` (all ``n``, with the
    ``B / beta*`` finite-n term; the primary fit), ``plain`` (all ``n``, no correction) and
    ``upper`` (``n >= upper_n_min``, no correction), ``top3`` (the three largest ``n``, no
    correction: the local slope at the end of the range). ``z = (alpha - alpha_theory) / se_scaled``.
    """
    upper_n_min = check_real("upper_n_min", upper_n_min, low=0.0)
    P = pd.concat(points, ignore_index=True) if isinstance(points, list) else points
    keys_ = ["family", "method", "d", "k", "kappa", "base"]
    out = []
    for gkey, g in P.groupby(keys_, dropna=False, sort=True):
        g = g.sort_values("n")
        for model in FIT_MODELS:
            kw = {"correction": model == "correction"}
            if model == "upper":
                kw["n_min"] = upper_n_min
            elif model == "top3":
                kw["n_min"] = float(g["n"].iloc[-3]) if len(g) >= 3 else np.inf
            try:
                f = ce.fit_exponent(g["n"], g["beta_star"], g["se"], **kw)
            except ValueError:
                continue  # too few points for this model
            used = g[g["n"] >= kw.get("n_min", 0.0)]
            at = float(g["alpha_theory"].iloc[0])
            out.append(
                {
                    **dict(zip(keys_, gkey, strict=True)),
                    "model": model,
                    **f,
                    "n_min": float(used["n"].min()),
                    "n_max": float(used["n"].max()),
                    "alpha_theory": at,
                    "z": (f["alpha"] - at) / f["se_alpha_scaled"],
                    "within_2se": bool(abs(f["alpha"] - at) <= 2 * f["se_alpha_scaled"]),
                    "params_hash": provenance(None, None, {"points": sorted(g["params_hash"])})[
                        "params_hash"
                    ],
                }
            )
    return pd.DataFrame(out)
