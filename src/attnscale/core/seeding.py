"""Random generators derived from a job's identity (docs/pipeline.md#reproducibility).

Every random draw in attnscale comes from ``numpy.random.default_rng(SeedSequence(root,
spawn_key=ids))`` where ``root`` is the 128-bit root seed of ``config.yaml`` and ``ids`` are
stable non-negative integers naming the job (the experiment, d, n, trial, ...). This equals
``SeedSequence(root).spawn(k)[i]`` for single-integer keys and does not depend on the order in
which jobs run or on which other jobs exist. Global random state is never used.
"""

from __future__ import annotations

import hashlib

import numpy as np

from attnscale.core.validation import check_int

__all__ = ["stable_id", "value_id", "spawn_key", "job_rng"]

MAX_SEED = 2**128 - 1


def stable_id(label: str) -> int:
    """A stable 32-bit integer for a string label (sha256, never Python's salted ``hash``)."""
    return int.from_bytes(hashlib.sha256(label.encode("utf-8")).digest()[:4], "big")


def value_id(x: float, scale: int = 10**6) -> int:
    """A stable integer for a grid value such as rho: ``round(x * scale)`` (must be >= 0)."""
    v = int(round(float(x) * scale))
    if v < 0:
        raise ValueError(f"value_id needs a non-negative value, got {x}")
    return v


def spawn_key(experiment: str, *ids: int) -> tuple[int, ...]:
    """The spawn key of a job: ``(stable_id(experiment), *ids)`` with every id a non-negative int."""
    key = [stable_id(experiment)]
    for k, i in enumerate(ids):
        key.append(check_int(f"ids[{k}]", i, minimum=0))
    return tuple(key)


def job_rng(root_seed: int, key: tuple[int, ...]) -> np.random.Generator:
    """The generator of one job: ``default_rng(SeedSequence(root_seed, spawn_key=key))``."""
    root_seed = check_int("root_seed", root_seed, minimum=0, maximum=MAX_SEED)
    return np.random.default_rng(np.random.SeedSequence(root_seed, spawn_key=key))
