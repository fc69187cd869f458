"""One attention layer over n tokens: Paper A's model and the variants real models use
(docs/paper-a.md, docs/finite-d.md, docs/realistic-attention.md, docs/scaling-rules.md).

Tokens, the attention map and its angle ratio lambda, the Jacobian norm eta, Paper A's closed
forms, the finite-d theory, causal masks, learned scores, sinks, depth and the scaling rules of
real models. Imports only :mod:`attnscale.core` (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
