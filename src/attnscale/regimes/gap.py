"""The gap regime and where its ``log n`` scale ends (docs/regimes.md#gap-regime-paper-a,
docs/regimes.md#finite-d-where-log-n-ends).

* :func:`gap_top_weight`, :func:`gap_critical_beta` -- self-score 1, the other ``n - 1`` scores
  ``rho`` (Paper A's simplex): ``ln(n - 1) / (1 - rho)``, order ``log n``.
* :func:`finite_d_critical_beta`, :func:`log_n_breakdown` -- Paper A's Gaussian tokens at finite
  ``d`` (:mod:`attnscale.layer.finite_d`), and where their ``log n`` scale ends.
"""

from __future__ import annotations

import numpy as np

from attnscale.core.roots import LEVEL
from attnscale.core.validation import check_int, check_real, check_rho
from attnscale.layer import finite_d
from attnscale.regimes.common import check_level, logit, n_array, out_like

__all__ = ["gap_top_weight", "gap_critical_beta", "finite_d_critical_beta", "log_n_breakdown"]


def gap_top_weight(n, rho, beta):
    """Self-weight with self-score 1 and every other score ``rho`` (docs/regimes.md#gap-regime-paper-a).

    ``A_self = 1 / (1 + (n - 1) e^{-beta (1 - rho)})``: deterministic, and the top weight since
    ``1 > rho``.

    Parameters
    ----------
    n : float or array_like
        Tokens, ``>= 2``.
    rho : float
        The other scores, ``0 <= rho < 1`` (the gap is ``1 - rho``).
    beta : float
        Inverse temperature, ``>= 0``.

    Returns
    -------
    float or numpy.ndarray
        ``A_self`` with the shape of ``n``.
    """
    nn = n_array(n)
    rho, beta = check_rho(rho), check_real("beta", beta, low=0.0)
    return out_like(1.0 / (1.0 + (nn - 1.0) * np.exp(-beta * (1.0 - rho))), n)


def gap_critical_beta(n, rho, *, level: float = LEVEL):
    """``beta*`` of the gap model: ``ln((n - 1) level / (1 - level)) / (1 - rho)``, i.e.
    ``ln(n - 1) / (1 - rho) = gamma_c ln(n - 1)`` at ``level = 1/2`` (Paper A's critical line;
    docs/regimes.md#gap-regime-paper-a). 0 where the self-weight already exceeds ``level`` at
    ``beta = 0`` (``n <= 1 / level``).

    Parameters
    ----------
    n : float or array_like
        Tokens, ``>= 2``.
    rho : float
        Other scores, ``0 <= rho < 1``.
    level : float, optional
        Level of the self-weight, ``0 < level < 1``.

    Returns
    -------
    float or numpy.ndarray
        ``beta*`` with the shape of ``n``.
    """
    nn = n_array(n)
    rho, level = check_rho(rho), check_level(level)
    return out_like(np.maximum(0.0, (np.log(nn - 1.0) + logit(level)) / (1.0 - rho)), n)


def finite_d_critical_beta(n, d: int, rho: float):
    """Exact finite-``d`` ``beta*`` of Gaussian near-simplex tokens, :func:`attnscale.layer.finite_d.critical_beta`
    (mean self-weight 1/2, docs/finite-d.md#finite-d-critical-point), vectorised over ``n``
    (rounded to integers) (docs/regimes.md#finite-d-where-log-n-ends)."""
    nn = n_array(n, low=2.0)
    out = np.array([finite_d.critical_beta(int(round(v)), d, rho) for v in nn.ravel()])
    return out_like(out.reshape(nn.shape), n)


def log_n_breakdown(d: int, rho: float) -> float:
    """``ln(n - 1)`` at which the first-order finite-``d`` equation
    ``beta (1 - rho) - beta^2 s^2 / 2 = ln(n - 1)`` stops having a root:
    ``(1 - rho)^2 / (2 s^2) = d / (2 (1 + rho - rho^2 / 2))``. Beyond it the nearest tokens, not
    the bulk, set ``beta*``, and the ``log n`` scale ends
    (docs/regimes.md#finite-d-where-log-n-ends)."""
    d = check_int("d", d, minimum=3)
    rho = check_rho(rho)
    return (1.0 - rho) ** 2 / (2.0 * finite_d.first_order_variance(d, rho))
