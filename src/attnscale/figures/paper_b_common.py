"""Small helpers shared by the Paper B figures: grid-cell edges and tick-friendly labels."""

from __future__ import annotations

import numpy as np


def cell_edges(v, log: bool) -> np.ndarray:
    """Cell edges around grid centres (geometric midpoints on a log axis)."""
    v = np.asarray(v, dtype=float)
    if v.size == 1:
        return np.array([v[0] * 0.9, v[0] * 1.1]) if log else np.array([v[0] - 0.5, v[0] + 0.5])
    w = np.log(v) if log else v
    mid = 0.5 * (w[1:] + w[:-1])
    e = np.concatenate([[2 * w[0] - mid[0]], mid, [2 * w[-1] - mid[-1]]])
    return np.exp(e) if log else e


def sci_label(x: float) -> str:
    """``1e5`` -> ``10^5`` as mathtext when x is a power of ten, else ``%g``."""
    e = np.log10(x)
    if abs(e - round(e)) < 1e-9:
        return rf"10^{{{int(round(e))}}}"
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def nice_number(v: float) -> float:
    """A round number (1, 2 or 5 times a power of ten) close to ``v``."""
    e = np.floor(np.log10(v))
    m = v / 10**e
    return float((1 if m < 1.5 else 2 if m < 3.5 else 5) * 10**e)
