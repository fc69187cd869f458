"""Threads for the element-wise passes of the sampled and causal kernels (private: the kernels'
plumbing, not an API; docs/long-context.md#cost-and-memory, docs/realistic-attention.md#causal-mask).

Between two multi-threaded GEMMs a kernel scales, exponentiates, masks and sums a tile of scores;
numpy runs these loops in one thread, but releases the GIL in them. :func:`split_rows` runs them
on consecutive row slices of the tile in a shared thread pool with as many workers as BLAS may use
at the call (:func:`blas_threads`), so the cores are not idle between GEMMs. Every row is computed
by the same operations whatever the split: results do not depend on the number of threads (bit for
bit).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np

__all__ = ["THREADED_ENTRIES", "blas_threads", "tile_threads", "split_rows"]

#: Tiles with fewer entries than this run their element-wise passes in one thread (the cost of
#: handing out the slices, tens of microseconds, would exceed the gain).
THREADED_ENTRIES = 2**15
_POOL: dict[int, ThreadPoolExecutor] = {}  # worker count -> pool, created on first use


def blas_threads() -> int:
    """Threads BLAS may use at this moment (a job limited to one thread stays on one core)."""
    from threadpoolctl import threadpool_info

    counts = [i.get("num_threads", 1) for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(1, min(counts, default=1))


def tile_threads(n_rows: int, n_cols: int) -> int:
    """Threads for the element-wise passes of ``n_rows x n_cols`` tiles: :func:`blas_threads` from
    :data:`THREADED_ENTRIES` entries on, else 1."""
    return blas_threads() if n_rows * n_cols >= THREADED_ENTRIES else 1


def split_rows(fn, n_rows: int, n_cols: int, threads: int) -> None:
    """Call ``fn(r0, r1)`` on ``threads`` consecutive row slices of an ``n_rows x n_cols`` tile in the
    shared thread pool; a small tile (under :data:`THREADED_ENTRIES` entries or fewer than two
    rows per thread), or one thread, runs as one slice in this thread."""
    if threads <= 1 or n_rows < 2 * threads or n_rows * n_cols < THREADED_ENTRIES:
        fn(0, n_rows)
        return
    if threads not in _POOL:
        _POOL[threads] = ThreadPoolExecutor(threads, thread_name_prefix="attnscale-rows")
    cuts = np.linspace(0, n_rows, threads + 1).astype(int)
    jobs = [_POOL[threads].submit(fn, int(a), int(b)) for a, b in pairwise(cuts)]
    for job in jobs:
        job.result()
