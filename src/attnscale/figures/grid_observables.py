"""Figure (ours): an observable of the registry on Figure 1's (rho, gamma) grid
(docs/pipeline.md#the-observable-registry, docs/paper-a.md#the-attention-entropy).

One heat map per ``d`` of the observable's mean over draws (the same draws and grid as Figure 1,
accumulated in the same key-tiled pass as lambda), with Paper A's critical curve
``gamma = 1/(1 - rho)`` and the finite-d critical line (:func:`attnscale.figures.paper_a.heatmap_panels`).
Every observable with ``on_grid`` in :data:`attnscale.layer.observables.REGISTRY` gets this figure
from rule ``paper_a_grid_figure``; nothing here names one.
"""

from __future__ import annotations

import pandas as pd

from attnscale.figures.paper_a import heatmap_panels
from attnscale.layer.observables import get

__all__ = ["plot_grid_observable"]


def plot_grid_observable(
    *, data: pd.DataFrame, caption: str, observable: str, line: pd.DataFrame | None = None
):
    """Heat maps of the registered observable ``observable`` over Figure 1's grid (module
    docstring): its column ``<name>_mean`` of Figure 1's cell table
    (:func:`attnscale.experiments.paper_a.figure1_data`), the colour range its ``n -> inf``
    limits as ``beta -> 0`` and ``beta -> inf`` (:meth:`attnscale.layer.observables.Observable.limits`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    o = get(observable)
    lo, hi = sorted(o.limits(0.5))
    return heatmap_panels(
        data,
        f"{o.name}_mean",
        label=o.label,
        title=f"{o.label} after one attention layer over Figure 1's grid (ours)",
        caption=caption,
        vmin=lo,
        vmax=hi,
        cmap="magma",
        line=line,
    )
