"""What a run's executor needs outside the pinned Python environment
(docs/pipeline.md#optional-pieces): the Slurm profile needs Slurm's commands on ``PATH``, and
only it; without them the run stops before its first job with one message saying so, instead of
waiting on a cluster that is not there.
"""

from __future__ import annotations

import shutil

__all__ = ["SLURM_COMMANDS", "executor_missing"]

#: The Slurm commands snakemake-executor-plugin-slurm calls (submit, watch, cancel).
SLURM_COMMANDS = ("sbatch", "squeue", "scancel")


def executor_missing(executor: str | None, which=shutil.which) -> str | None:
    """Why ``executor`` (Snakemake's executor name, e.g. ``"slurm"`` or ``"local"``) cannot run
    on this machine, or ``None``.

    Parameters
    ----------
    executor : str or None
        The executor plugin's name; only ``"slurm"`` needs programs outside the environment.
    which : callable
        ``shutil.which`` (a test passes its own).

    Returns
    -------
    str or None
        A message naming the missing commands and the two ways out.
    """
    if executor != "slurm":
        return None
    missing = [c for c in SLURM_COMMANDS if which(c) is None]
    if not missing:
        return None
    return (
        f"the Slurm profile (executor slurm) needs Slurm's commands on PATH; "
        f"{', '.join(missing)} not found. Run it on the cluster's submit host, or run locally "
        "without --workflow-profile profiles/slurm (docs/pipeline.md#scaling-out)"
    )
