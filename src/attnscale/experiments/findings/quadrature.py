"""The quadrature error of eta's mean field at the points docs/finite-d.md#mean-field-for-eta
states (issue 45: computed, not typed): the standard key grid against the fine one."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import Finding, compute

__all__ = ["QUADRATURE_POINTS", "QUADRATURE_X", "quadrature_findings"]

#: (n, d, rho) of the comparison, ||z_0|| = 1 [choice]: the largest correlation of the theorem
#: table at a small and a typical head dimension.
QUADRATURE_POINTS = ((1024, 32, 0.8), (1024, 128, 0.8))
#: beta = x ln n / (1 - rho) over these x [choice]: below, at and above the transition.
QUADRATURE_X = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)


def quadrature_findings(*, theory: pd.DataFrame) -> list[Finding]:
    """The largest ``|eta_MF(standard) - eta_MF(fine)|`` over :data:`QUADRATURE_X` at each of
    :data:`QUADRATURE_POINTS` (``theory``, the transition theory table, is not read: the values
    are the library's at fixed points, docs/finite-d.md#mean-field-for-eta)."""
    from attnscale.layer.finite_d.eta import eta_mean_field

    def errors():
        out = []
        for n, d, rho in QUADRATURE_POINTS:
            beta = np.asarray(QUADRATURE_X) * np.log(n) / (1.0 - rho)
            std = eta_mean_field(n, d, rho, beta, r0=1.0)
            fine = eta_mean_field(n, d, rho, beta, r0=1.0, quadrature="fine")
            out.append(float(np.max(np.abs(std - fine))))
        where = " / ".join(f"d = {d}, rho = {rho:g}" for _, d, rho in QUADRATURE_POINTS)
        return {
            "label": "eta's mean field, standard key grid against the fine one: largest absolute "
            f"difference over x = {', '.join(f'{x:g}' for x in QUADRATURE_X)} "
            f"(beta = x ln n / (1 - rho), n = {QUADRATURE_POINTS[0][0]}, ||z_0|| = 1) at {where}",
            "value": out,
        }

    return [
        compute(
            "finite_d.eta_quadrature_error",
            "eta mean field, quadrature",
            errors,
            fmt=".1g",
            source=["attnscale.layer.finite_d.eta.eta_mean_field"],
        )
    ]
