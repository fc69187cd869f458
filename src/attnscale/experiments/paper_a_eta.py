"""Paper A backward pass: the Jacobian norm eta on the (rho, gamma) grid (Figure 2), the
theorem-vs-simulation table and the finite-size check (docs/paper-a.md).

Every step reads the token draws written by rule ``paper_a_tokens``
(:func:`attnscale.experiments.paper_a_tokens.draw_tokens`), so Figures 1 and 2 see the same tokens.

Theory columns are evaluated per draw at the draw's realised mean cosine ``rho_hat`` and mean
squared norm ``q_hat`` (docs/paper-a.md#gaussian-near-simplex-tokens). Two extra eta columns use the realised norm moments
``mean 1/||x_i||`` and ``mean 1/||x_i||^2`` instead of ``q_hat`` (``eta_plateau``,
``eta_simplex_n_norms``): ``J`` depends on the norms only through ``1/||x_k||`` factors, so for
Gaussian tokens, whose norms spread by ``~sqrt(2/d)``, eta follows ``mean 1/||x||^2`` rather
than ``1/q_hat`` [derived].
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.layer import attention, eta_exact, jacobian, theory, tokens
from attnscale.pipeline.io import provenance
from attnscale.pipeline.runtime import Progress

from .paper_a import CELL_KEYS, cell_provenance
from .paper_a_tokens import check_draws, tokens_at
from .summaries import mean_se

__all__ = [
    "choose_method",
    "eta_plateau",
    "eta_table",
    "eta_rows",
    "figure2_data",
    "eta_critical_data",
    "eta_summary",
    "theory_rows",
    "theory_rows_all",
    "theorem_table",
    "theorem_table_data",
]

LOG = logging.getLogger("attnscale")

PROBES_STREAM = "paper_a/eta_probes"
METHODS = ("exact", "hutchinson", "auto")
QUANTITIES = ("self_weight", "cosine", "lambda", "eta")
#: Quantities with a finite-d theory column (docs/finite-d.md; no eta version is derived).
FINITE_D_QUANTITIES = ("self_weight", "cosine", "lambda")
#: Acceptance of the finite-d theory (issue 9): |sim - theory| <= max(3 SE, FINITE_D_ABS_TOL).
FINITE_D_ABS_TOL = 0.002


def probe_key(n: int, d: int, rho: float, trial: int) -> tuple[int, ...]:
    """Spawn key of the Hutchinson probes of one token draw (``rho`` in units of 1e-6)."""
    return spawn_key(PROBES_STREAM, n, d, value_id(rho), trial)


def choose_method(method: str, n: int, d: int, probes: int) -> str:
    """``"exact"`` or ``"hutchinson"``. ``"auto"`` takes the exact block formula when its cost
    per beta is at most that of ``probes`` Hutchinson probes (:func:`attnscale.layer.eta_exact.exact_cost`,
    :func:`attnscale.layer.eta_exact.hutchinson_cost`: GEMM flops plus measured elementwise work)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method != "auto":
        return method
    exact = eta_exact.exact_cost(n, d)
    return "exact" if exact <= eta_exact.hutchinson_cost(n, d, probes) else "hutchinson"


def norm_moments(X: np.ndarray) -> tuple[float, float]:
    """``(mean_i 1/||x_i||, mean_i 1/||x_i||^2)`` of a token matrix."""
    r = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1)
    return float(np.mean(1.0 / r)), float(np.mean(1.0 / r**2))


def eta_plateau(d: int, alpha: float, w1: float, w2: float) -> float:
    """Super-critical limit of eta at realised norms [derived]: ``J -> blockdiag(P_i / r_i) +
    alpha I``, so ``eta -> [(d-1)(w2 + 2 alpha w1 + alpha^2) + alpha^2] / d`` with ``w1 = mean
    1/r``, ``w2 = mean 1/r^2``; for ``alpha = 0`` this is ``(1 - 1/d) mean 1/||x_i||^2``, the
    plateau of Figure 2 (``(1 - 1/d) / q`` for equal norms, Theorem 2.4)."""
    return ((d - 1) * (w2 + 2.0 * alpha * w1 + alpha**2) + alpha**2) / d


