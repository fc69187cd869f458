"""Deprecated: the dispatch module of :mod:`attnscale.layer` before one dispatcher,
:func:`attnscale.backend.uses_jax`, served every package (``docs/gpu.md#choosing-the-backend``).

:func:`jax_kernel` keeps its old meaning (:func:`attnscale._moved.old_jax_kernel`). Importing
this module warns (``DeprecationWarning``).
"""

from __future__ import annotations

from attnscale._moved import deprecated, old_jax_kernel

__all__ = ["jax_kernel"]

deprecated(__name__, "the kernels dispatch with attnscale.backend.uses_jax to their JAX twins "
           "beside them (attnscale.layer.*_jax)")  # fmt: skip

jax_kernel = old_jax_kernel("layer")
