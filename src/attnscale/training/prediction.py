"""The theory's weight on the right key and accuracy against n, from a trained layer's scores at
the training n (docs/training.md#theory-against-the-measurement; docs/regimes.md).

The retrieval head's raw scores q . k measured at n_train give the right key's score a and the
distractors' law. Each variant multiplies them by its factor c(n) (:func:`.scaling.factor`).
Three predictions [derived]:

* ``iid``: the n - 1 distractors drawn independently from the measured law (Paper B's setting:
  one query against iid keys) and the softmax weight of the right key computed exactly; the
  accuracy predicted as the probability that the right key has the largest score (the readout is
  right when the head picks the right key);
* ``gap``: the partition function replaced by its mean, w = 1 / (1 + (n - 1) E e^{c (z - a)})
  (the gap regime of docs/regimes.md, where beta* grows like log n);
* ``n_tail``: the length at which the best of n Gaussian distractors, mu + sigma sqrt(2 ln n),
  reaches the mean right score: beyond it no factor c(n) can help, since a larger c only
  sharpens the softmax onto a wrong key (docs/regimes.md#finite-d-where-log-n-ends: the log n
  scale holds while the largest other score stays below the right one; past it the Gaussian
  tail sets the order).
"""

from __future__ import annotations

import numpy as np

from attnscale.training.scaling import factor

__all__ = ["predict", "tail_length"]


def tail_length(right, distractors) -> float:
    """n at which mu + sigma sqrt(2 ln n) of the distractors reaches the mean right score
    (inf when it never does: a right score below the distractors' mean gives 1)."""
    g = float(np.mean(right) - np.mean(distractors))
    s = float(np.std(distractors))
    if g <= 0:
        return 1.0
    return float(np.exp(min(g * g / (2 * s * s), 700.0)))


def predict(right, distractors, variant, ns, d_head, n_train, s, rng) -> list[dict]:
    """Predicted weight and accuracy of ``variant`` at every n in ``ns`` (see the module doc)."""
    right = np.asarray(right, float)
    pool = np.asarray(distractors, float).ravel()
    out = []
    for n in ns:
        c = float(factor(variant, np.array([float(n)]), d_head, n_train, s, np)[0].ravel()[0])
        z = pool[rng.integers(0, pool.size, size=(right.size, n - 1))]
        top = np.maximum(z.max(axis=1), right)
        num = np.exp(c * (right - top))
        w = num / (num + np.exp(c * (z - top[:, None])).sum(axis=1))
        mf = 1.0 / (1.0 + (n - 1) * np.exp(c * (pool[None, :] - right[:, None])).mean(axis=1))
        out.append(
            {
                "n": int(n),
                "factor": c,
                "weight_iid": w.mean(),
                "accuracy_iid": (right > z.max(axis=1)).mean(),
                "weight_gap": mf.mean(),
            }
        )
    return out
