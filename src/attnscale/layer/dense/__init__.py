"""The dense layer (docs/paper-a.md): every query row against every key, on the whole context.

The layer and the angle ratio lambda (:mod:`.attention`), the Jacobian and Hutchinson's eta
(:mod:`.jacobian`), the exact block formula of eta (:mod:`.eta_exact`, :mod:`.eta_block`), the
near-coincident pairs of lambda (:mod:`.near_pairs`), the argument checks the numpy kernels share
with their JAX twins (:mod:`.kernel_args`), and the twins themselves (``*_jax``, with the tiles
they share in :mod:`.jax_tiles`).
"""

__all__: list[str] = []
