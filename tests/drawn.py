"""What a matplotlib figure draws, as data, for figure tests that check the plotted values against
the table they came from (not only that axes exist)."""

from __future__ import annotations

import numpy as np


def lines(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Label -> (x, y) of every labelled ``Line2D`` of an axes (errorbar lines included)."""
    out = {}
    for line in ax.get_lines():
        label = line.get_label()
        if label.startswith("_"):
            continue
        out[label] = (
            np.asarray(line.get_xdata(), dtype=float),
            np.asarray(line.get_ydata(), dtype=float),
        )
    return out


def all_lines(ax) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Every ``Line2D`` of an axes, labelled or not: ``(label, x, y)``."""
    return [
        (
            line.get_label(),
            np.asarray(line.get_xdata(), dtype=float),
            np.asarray(line.get_ydata(), dtype=float),
        )
        for line in ax.get_lines()
    ]


def errorbars(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Label -> (x, y) of the data line of every labelled ``errorbar`` of an axes."""
    out = {}
    for c in ax.containers:
        if getattr(c, "lines", None) is None or c.get_label().startswith("_"):
            continue
        data = c.lines[0]
        out[c.get_label()] = (
            np.asarray(data.get_xdata(), dtype=float),
            np.asarray(data.get_ydata(), dtype=float),
        )
    return out
