"""Findings of the observables of the registry on Figure 1's grid
(docs/pipeline.md#the-observable-registry): declared once for every observable with ``on_grid``
in :data:`attnscale.layer.observables.REGISTRY`, read from the per-draw rows at
``gamma_c(rho_hat)`` (rule ``paper_a_lambda_summary``'s critical table)."""

from __future__ import annotations

import pandas as pd

from attnscale.experiments.findings.record import Finding, compute
from attnscale.layer.observables import grid_observables

__all__ = ["GRID_NAMES", "grid_critical"]

#: The names of the observables on Figure 1's grid beside lambda.
GRID_NAMES = tuple(o.name for o in grid_observables())


def grid_critical(critical: pd.DataFrame, at_rho, src) -> list[Finding]:
    """Every grid observable's findings at ``gamma_c(rho_hat)`` (:func:`_one`); ``at_rho(col,
    label)`` reads a column at the reported rho of the largest d
    (:func:`attnscale.experiments.findings.paper_a.critical_lambda_findings`)."""
    return [f for o in grid_observables() for f in _one(o, critical, at_rho, src)]


def _one(o, critical: pd.DataFrame, at_rho, src) -> list[Finding]:
    """The findings of an observable of the registry on Figure 1's grid
    (docs/pipeline.md#the-observable-registry) at ``gamma_c(rho_hat)``: its simulated value, the
    finite-n simplex value at the draws' ``rho_hat``, and their largest mean gap over rho, per d."""

    def gap():
        diff = critical[o.name] - critical[f"{o.name}_simplex_n"]
        means = diff.groupby([critical["d"], critical["rho"]]).mean()
        return {
            "label": f"{o.label} at gamma_c(rho_hat) minus its finite-n simplex value: the largest "
            "|mean over draws| over rho, per d = " + " / ".join(map(str, means.index.levels[0])),
            "value": [float(means.loc[d].abs().max()) for d in means.index.levels[0]],
        }

    return [
        compute(
            f"paper_a.{o.name}_critical_sim",
            f"simulated {o.name} at gamma_c",
            lambda: at_rho(o.name, f"simulated {o.label} at gamma_c(rho_hat)"),
            fmt=".3f",
            source=src,
        ),
        compute(
            f"paper_a.{o.name}_critical_simplex",
            f"simplex {o.name} at gamma_c",
            lambda: at_rho(
                f"{o.name}_simplex_n", f"finite-n simplex {o.label} at the draws' rho_hat (mean)"
            ),
            fmt=".3f",
            source=src,
        ),
        compute(
            f"paper_a.{o.name}_critical_gap",
            f"{o.name} at gamma_c against the simplex",
            gap,
            fmt=".3f",
            source=src,
        ),
    ]
