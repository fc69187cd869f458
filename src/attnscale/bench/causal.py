"""Benchmarks of the causal kernels (``docs/realistic-attention.md#causal-mask``), in the row
format of :mod:`attnscale.bench.kernels` so the suite can append them.

Flop counts: a causal kernel is credited with half of the dense kernel's flops, i.e.
``2 n^2 d`` for one forward pass (scores + ``A Y``) and ``2 n^2 d`` per beta for the lambda grid
(``A Y`` on the visible prefix + the pair sum on the lower triangle). The diagonal blocks' masked
half (``n b d`` flops with ``b`` block rows) is real work that is not credited. The baseline is the
straightforward dense computation: the full ``n x n`` score matrix with ``-inf`` above the
diagonal, a row softmax and a dense ``A Y``.
"""

from __future__ import annotations

import numpy as np

from attnscale.bench.timing import best_time
from attnscale.core.seeding import job_rng, spawn_key
from attnscale.layer import tokens
from attnscale.layer.causal import attention as causal
from attnscale.layer.dense import attention

__all__ = ["bench_causal"]


def dense_masked_forward(X: np.ndarray, beta) -> np.ndarray:
    """Baseline: ``n x n`` scores, ``-inf`` above the diagonal, row softmax, ``A Y``."""
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    n = Y.shape[0]
    S = np.asarray(beta, dtype=float).reshape(-1, 1) * (Y @ Y.T)
    S[np.triu_indices(n, k=1)] = -np.inf
    return attention.softmax_rows(S) @ Y


def bench_causal(n: int, d: int, gammas: int, peak: float, repeat: int = 3) -> list[dict]:
    """Causal forward pass and causal lambda grid (per-position ``beta_i = gamma ln i``).

    Parameters
    ----------
    n, d : int
        Tokens and dimension (near-simplex tokens, rho = 0.5).
    gammas : int
        Number of gammas of the lambda grid (log-spaced in [0.25, 12]).
    peak : float
        GEMM peak in GFLOP/s measured in the same process
        (:func:`attnscale.bench.kernels.gemm_peak`).
    repeat : int, optional
        Timed repetitions (best of) after a warm-up call.

    Returns
    -------
    list of dict
        Rows ``benchmark`` (``causal_forward``, ``causal_lambda_grid``), ``variant``, ``n``,
        ``d``, ``seconds``, ``gflops`` (credited), ``fraction_of_gemm_peak``,
        ``baseline_seconds``, ``speedup_vs_baseline``, ``max_abs_diff_vs_baseline``.
    """
    X = tokens.near_simplex(n, d, 0.5, job_rng(0, spawn_key("benchmark/causal", n, d)))
    ln_i = np.log(np.arange(1, n + 1, dtype=float))
    beta_rows = 2.0 * ln_i
    records = []
    fast = best_time(lambda: causal.forward_rows(X, beta_rows), repeat)
    base = best_time(lambda: dense_masked_forward(X, beta_rows), 1)
    diff = causal.forward_rows(X, beta_rows) - dense_masked_forward(X, beta_rows)
    err = float(np.max(np.abs(diff)))
    gf = 2.0 * n * n * d / fast / 1e9
    records.append(
        {
            "benchmark": "causal_forward",
            "variant": "beta_i = 2 ln i",
            "n": n,
            "d": d,
            "seconds": fast,
            "gflops": gf,
            "fraction_of_gemm_peak": gf / peak,
            "baseline_seconds": base,
            "speedup_vs_baseline": base / fast,
            "max_abs_diff_vs_baseline": err,
        }
    )
    grid = np.geomspace(0.25, 12.0, gammas)[:, None] * ln_i[None, :]
    fast = best_time(lambda: attention.angle_ratio_grid(X, grid, causal=True), repeat)
    gf = 2.0 * n * n * d * gammas / fast / 1e9

    def baseline():
        Y = X / np.linalg.norm(X, axis=1, keepdims=True)
        iu = np.triu_indices(n, k=1)
        D = 1.0 - (Y @ Y.T)[iu]
        out = []
        for b in grid:
            Yp = dense_masked_forward(X, b)
            Yp /= np.linalg.norm(Yp, axis=1, keepdims=True)
            out.append(np.mean((1.0 - (Yp @ Yp.T)[iu]) / D))
        return np.array(out)

    base = best_time(baseline, 1)
    err = float(np.max(np.abs(attention.angle_ratio_grid(X, grid, causal=True) - baseline())))
    records.append(
        {
            "benchmark": "causal_lambda_grid",
            "variant": f"{gammas} gammas, beta_i = gamma ln i",
            "n": n,
            "d": d,
            "seconds": fast,
            "gflops": gf,
            "fraction_of_gemm_peak": gf / peak,
            "baseline_seconds": base,
            "speedup_vs_baseline": base / fast,
            "max_abs_diff_vs_baseline": err,
        }
    )
    return records