def _rho_ok(rho_hat: float) -> bool:
    return 0.0 < rho_hat < 1.0


def eta_table(
    tok: dict,
    gammas,
    alpha: float,
    *,
    method: str,
    probes: int,
    probe_kind: str,
    root_seed: int,
    params: dict,
) -> pd.DataFrame:
    """eta on the gamma grid and at ``gamma_c(rho_hat)`` for one token draw (Figure 2, docs/paper-a.md#the-jacobian-norm-eta).

    Parameters
    ----------
    tok : dict
        A token draw at one rho (:func:`attnscale.experiments.paper_a_tokens.tokens_at`).
    gammas : array_like
        Grid of gamma (``beta = gamma log n``).
    alpha : float
        Residual weight.
    method : {"exact", "hutchinson", "auto"}
        How eta is computed (see :func:`choose_method`).
    probes : int
        Hutchinson probes (used when the method resolves to ``"hutchinson"``).
    probe_kind : {"rademacher", "gaussian"}
        Probe distribution.
    root_seed : int
        Root seed of the probe generator (key :func:`probe_key`).
    params : dict
        Parameters hashed into the provenance column.

    Returns
    -------
    pandas.DataFrame
        One row per gamma; ``eta_se`` is 0 for the exact method.
    """
    X, n, d = tok["X"], tok["n"], tok["d"]
    rho_hat, q_hat = tok["rho_hat"], tok["q_hat"]
    gammas = check_vector("gammas", gammas, low=0.0, low_open=True)
    alpha = check_real("alpha", alpha, low=0.0)
    probes = check_int("probes", probes, minimum=1)
    ok = _rho_ok(rho_hat)
    gc_hat = theory.gamma_c(rho_hat) if ok else np.nan
    gam = np.concatenate([gammas, [gc_hat]]) if ok else gammas.copy()
    kind = ["grid"] * gammas.size + (["critical"] if ok else [])
    if not ok:
        LOG.warning("rho_hat = %g outside (0, 1): no gamma_c row, theory columns nan", rho_hat)
    betas = theory.beta_of_gamma(gam, n)
    how = choose_method(method, n, d, probes)
    key = probe_key(n, d, tok["rho"], tok["trial"])
    if how == "exact":
        eta = eta_exact.eta_exact_grid(X, betas, alpha)
        se = np.zeros_like(eta)
        used_probes = 0
    else:
        eta, se = jacobian.eta_hutchinson_grid(
            X, betas, alpha, probes=probes, rng=job_rng(root_seed, key), kind=probe_kind
        )
        used_probes = probes
    w1, w2 = norm_moments(X)
    plateau = eta_plateau(d, alpha, w1, w2)
    nan = np.full(gam.size, np.nan)
    lim, simp, simp_w = nan.copy(), nan.copy(), nan.copy()
    if ok:
        lim = np.array([theory.eta_limit(rho_hat, g, d, alpha, q_hat) for g in gam])
        simp = np.array([theory.simplex_eta(n, d, rho_hat, b, alpha, q_hat) for b in betas])
        simp_w = np.array(
            [
                theory.simplex_eta(
                    n, d, rho_hat, b, alpha, q_hat, mean_inv_norm=w1, mean_inv_sq_norm=w2
                )
                for b in betas
            ]
        )
    # provenance: the probe generator's key for Hutchinson, the token draw's key otherwise
    if how == "hutchinson":
        prov = provenance(root_seed, key, params)
    else:
        prov = provenance(tok["root_seed"], tok["spawn_key"], params)
    return pd.DataFrame(
        {
            "d": d,
            "n": n,
            "rho": tok["rho"],
            "rho_hat": rho_hat,
            "q_hat": q_hat,
            "mean_inv_sq_norm": w2,
            "trial": tok["trial"],
            "gamma_kind": kind,
            "gamma": gam,
            "gamma_over_gc_hat": gam / gc_hat,
            "beta": betas,
            "alpha": alpha,
            "method": how,
            "probes": used_probes,
            "eta": eta,
            "eta_se": se,
            "eta_plateau": plateau,
            "eta_rel": eta / plateau,
            "eta_limit": lim,
            "eta_simplex_n": simp,
            "eta_simplex_n_norms": simp_w,
            "root_seed": prov["root_seed"],
            "spawn_key": "-".join(str(k) for k in prov["spawn_key"]),
            "params_hash": prov["params_hash"],
            "attnscale_version": prov["attnscale_version"],
            "git_commit": prov["git_commit"],
        }
    )


