"""The training step of the training family against the same run's float32 GEMM peak
(docs/training.md#cost-measured-2026-12-03-shared-2-core-machine; docs/performance.md). Not part of ``all``: rule ``benchmark_training``.

FLOPs of a step are XLA's own count of the compiled step (``cost_analysis``), so the ratio
to the GEMM peak says how far from the machine's matrix throughput a step runs.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from attnscale.pipeline.io import with_job_provenance

__all__ = ["gemm_peak32", "step_time", "suite"]


def _best(fn, repeat):
    fn()  # compile / warm up
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def gemm_peak32(size: int = 1024, repeat: int = 5) -> float:
    """float32 GFLOP/s of a jitted square matmul of ``size``."""
    import jax
    import jax.numpy as jnp

    a = jnp.asarray(np.random.default_rng(0).standard_normal((size, size)), jnp.float32)
    mm = jax.jit(jnp.matmul)
    t = _best(lambda: mm(a, a).block_until_ready(), repeat)
    return 2.0 * size**3 / t / 1e9


def step_time(loss_fn, params, batch, repeat: int = 5) -> tuple[float, float]:
    """(best seconds, FLOPs) of one jitted value-and-grad step of ``loss_fn`` on ``batch``."""
    import jax
    import jax.numpy as jnp

    p = {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}
    step = jax.jit(jax.value_and_grad(loss_fn))
    cost = step.lower(p, batch).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    t = _best(lambda: jax.block_until_ready(step(p, batch)), repeat)
    return t, float(cost.get("flops", np.nan))


def suite(*, retrieval: dict, lm: dict, repeat: int = 5) -> dict:
    """Entry of rule ``benchmark_training``: one retrieval step and one language-model step at
    the configured sizes, seconds, GFLOP/s and the ratio to the float32 GEMM peak."""
    import jax

    from attnscale.training import decoder as D
    from attnscale.training import retrieval as R

    rng = np.random.default_rng(0)
    peak = gemm_peak32()
    records = []
    cfg = {**retrieval, "variant": "rule"}
    b = R.batch(rng, retrieval["batch"], retrieval["n_train"], cfg)
    t, f = step_time(
        lambda p, b: R.loss(p, b, "rule", cfg, jax.numpy), R.init_params(rng, cfg), b, repeat
    )
    records.append({"benchmark": "retrieval step", "seconds": t, "flops": f})
    cfg = {**lm, "n_train": lm["context"], "vocab": 80}
    ids = rng.integers(0, 80, size=(lm["batch"], lm["context"] + 1)).astype(np.int32)
    t, f = step_time(
        lambda p, b: D.loss(p, b, "rule", cfg, jax.numpy), D.init_params(rng, cfg), ids, repeat
    )
    records.append({"benchmark": "language-model step", "seconds": t, "flops": f})
    df = pd.DataFrame(records)
    df["gflops"] = df["flops"] / df["seconds"] / 1e9
    df["gemm_peak_gflops"] = peak
    df["fraction_of_peak"] = df["gflops"] / peak
    md = (
        "| benchmark | seconds | GFLOP/s | fraction of the float32 GEMM peak |\n|---|---|---|---|\n"
    )
    md += "".join(
        f"| {r.benchmark} | {r.seconds:.4f} | {r.gflops:.2f} | {r.fraction_of_peak:.3f} |\n"
        for r in df.itertuples()
    )
    return {"csv": with_job_provenance(df), "md": md}
