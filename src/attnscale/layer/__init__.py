"""One attention layer over n tokens: Paper A's model and the variants real models use
(docs/paper-a.md, docs/finite-d.md, docs/realistic-attention.md, docs/scaling-rules.md).

The rooms (docs/pipeline.md#the-package-layout):

:mod:`~attnscale.layer.dense`
    the layer on the whole context: the attention map, lambda, the Jacobian norm eta (Hutchinson
    and exact), with their JAX twins
:mod:`~attnscale.layer.sampled`
    lambda, eta and the theorem table's quantities from a sample of query rows (docs/long-context.md)
:mod:`~attnscale.layer.causal`
    the causal mask and per-row scalings
:mod:`~attnscale.layer.scores`
    learned query-key matrices, general score matrices, weight statistics, sinks, depth and the
    scaling rules of real models
:mod:`~attnscale.layer.finite_d`
    the finite-d theory of the self-weight and its critical scale
:mod:`~attnscale.layer.theory`, :mod:`~attnscale.layer.tokens`, :mod:`~attnscale.layer.token_files`
    Paper A's closed forms, the token generators, reading a head's tokens from a file

``_threads`` (private) holds the thread plumbing the sampled and causal kernels share.

Imports :mod:`attnscale.core` and :mod:`attnscale.backend` (the kernel backend of a job, for the
JAX twins), nothing else of attnscale (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