def eta_rows(
    *,
    draws: list[dict],
    rhos,
    gammas,
    alpha: float,
    method: str,
    probes: int,
    probe_kind: str,
    root_seed: int,
    n=None,
    d=None,
) -> pd.DataFrame:
    """Entry of rule ``paper_a_eta``: :func:`eta_table` for every draw of one ``(n, d)`` at each
    ``rho`` of ``rhos`` (a piece of the rho grid), stacked. ``n``, ``d``: the job's, checked
    against the draws (:func:`attnscale.experiments.paper_a_tokens.check_draws`; ``None``: not
    checked)."""
    check_draws(draws, n, d)
    tables = []
    progress = Progress("eta (rho, draw)", len(draws) * len(rhos))
    for draw, rho in ((dr, r) for r in rhos for dr in draws):
        tok = tokens_at(draw, rho)
        params = {
            "gammas": [float(g) for g in gammas],
            "alpha": float(alpha),
            "n": tok["n"],
            "method": method,
            "probes": int(probes),
            "probe_kind": probe_kind,
        }
        df = eta_table(
            tok,
            gammas,
            alpha,
            method=method,
            probes=probes,
            probe_kind=probe_kind,
            root_seed=root_seed,
            params=params,
        )
        LOG.info("d = %d, rho = %g, trial %d: eta by %s", tok["d"], tok["rho"], tok["trial"],
                 df["method"].iloc[0])  # fmt: skip
        tables.append(df)
        progress.step()
    return pd.concat(tables, ignore_index=True)


def figure2_data(rows: pd.DataFrame) -> pd.DataFrame:
    """Figure 2 data: mean eta and eta / plateau (with SE over trials) per grid cell."""
    grid = rows[rows["gamma_kind"] == "grid"]
    out = mean_se(
        grid.groupby(CELL_KEYS, sort=True),
        ["eta", "eta_rel", "eta_plateau", "rho_hat", "eta_simplex_n_norms"],
    )
    out["gamma_c_nominal"] = theory.gamma_c(out["rho"].to_numpy())
    return out.merge(
        cell_provenance(grid, CELL_KEYS, method=("method", "first"), probes=("probes", "first")),
        on=CELL_KEYS,
        how="left",
    )


def eta_critical_data(rows: pd.DataFrame) -> pd.DataFrame:
    """eta at ``gamma_c(rho_hat)`` per draw with its theory columns."""
    crit = rows[rows["gamma_kind"] == "critical"].copy()
    cols = [
        "d", "n", "alpha", "rho", "trial", "rho_hat", "q_hat", "mean_inv_sq_norm", "gamma",
        "beta", "method", "probes", "eta", "eta_se", "eta_plateau", "eta_limit", "eta_simplex_n",
        "eta_simplex_n_norms", "root_seed", "spawn_key", "params_hash", "attnscale_version",
        "git_commit",
    ]  # fmt: skip
    return crit[cols].sort_values(["d", "rho", "trial"]).reset_index(drop=True)


def eta_summary(*, csvs: list) -> dict:
    """Entry of rule ``paper_a_eta_summary``: Figure 2's cell means and the per-draw critical
    rows."""
    rows = pd.concat(csvs, ignore_index=True)
    return {"figure2": figure2_data(rows), "critical": eta_critical_data(rows)}


