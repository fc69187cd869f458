"""Wall-clock timing for the benchmarks (docs/pipeline.md#pipeline-efficiency). Benchmarks only:
no result of the workflow depends on a clock."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["best_time"]


def best_time(fn, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls after one warm-up call."""
    fn()
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return float(best)
