"""Argument checks and provenance columns shared by the regimes experiment's entry functions
(docs/regimes.md).

The critical-scale regimes experiment (issue 20, docs/regimes.md) is split by concern:
:mod:`attnscale.experiments.regimes_common` (argument checks and provenance columns),
:mod:`attnscale.experiments.regimes_simulation` (how ``beta*`` is simulated),
:mod:`attnscale.experiments.regimes_rem` and :mod:`attnscale.experiments.regimes_tokens` (the
simulations), :mod:`attnscale.experiments.regimes_theory` (the predictions) and
:mod:`attnscale.experiments.regimes_summary` (the table behind the figure).
"""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.pipeline.io import PROVENANCE_COLUMNS

__all__ = ["PROV", "n_list", "simulation_args", "ties_series", "ties_k"]

#: Provenance columns of every simulated row.
PROV = list(PROVENANCE_COLUMNS)


def n_list(n) -> list[int]:
    """Context lengths ``n`` as integers (``>= 3``, strictly increasing after rounding), or raise
    naming ``n``."""
    v = check_vector("n", n, low=3.0)
    out = [int(round(x)) for x in v]
    if len(set(out)) != len(out) or any(np.diff(out) <= 0):
        raise ValueError(f"n must be strictly increasing after rounding to integers, got {out}")
    return out


def simulation_args(contexts, level, grid_points, batches):
    """The simulation's common arguments checked: ``contexts >= 4``, ``0 < level < 1``,
    ``grid_points >= 3``, ``2 <= batches <= contexts``
    (docs/regimes.md#simulation-and-root-finding)."""
    contexts = check_int("contexts", contexts, minimum=4)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    grid_points = check_int("grid_points", grid_points, minimum=3)
    batches = check_int("batches", batches, minimum=2, maximum=contexts)
    return contexts, level, grid_points, batches


def ties_series(ties) -> list[tuple[float, float]]:
    """``[[kappa, copy_noise], ...]`` checked: ``0 < kappa < 1``, ``copy_noise >= 0``."""
    out = []
    for i, pair in enumerate(ties or []):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"ties[{i}] must be a pair [kappa, copy_noise], got {pair!r}")
        kappa = check_real(
            f"ties[{i}] kappa", pair[0], low=0.0, high=1.0, low_open=True, high_open=True
        )
        noise = check_real(f"ties[{i}] copy_noise", pair[1], low=0.0)
        out.append((kappa, noise))
    if len(set(out)) != len(out):
        raise ValueError(f"ties must hold distinct [kappa, copy_noise] pairs, got {out}")
    return out


def ties_k(n: int, kappa: float) -> int:
    """Group size of the ``kappa`` series at ``n``: ``round(n^kappa)``, at least 2 and at most
    ``n - 1`` (docs/regimes.md#near-ties)."""
    return int(min(n - 1, max(2, round(n**kappa))))