# ---------------------------------------------------------------------------------------------
# Theorem table and finite-size check
# ---------------------------------------------------------------------------------------------


def theory_rows(tok: dict, gamma_factors, alphas, params: dict) -> pd.DataFrame:
    """Simulation beside theory for one draw at ``gamma = f gamma_c(rho_hat)`` (docs/paper-a.md).

    For every factor ``f`` and residual ``alpha``: the realised mean self-weight ``A_ii`` (the
    mechanism of docs/paper-a.md#results-of-the-paper-that-we-use: ``A_ii -> 0, 1/2, 1``), the simulated mean output cosine
    ``<y_i', y_j'>`` (mean over ``i != j``), lambda (:func:`attnscale.layer.attention.angle_ratio_grid`)
    and exact eta (:func:`attnscale.layer.eta_exact.eta_exact_grid`), each with its n -> inf limit
    (Theorem 2.1, 2.4 and the derived alpha > 0 forms; ``A_ii``: docs/paper-a.md#results-of-the-paper-that-we-use) and its finite-n
    simplex value (:func:`attnscale.layer.theory.simplex_self_weight`, ``simplex_map``,
    ``simplex_lambda``, ``simplex_eta``) at ``rho_hat`` and ``q_hat``; eta also at the realised
    norm moments (``eta_simplex_n_norms``). A draw with ``rho_hat`` outside (0, 1) has no
    ``gamma_c`` and gives no rows (logged).

    Finite-d theory columns ``{self_weight, cosine, lambda}_finite_d`` (docs/finite-d.md):
    :func:`attnscale.experiments.finite_d_theory.theory_given_draw` at the draw's nominal ``rho``, its
    ``beta`` and its own ``||z_0||`` (``tok["r0"]``); ``nan`` where the theory does not apply
    (``d < 3``, ``alpha > 0``, or no ``r0`` in ``tok``).
    """
    X, n, d = tok["X"], tok["n"], tok["d"]
    rho_hat, q_hat = tok["rho_hat"], tok["q_hat"]
    factors = check_vector("gamma_factors", gamma_factors, low=0.0, low_open=True)
    alphas = check_vector("alphas", alphas, low=0.0)
    if not _rho_ok(rho_hat):
        LOG.warning("d = %d trial %d: rho_hat = %g outside (0, 1), draw skipped", d,
                    tok["trial"], rho_hat)  # fmt: skip
        return pd.DataFrame()
    gc_hat = theory.gamma_c(rho_hat)
    gam = factors * gc_hat
    betas = theory.beta_of_gamma(gam, n)
    eta = eta_exact.eta_exact_grid(X, betas, alphas)  # (alphas, factors)
    lam = [attention.angle_ratio_grid(X, betas, a) for a in alphas]
    w1, w2 = norm_moments(X)
    Y, _ = attention.normalise(X)
    G = Y @ Y.T  # beta-free: shared by every factor
    prov = provenance(tok["root_seed"], tok["spawn_key"], params)
    nan = np.full(betas.size, np.nan)
    fd = dict.fromkeys(FINITE_D_QUANTITIES, nan)
    if d >= 3 and tok.get("r0") is not None and 0.0 in set(np.asarray(alphas).tolist()):
        from .finite_d_theory import theory_given_draw

        fd = theory_given_draw(n, d, tok["rho"], betas, tok["r0"])
    out = []
    for k, (f, g, beta) in enumerate(zip(factors, gam, betas, strict=True)):
        A = attention.softmax_rows(beta * G)
        self_w = float(np.mean(np.diag(A)))
        AY = A @ Y
        for ia, alpha in enumerate(alphas):
            cos = tokens.mean_cosine(AY + alpha * X)
            out.append(
                {
                    "d": d,
                    "n": n,
                    "rho": tok["rho"],
                    "trial": tok["trial"],
                    "rho_hat": rho_hat,
                    "q_hat": q_hat,
                    "mean_inv_sq_norm": w2,
                    "alpha": alpha,
                    "gamma_factor": f,
                    "gamma": g,
                    "beta": beta,
                    "self_weight": self_w,
                    "self_weight_limit": theory.self_weight_limit(rho_hat, g),
                    "self_weight_simplex_n": theory.simplex_self_weight(n, rho_hat, beta),
                    "cosine": cos,
                    "cosine_limit": theory.cosine_limit(rho_hat, g, alpha, q_hat),
                    "cosine_simplex_n": theory.simplex_map(n, rho_hat, beta, alpha, q_hat)[0],
                    "lambda": lam[ia][k],
                    "lambda_limit": theory.lambda_limit(rho_hat, g, alpha, q_hat),
                    "lambda_simplex_n": theory.simplex_lambda(n, rho_hat, beta, alpha, q_hat),
                    "eta": eta[ia, k],
                    "eta_limit": theory.eta_limit(rho_hat, g, d, alpha, q_hat),
                    "eta_simplex_n": theory.simplex_eta(n, d, rho_hat, beta, alpha, q_hat),
                    "eta_simplex_n_norms": theory.simplex_eta(
                        n, d, rho_hat, beta, alpha, q_hat, mean_inv_norm=w1, mean_inv_sq_norm=w2
                    ),
                    **{
                        f"{q}_finite_d": float(fd[q][k]) if alpha == 0.0 else np.nan
                        for q in FINITE_D_QUANTITIES
                    },
                    "eta_finite_d": np.nan,
                    "root_seed": prov["root_seed"],
                    "spawn_key": "-".join(str(k) for k in prov["spawn_key"]),
                    "params_hash": prov["params_hash"],
                    "attnscale_version": prov["attnscale_version"],
                    "git_commit": prov["git_commit"],
                }
            )
    return pd.DataFrame(out).sort_values(["alpha", "gamma_factor"], kind="stable")


