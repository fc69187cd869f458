"""The row softmax, defined once for the whole library (docs/paper-a.md#the-model): every
reference softmax of a score matrix (dense, causal, the transformer's probes) is
:func:`softmax_rows`. The key-tiled kernels (``attnscale.layer.dense.attention``, the sampled
kernels and their JAX twins) fuse the same shift-by-the-row-maximum into their tiles instead."""

from __future__ import annotations

import numpy as np

__all__ = ["softmax_rows"]


def softmax_rows(S: np.ndarray, *, log_mass: bool = False):
    """Row-wise softmax of a score matrix, shifted by each row's maximum (overflow-free); with
    ``log_mass``, also each row's ``ln sum_j e^{S_ij}`` (the softmax's log-normaliser), as
    ``(A, log_mass)`` (docs/paper-a.md#the-model).

    Entries of ``-inf`` (a masked key) get weight zero; each row needs one finite entry.
    """
    top = S.max(axis=1, keepdims=True)
    E = S - top
    np.exp(E, out=E)
    mass = E.sum(axis=1, keepdims=True)
    E /= mass
    if log_mass:
        return E, (top + np.log(mass))[:, 0]
    return E
