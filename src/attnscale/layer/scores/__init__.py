"""Learned scores and the variants real models use (docs/realistic-attention.md,
docs/scaling-rules.md).

Learned query-key matrices and the effective critical scale (:mod:`.learned`), the layer for a
general score matrix (:mod:`.attention`, twin :mod:`.attention_jax`), per-row weight statistics
(:mod:`.weight_stats`, twin :mod:`.weight_stats_jax`), an attention sink (:mod:`.sink`), depth
(:mod:`.depth`) and the scaling rules of real models (:mod:`.scaling_rules`).
"""

__all__: list[str] = []
