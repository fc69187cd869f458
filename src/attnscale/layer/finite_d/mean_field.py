"""Mean field for the self-weight, output cosine and lambda (docs/finite-d.md#mean-field-for-cosine-and-lambda)."""

from __future__ import annotations

import numpy as np

from .approx import anneal_nodes, log_vmf, vmf_mean
from .laws import QUADRATURE_PRESETS, normal_score_rule, omega_rule, tau_law

__all__ = ["row_moments", "mean_field_values"]


def row_moments(d: int, beta: float, n: int, ti, tj, wj):
    """Per query ``tau_i``: a_i, tilted mean components (mu, nu) at beta and 2 beta, ``Phi2``."""
    si = np.sqrt(np.clip(1 - ti * ti, 0, None))
    sj = np.sqrt(np.clip(1 - tj * tj, 0, None))
    nu0 = (d - 3) / 2.0
    out = {}
    for tag, b in (("1", beta), ("2", 2.0 * beta)):
        k = b * np.outer(si, sj)
        le = b * (np.outer(ti, tj) - 1.0) + log_vmf(nu0, k)
        m = le.max(axis=1, keepdims=True)
        w = np.exp(le - m) * wj
        z = w.sum(axis=1)
        out["logphi" + tag] = m[:, 0] + np.log(z)
        out["mu" + tag] = (w @ tj) / z
        out["nu" + tag] = (w * sj * vmf_mean(nu0, k)).sum(axis=1) / z
    a = 1.0 / (1.0 + (n - 1.0) * np.exp(out["logphi1"]))
    mu, nu = out["mu1"], out["nu1"]
    # dispersed part: (n-1) a^2 E[e^{2 beta (c-1)} ||y_j - m_i||^2]
    disp = (
        (n - 1.0)
        * a
        * a
        * np.exp(out["logphi2"])
        * (1.0 - 2.0 * (mu * out["mu2"] + nu * out["nu2"]) + mu * mu + nu * nu)
    )
    P = a * ti + (1.0 - a) * mu  # component along u
    Q = a * si + (1.0 - a) * nu  # component along the query's own direction e_i
    return a, P, Q, np.maximum(disp, 0.0), si


def mean_field_values(
    n: int, d: int, rho: float, beta: float, quadrature: str = "standard", r0: float | None = None
) -> dict:
    """``a_ii``, ``cos`` and ``lambda`` at one ``beta`` (see :func:`attnscale.layer.finite_d.mean_field`);
    averaged over ``R_0`` or, with ``r0``, conditioned on ``R_0 = r0``."""
    p = QUADRATURE_PRESETS[quadrature]
    wn, ww = omega_rule(d, p["n_w"])
    res = {"a_ii": 0.0, "cos": 0.0, "lambda": 0.0}
    nodes = anneal_nodes(d, rho, quadrature) if r0 is None else _given_nodes(d, rho, r0, quadrature)
    for wr, ti, wi, tj, wj in nodes:
        a, P, Q, D, si = row_moments(d, beta, n, ti, tj, wj)
        norm = np.sqrt(P * P + Q * Q + D)
        # pairs (i, k) with omega_ik on the Gauss-Jacobi nodes
        num = (P[:, None] * P[None, :])[..., None] + (Q[:, None] * Q[None, :])[..., None] * wn
        cosp = num / (norm[:, None] * norm[None, :])[..., None]
        c = (ti[:, None] * ti[None, :])[..., None] + (si[:, None] * si[None, :])[..., None] * wn
        lam = (1.0 - cosp) / np.maximum(1.0 - c, 1e-12)
        pw = (wi[:, None] * wi[None, :])[..., None] * ww
        res["a_ii"] += wr * float(wi @ a)
        res["cos"] += wr * float(np.sum(pw * cosp))
        res["lambda"] += wr * float(np.sum(pw * lam))
    return res


def _given_nodes(d: int, rho: float, r0: float, quadrature: str):
    """The nodes of :func:`attnscale.layer.finite_d.approx.anneal_nodes` for the single ``R_0 = r0``."""
    _, qw, qn, _ = normal_score_rule(QUADRATURE_PRESETS[quadrature]["n_tau"])
    law = tau_law(d, rho, float(r0))
    t, cdf = law.t[::4], law.cdf[::4]
    wj = np.zeros_like(t)
    wj[1:] += np.diff(cdf) / 2
    wj[:-1] += np.diff(cdf) / 2
    return ((1.0, law.quantile(qn), qw, t, wj / wj.sum()),)
