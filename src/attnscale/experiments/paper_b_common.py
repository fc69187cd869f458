"""Shared pieces of the Paper B entry functions: blocks of D2Q draws.

Every Paper B table carries the provenance of its draw (:func:`attnscale.pipeline.io.provenance_columns`: ``root_seed``, ``spawn_key``
(``-``-joined), ``params_hash``, package version and git commit. Generators come only from
:func:`attnscale.core.seeding.job_rng` with keys built by :func:`attnscale.core.seeding.spawn_key` from the
experiment's stream name and integer ids, so results do not depend on which other jobs run.
"""

from __future__ import annotations

from attnscale.sphere import keys

__all__ = ["d2q_blocks"]

#: Keys per block of trials when drawing D2Q matrices (float64 entries, 32 MiB).
TRIAL_BLOCK_ENTRIES = 4 * 2**20


def d2q_blocks(trials: int, n: int, d: int, rng, method: str):
    """Yield ``(trials_in_block, n)`` D2Q blocks of uniform keys, in a fixed order."""
    block_rows = max(1, TRIAL_BLOCK_ENTRIES // (n * (d if method == "sphere" else 1)))
    for s in range(0, trials, block_rows):
        yield keys.sample_d2q_uniform(min(block_rows, trials - s), n, d, rng, method)
