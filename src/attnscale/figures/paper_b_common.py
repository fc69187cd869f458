"""Small helpers shared by the Paper B figures: grid-cell edges and tick-friendly labels."""

from __future__ import annotations

import numpy as np

__all__ = ["sci_label", "nice_number"]


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
