"""Samplers of the random-energy model (docs/regimes.md#samplers): ``n`` i.i.d. Gaussian scores
(:func:`rem_scores`), or only those above a threshold, exactly (:func:`rem_scores_above`; the
threshold from :func:`attnscale.regimes.rem.rem_truncation_threshold`). Random numbers only from a
:class:`numpy.random.Generator` built by :mod:`attnscale.core.seeding`.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from attnscale.core.validation import check_int, check_real, check_rng

__all__ = ["rem_scores", "rem_scores_above"]


def rem_scores(n: int, rng: np.random.Generator, *, mu: float = 0.0, s: float = 1.0) -> np.ndarray:
    """``n`` i.i.d. ``N(mu, s^2)`` scores (docs/regimes.md#samplers)."""
    n = check_int("n", n, minimum=1)
    mu = check_real("mu", mu)
    s = check_real("s", s, low=0.0, low_open=True)
    check_rng(rng)
    return mu + s * rng.standard_normal(n)


def rem_scores_above(n: int, threshold: float, rng: np.random.Generator) -> np.ndarray:
    """The standard-normal scores above ``threshold`` among ``n`` i.i.d. draws, exactly in law
    (docs/regimes.md#samplers): their number is ``Binomial(n, Q(threshold))`` and, given it, they
    are i.i.d. from the tail, ``X = Q^{-1}(Q(threshold) U)`` with ``U`` uniform on ``(0, 1]``.
    Unordered; may be empty. ``threshold`` must have ``Q(threshold) <= 1/2`` (``>= 0``): below
    that, draw all ``n`` with :func:`rem_scores`."""
    n = check_int("n", n, minimum=1)
    threshold = check_real("threshold", threshold, low=0.0)
    check_rng(rng)
    q = float(special.ndtr(-threshold))
    m = int(rng.binomial(n, q))
    u = 1.0 - rng.random(m)
    return -special.ndtri(q * u)
