"""Parameter grids as written in ``config.yaml`` and their canonical string form for file names."""

from __future__ import annotations

import numpy as np


def expand_grid(spec, name: str = "grid") -> np.ndarray:
    """Expand a grid spec: a list of numbers, or ``{start, stop, num, spacing}``.

    ``spacing`` is ``"linear"`` (``numpy.linspace``) or ``"log"`` (``numpy.geomspace``).
    Values are rounded to 10 significant digits so that file names and seeds are stable.
    """
    if isinstance(spec, dict):
        start, stop, num = spec["start"], spec["stop"], int(spec["num"])
        spacing = spec.get("spacing", "linear")
        if num < 1:
            raise ValueError(f"{name}.num must be >= 1, got {num}")
        if spacing == "log":
            if start <= 0:
                raise ValueError(f"{name}.start must be > 0 for log spacing, got {start}")
            vals = np.geomspace(start, stop, num)
        elif spacing == "linear":
            vals = np.linspace(start, stop, num)
        else:
            raise ValueError(f"{name}.spacing must be 'linear' or 'log', got {spacing!r}")
    else:
        vals = np.asarray(spec, dtype=float)
    vals = np.array([float(f"{v:.10g}") for v in np.atleast_1d(vals)])
    if vals.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.any(np.diff(vals) <= 0):
        raise ValueError(f"{name} must be strictly increasing, got {vals.tolist()}")
    return vals


def fmt(x: float, digits: int = 4) -> str:
    """Canonical string of a grid value for paths, e.g. ``fmt(0.05) == "0.0500"``."""
    return f"{float(x):.{digits}f}"
