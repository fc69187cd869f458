"""Figure data of the realistic-attention figures (ours): what the sink and depth figures show
beyond the per-draw tables of :mod:`attnscale.experiments.realistic`, reduced over draws here so
that the plot functions reduce nothing (docs/realistic-attention.md#attention-sink,
docs/realistic-attention.md#depth, docs/pipeline.md#adding-a-figure).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.layer import theory
from attnscale.layer.scores import sink
from attnscale.pipeline.io import with_job_provenance

from .summaries import mean_se_table

__all__ = ["sink_figure_data", "depth_summary"]


def _frame(data) -> pd.DataFrame:
    """One DataFrame from a DataFrame or a list of them (one per trial job)."""
    return data if isinstance(data, pd.DataFrame) else pd.concat(list(data), ignore_index=True)


def sink_figure_data(*, curves, critical) -> dict:
    """Entry of rule ``realistic_sink_summary``: the figure data of the sink figure beyond its
    per-draw critical points (``docs/realistic-attention.md#attention-sink``).

    Parameters
    ----------
    curves, critical : DataFrame or list of DataFrame
        The tables of :func:`attnscale.experiments.realistic.attention_sink` (one per trial).

    Returns
    -------
    dict
        ``"curves"``: mean and standard error over draws (:func:`attnscale.experiments.summaries.mean_se_table`)
        of the self-weight and the sink mass on the gamma grid, per ``(kappa, c_s, gamma)``.
        ``"theory"``: the exact simplex-with-sink theory at the draws' mean ``rho_hat``
        (``rho_hat_mean``) and mean score spread (``sd_cross_mean``): ``line = "sink_mass"``,
        the sink mass at ``gamma_c(rho_hat_mean)`` against ``x = c_s`` (200 points over the
        simulated range) per ``kappa``; ``line = "critical"`` and ``"critical_spread"``, the
        critical gamma without and with the spread against ``x = kappa c_s`` (400 points from
        the smallest simulated value to 0.9999; it depends on ``kappa c_s`` only, ``kappa`` is
        ``nan``); ``gamma_c`` is ``gamma_c(rho_hat_mean)``.
    """
    curves, critical = _frame(curves), _frame(critical)
    n = int(critical["n"].iloc[0])
    rho_hat = float(critical["rho_hat"].mean())
    sd = float(critical["sd_cross"].mean())
    ln = np.log(n)
    gc = theory.gamma_c(rho_hat)
    cs_fine = np.linspace(float(critical["c_s"].min()), float(critical["c_s"].max()), 200)
    ks_fine = np.linspace(float((critical["kappa"] * critical["c_s"]).min()), 0.9999, 400)
    lines = [
        pd.DataFrame(
            {
                "line": "sink_mass",
                "kappa": k,
                "x": cs_fine,
                "value": [sink.simplex_sink_weights(n, rho_hat, c, gc * ln, k)[2] for c in cs_fine],
            }
        )
        for k in sorted(critical["kappa"].unique())
    ]
    for line, spread in (("critical", ()), ("critical_spread", (sd,))):
        value = [sink.simplex_sink_critical_beta(n, rho_hat, x, 1.0, *spread) / ln for x in ks_fine]
        lines.append(pd.DataFrame({"line": line, "kappa": np.nan, "x": ks_fine, "value": value}))
    out = pd.concat(lines, ignore_index=True).assign(
        n=n, rho_hat_mean=rho_hat, sd_cross_mean=sd, gamma_c=gc
    )
    grid = curves[curves["gamma_kind"] == "grid"]
    means = mean_se_table(
        grid.groupby(["kappa", "c_s", "gamma"], sort=True), ["self_weight", "sink_mass"]
    )
    return {"curves": with_job_provenance(means), "theory": with_job_provenance(out)}


#: One row of the depth figure data per these keys ...
DEPTH_KEYS = ["n", "d", "alpha", "gamma_factor", "layer"]
#: ... with the mean and standard error over draws of these columns.
DEPTH_COLUMNS = ["delta", "delta_simplex", "lambda", "lambda_simplex"]


def depth_summary(*, data) -> pd.DataFrame:
    """Entry of rule ``realistic_depth_summary``: the figure data of the depth figure
    (``docs/realistic-attention.md#depth``).

    Parameters
    ----------
    data : DataFrame or list of DataFrame
        Tables of :func:`attnscale.experiments.realistic.depth_iteration` (one per trial).

    Returns
    -------
    pandas.DataFrame
        One row per :data:`DEPTH_KEYS`: ``<col>_mean`` and ``<col>_se`` over draws of every
        column of :data:`DEPTH_COLUMNS` (:func:`attnscale.experiments.summaries.mean_se_table`),
        ``trials``, and ``rho_hat0_mean``, the mean of the draws' ``rho_hat_0`` over the table's
        rows (every draw has the same rows).
    """
    table = _frame(data)
    out = mean_se_table(table.groupby(DEPTH_KEYS, sort=True), DEPTH_COLUMNS)
    return with_job_provenance(out.assign(rho_hat0_mean=float(table["rho_hat0"].mean())))
