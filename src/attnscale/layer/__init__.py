"""One attention layer over n tokens: Paper A's model and the variants real models use
(docs/paper-a.md, docs/finite-d.md, docs/realistic-attention.md, docs/scaling-rules.md).

Tokens, the attention map and its angle ratio lambda, the Jacobian norm eta, Paper A's closed
forms, the finite-d theory, causal masks, learned scores, sinks, depth and the scaling rules of
real models; the row-sampled estimators of lambda and eta for long contexts (``sampled_*``,
docs/long-context.md) and reading a head's tokens from a file (``token_files``).

Imports :mod:`attnscale.core`, :mod:`attnscale.backend` (the kernel backend of a job, for the
JAX kernels and their dispatch) and :mod:`attnscale._moved` (old names of renamed functions),
nothing else of attnscale (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
