"""The causal mask and per-row scalings (docs/realistic-attention.md#causal-mask): query ``i``
sees keys ``j <= i``, row ``i`` uses ``beta_i``.

The kernels (:mod:`.attention`, the JAX twin :mod:`.attention_jax`), their row blocks
(:mod:`.blocks`), lambda under the mask (:mod:`.angle_ratio`) and the exact simplex predictions
(:mod:`.theory`).
"""

__all__: list[str] = []
