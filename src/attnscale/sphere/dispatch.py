"""Deprecated: the dispatch module of :mod:`attnscale.sphere` before one dispatcher served every
package (``docs/gpu.md#choosing-the-backend``).

The kernels now validate their arguments, ask :func:`attnscale.backend.uses_jax` and import their
twin (``*_jax`` beside the numpy module) by an explicit statement. :func:`jax_kernel` keeps its
old meaning: the JAX implementation of a kernel with its old signature, from
:mod:`attnscale.sphere.jax_kernels`. Importing this module warns (``DeprecationWarning``).
"""

from __future__ import annotations

import warnings

from attnscale.backend import uses_jax

__all__ = ["jax_kernel"]

warnings.warn(
    "attnscale.sphere.dispatch is deprecated: the kernels dispatch with attnscale.backend.uses_jax "
    "to their twins beside them (attnscale.sphere.*_jax)",
    DeprecationWarning,
    stacklevel=2,
)


def jax_kernel(backend, name: str):
    """The JAX implementation ``attnscale.sphere.jax_kernels.<name>`` (old signature) if
    ``backend`` resolves to ``"jax"`` (:func:`attnscale.backend.uses_jax`), else ``None``."""
    if not uses_jax(backend):
        return None
    from attnscale.sphere import jax_kernels

    return getattr(jax_kernels, name)