def theory_rows_all(
    *, draws: list[dict], rho: float, gamma_factors, alphas, n=None, d=None
) -> pd.DataFrame:
    """Entry of rules ``paper_a_theorem_rows`` and ``paper_a_finite_size_rows``:
    :func:`theory_rows` for every draw of one (n, d, rho), stacked. ``n``, ``d``: the job's,
    checked against the draws (:func:`attnscale.experiments.paper_a_tokens.check_draws`;
    ``None``: not checked)."""
    check_draws(draws, n, d)
    frames = []
    for draw in draws:
        # ||z_0|| conditions the finite-d theory on the draw (docs/finite-d.md)
        tok = dict(tokens_at(draw, rho), r0=float(np.linalg.norm(draw["z0"])))
        params = {
            "gamma_factors": [float(f) for f in gamma_factors],
            "alphas": [float(a) for a in alphas],
            "n": tok["n"],
        }
        frames.append(theory_rows(tok, gamma_factors, alphas, params))
    df = pd.concat(frames, ignore_index=True)
    if df.empty:
        raise ValueError(
            f"no token draw of d = {draws[0]['d']} at rho = {rho} has rho_hat in (0, 1)"
        )
    return df


def _sem(x: np.ndarray) -> float:
    """Standard error of the mean over draws (:func:`scipy.stats.sem`, ddof = 1); nan for one."""
    from scipy.stats import sem

    return float(sem(x)) if len(x) > 1 else np.nan


THEORY_KEYS = ["d", "n", "rho", "alpha", "gamma_factor"]


