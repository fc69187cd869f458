"""The one dispatch line of every numpy kernel of this package that has a JAX twin
(docs/gpu.md#choosing-the-backend).

Only the modules that dispatch import this one, and it imports the JAX kernels by an explicit
statement, so :mod:`attnscale.pipeline.deps` counts them as code of exactly the rules whose kernels
can run on JAX.
"""

from __future__ import annotations

from attnscale.backend import resolve

__all__ = ["jax_kernel"]


def jax_kernel(backend, name: str):
    """The JAX implementation ``attnscale.layer.jax_kernels.<name>`` if ``backend`` resolves to
    ``"jax"`` (:func:`attnscale.backend.resolve`), else ``None``."""
    if resolve(backend) != "jax":
        return None
    from attnscale.layer import jax_kernels

    return getattr(jax_kernels, name)
