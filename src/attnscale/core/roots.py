"""Brent's root finder in pure Python, step for step the algorithm of :func:`scipy.optimize.brentq`
(docs/ask-the-theory.md#start-up-time).

Why a copy: importing :mod:`scipy.optimize` costs about 0.2 s, more than the rest of the command
line's start-up together, and the ``attnscale critical`` command needs nothing else from it. This
is the C routine SciPy runs (``brentq.c``: inverse quadratic interpolation, secant steps and
bisection, after Brent 1973, ch. 4) written out in Python floats, which are IEEE doubles like C's,
so it visits the same points and returns the same root, bit for bit
(``tests/test_roots.py`` checks that against SciPy on thousands of brackets).
"""

from __future__ import annotations

import math

__all__ = ["RTOL", "LEVEL", "brentq", "increasing_root"]

#: SciPy's smallest (and default) relative tolerance, four machine epsilons.
RTOL = 4 * 2.220446049250313e-16

#: [choice] The target level: the critical point ``beta*`` is where the mean self-weight
#: ``E A_ii`` (Paper A, finite d), the mean top-group weight (docs/regimes.md#the-observable) or
#: the mean top weight ``E A_(1)`` (Paper B) equals 1/2, the simplex self-weight at Paper A's
#: ``gamma_c`` (docs/glossary.md). The one definition; a configuration may choose another level.
LEVEL = 0.5


def brentq(
    f, a: float, b: float, *, xtol: float = 2e-12, rtol: float = RTOL, maxiter: int = 100
) -> float:
    """A root of ``f`` in ``[a, b]`` where ``f(a)`` and ``f(b)`` differ in sign; the same iterates
    and the same result as ``scipy.optimize.brentq(f, a, b, xtol=xtol, rtol=rtol,
    maxiter=maxiter)``.

    Parameters
    ----------
    f : callable
        ``f(x) -> float``.
    a, b : float
        The bracket.
    xtol, rtol : float, optional
        The root is returned once it is known to within ``(xtol + rtol |x|) / 2``; ``xtol > 0``,
        ``rtol >= 4 eps``.
    maxiter : int, optional
        Iterations before giving up.

    Raises
    ------
    ValueError
        A tolerance out of range, ``f(a)`` and ``f(b)`` of the same sign, or ``f`` returning NaN.
    RuntimeError
        No convergence within ``maxiter`` iterations.
    """
    if xtol <= 0:
        raise ValueError(f"xtol too small ({xtol:g} <= 0)")
    if rtol < RTOL:
        raise ValueError(f"rtol too small ({rtol:g} < {RTOL:g})")

    def value(x: float) -> float:
        fx = float(f(x))
        if math.isnan(fx):
            raise ValueError(f"The function value at x={x} is NaN; solver cannot continue.")
        return fx

    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = value(xpre), value(xcur)
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate (secant)
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate (inverse quadratic)
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry  # good short step
            else:
                spre = scur = sbis  # bisect
        else:
            spre = scur = sbis  # bisect
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = value(xcur)
    raise RuntimeError(f"Failed to converge after {maxiter} iterations, value is {xcur}")


def increasing_root(f, lo: float, hi: float, *, rtol: float, xtol: float = 1e-12) -> float:
    """The root of an increasing ``f`` from a first bracket ``[lo, hi]`` (``0 < lo < hi``) around
    a guess: ``lo`` is halved while ``f(lo) > 0`` and ``hi`` doubled while ``f(hi) < 0`` (each
    move keeps the other end's value), then :func:`brentq` (``xtol``, ``rtol``) on the bracket.

    The one bracketing routine of the critical points ``beta*`` (docs/finite-d.md#finite-d-critical-point,
    docs/regimes.md#exact-finite-d-theory-for-k-copies).
    """
    flo, fhi = f(lo), f(hi)
    while flo > 0:
        hi, fhi = lo, flo
        lo /= 2.0
        flo = f(lo)
    while fhi < 0:
        lo, flo = hi, fhi
        hi *= 2.0
        fhi = f(hi)
    return float(brentq(f, lo, hi, xtol=xtol, rtol=rtol))
