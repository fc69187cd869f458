"""The score factor of each variant as a function of n, the number of keys a query sees
(docs/training.md#the-variants).

* ``plain``: 1/sqrt(d_h) [paper: the transformer's scale];
* ``rule``: ln n / ln n_train / sqrt(d_h), trained and tested with it [paper: Paper A's
  beta_n = gamma log n, gamma fixed so that the factor is the plain one at n_train];
* ``learned``: s_h ln n with s_h learned per head [paper: Scalable-Softmax], initialised at
  1 / (sqrt(d_h) ln n_train);
* ``test_rule``: the plain model, tested with max(1, ln n / ln n_train) / sqrt(d_h) [choice:
  the practitioners' clipped query scaling applied to a model already trained].

Written with the array module ``xp`` (numpy or jax.numpy) so that one formula serves the
training, the numpy adapter and the evaluation.
"""

from __future__ import annotations

import numpy as np

__all__ = ["VARIANTS", "TRAINED_AS", "factor"]

#: The variants, in the order of the tables and figures.
VARIANTS = ("plain", "rule", "learned", "test_rule")
#: The variant each one's checkpoint is trained as (the test-time rule reuses the plain model).
TRAINED_AS = {"plain": "plain", "rule": "rule", "learned": "learned", "test_rule": "plain"}


def factor(variant, n, d_head, n_train, s=None, xp=np, *, training=False):
    """The factor multiplying q . k of every head, shape ``n.shape + (heads,)``.

    Parameters
    ----------
    variant : str
        One of :data:`VARIANTS`.
    n : array_like
        Keys each query sees (>= 1), as floats of the computation's dtype.
    d_head : int
        Head dimension d_h.
    n_train : int
        The training length (the largest training n).
    s : array_like, optional
        The learned s_h (shape ``(heads,)``); needed for ``learned``, ignored otherwise.
    xp : module
        numpy or jax.numpy.
    training : bool
        During training ``test_rule`` is the plain model.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    base = 1.0 / np.sqrt(d_head)
    ratio = xp.log(n) / np.log(n_train)
    if variant == "learned":
        ln_n = ratio * np.log(n_train)
        return ln_n[..., None] * xp.asarray(s)
    if variant == "rule":
        f = base * ratio
    elif variant == "test_rule" and not training:
        f = base * xp.maximum(ratio, 1.0)
    else:
        f = base * xp.ones_like(ratio)
    return f[..., None]
