"""Wall-clock timing and machine facts for the benchmarks (docs/pipeline.md#pipeline-efficiency).
Benchmarks only: no result of the workflow depends on a clock."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import numpy as np

__all__ = ["best_time", "machine_info"]


def best_time(fn, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls after one warm-up call."""
    fn()
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return float(best)


def machine_info() -> dict:
    """CPU model, core count, BLAS and library versions (for the README table)."""
    from threadpoolctl import threadpool_info

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    blas = [
        {k: p.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
        for p in threadpool_info()
        if p.get("user_api") == "blas"
    ]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas,
    }