def theorem_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Tidy theorem table: one row per (d, n, rho, alpha, gamma_factor, quantity).

    ``sim_mean``/``sim_se``: the simulation's mean and standard error over draws;
    ``simplex_n``/``limit``: the theory values, averaged over draws (each draw is evaluated at its
    own ``rho_hat`` and ``q_hat``); ``diff_mean``/``diff_se``: the paired difference simulation
    minus finite-n simplex value per draw, ``z = diff_mean / diff_se`` and
    ``within_2se = |z| <= 2``. For eta, ``simplex_n_norms`` uses the realised norm moments.

    Finite-d theory (docs/finite-d.md; self-weight, cosine and lambda at ``alpha = 0``, ``d >=
    3``): ``finite_d`` (mean over draws of the per-draw theory), the paired difference
    ``diff_fd_mean`` with its SE ``diff_fd_se``, ``z_fd``, ``within_2se_fd``/``within_3se_fd``,
    and ``accept_fd``: ``|diff_fd_mean| <= max(3 diff_fd_se, 0.002)`` (issue 9's criterion).
    """
    out = []
    for keys, g in rows.groupby(THEORY_KEYS, sort=True):
        t = len(g)
        for qty in QUANTITIES:
            sim = g[qty].to_numpy()
            simp = g[f"{qty}_simplex_n"].to_numpy()
            diff = sim - simp
            se = _sem(sim)
            dse = _sem(diff)
            z = diff.mean() / dse if t > 1 and dse > 0 else np.nan
            rec = dict(zip(THEORY_KEYS, keys, strict=True))
            rec.update(
                {
                    "quantity": qty,
                    "trials": t,
                    "rho_hat_mean": g["rho_hat"].mean(),
                    "q_hat_mean": g["q_hat"].mean(),
                    "gamma_mean": g["gamma"].mean(),
                    "sim_mean": sim.mean(),
                    "sim_se": se,
                    "simplex_n": simp.mean(),
                    "limit": g[f"{qty}_limit"].mean(),
                    "diff_mean": diff.mean(),
                    "diff_se": dse,
                    "z": z,
                    "within_2se": bool(np.isfinite(z) and abs(z) <= 2.0),
                    "simplex_n_norms": np.nan,
                    "z_norms": np.nan,
                }
            )
            # provenance of the draws behind the row (the per-draw tables hold the details)
            for col, name in (("root_seed", "root_seed"), ("spawn_key", "spawn_keys"),
                              ("params_hash", "params_hashes"),
                              ("attnscale_version", "attnscale_version"),
                              ("git_commit", "git_commit")):  # fmt: skip
                if col in g:
                    rec[name] = ";".join(sorted(set(map(str, g[col]))))
            fcol = g.get(f"{qty}_finite_d")
            fdv = np.full(t, np.nan) if fcol is None else fcol.to_numpy(dtype=float)
            if np.all(np.isfinite(fdv)):
                dfd = sim - fdv
                dfse = _sem(dfd)
                zfd = dfd.mean() / dfse if t > 1 and dfse > 0 else np.nan
                rec.update(
                    finite_d=fdv.mean(),
                    diff_fd_mean=dfd.mean(),
                    diff_fd_se=dfse,
                    z_fd=zfd,
                    within_2se_fd=bool(np.isfinite(zfd) and abs(zfd) <= 2.0),
                    within_3se_fd=bool(np.isfinite(zfd) and abs(zfd) <= 3.0),
                    accept_fd=bool(
                        abs(dfd.mean()) <= max(3.0 * dfse if np.isfinite(dfse) else 0.0,
                                               FINITE_D_ABS_TOL)
                    ),
                )  # fmt: skip
            else:
                rec.update(finite_d=np.nan, diff_fd_mean=np.nan, diff_fd_se=np.nan, z_fd=np.nan,
                           within_2se_fd=False, within_3se_fd=False, accept_fd=False)  # fmt: skip
            if qty == "eta":
                dn = sim - g["eta_simplex_n_norms"].to_numpy()
                dnse = _sem(dn)
                rec["simplex_n_norms"] = g["eta_simplex_n_norms"].mean()
                rec["z_norms"] = dn.mean() / dnse if t > 1 and dnse > 0 else np.nan
            out.append(rec)
    return pd.DataFrame(out)


def theorem_table_data(*, csvs: list) -> pd.DataFrame:
    """Entry of rules ``paper_a_theorem_table_summary`` and ``paper_a_finite_size_summary``:
    :func:`theorem_table` of the stacked per-(n, d, rho) rows."""
    return theorem_table(pd.concat(csvs, ignore_index=True))
