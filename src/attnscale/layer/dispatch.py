"""Deprecated: the dispatch module of :mod:`attnscale.layer` before one dispatcher,
:func:`attnscale.backend.uses_jax`, served every package (``docs/gpu.md#choosing-the-backend``).

:func:`jax_kernel` keeps its old meaning. Importing this module warns (``DeprecationWarning``).
"""

from __future__ import annotations

from attnscale._moved import deprecated, old_jax_kernel

__all__ = ["jax_kernel"]

deprecated(__name__, "the kernels dispatch with attnscale.backend.uses_jax to their JAX twins "
           "beside them (attnscale.layer.*_jax)")  # fmt: skip


def jax_kernel(backend, name: str):
    """The JAX implementation ``attnscale.layer.jax_kernels.<name>`` (old signature) if
    ``backend`` resolves to ``"jax"`` (:func:`attnscale.backend.uses_jax`), else ``None``."""
    return old_jax_kernel("layer", backend, name)
