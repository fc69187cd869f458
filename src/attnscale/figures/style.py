"""The figures' shared look: rcParams, captions wrapped to the figure's width and the cell edges
of heat maps, in one place (docs/pipeline.md#reproducibility).

Figures are saved by the adapter with :func:`attnscale.pipeline.io.save_figure` (Agg PNG without
timestamp, PDF without metadata dates), so identical data give identical bytes.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["STYLE", "apply_style", "add_caption", "cell_edges"]

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "pdf.fonttype": 42,
    "svg.hashsalt": "attnscale",
}


def apply_style() -> None:
    """Apply the project's rcParams (call before creating figures)."""
    plt.rcParams.update(STYLE)


def add_caption(fig, text: str, *, x: float = 0.01, y: float = 0.005, size: float = 6.5):
    """Put a caption at the bottom-left of ``fig``, wrapped to the figure's width.

    Wrapping is done here with :mod:`textwrap` (about 0.6 em per character, conservative for
    DejaVu Sans) rather than by matplotlib's ``wrap=True``, which can overrun the right edge.
    """
    import textwrap

    width_pt = fig.get_figwidth() * 72.0 * (1.0 - 2 * x)
    chars = max(20, int(width_pt / (0.6 * size)))
    wrapped = "\n".join(textwrap.wrap(text, width=chars))
    return fig.text(x, y, wrapped, fontsize=size, ha="left", va="bottom")


def cell_edges(v, log: bool) -> np.ndarray:
    """Cell edges around grid centres (geometric midpoints on a log axis)."""
    v = np.asarray(v, dtype=float)
    if v.size == 1:
        return np.array([v[0] * 0.9, v[0] * 1.1]) if log else np.array([v[0] - 0.5, v[0] + 0.5])
    w = np.log(v) if log else v
    mid = 0.5 * (w[1:] + w[:-1])
    e = np.concatenate([[2 * w[0] - mid[0]], mid, [2 * w[-1] - mid[-1]]])
    return np.exp(e) if log else e
