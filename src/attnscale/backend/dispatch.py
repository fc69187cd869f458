"""The one dispatch line of every numpy kernel with a JAX implementation
(``docs/gpu.md#choosing-the-backend``).

Kept apart from :mod:`attnscale.backend`, which every job imports (through the adapter): only the
modules that dispatch import this one, so :mod:`attnscale.deps` counts the JAX kernel modules as
code of the rules that call those kernels, and of no other rule.
"""

from __future__ import annotations

from attnscale.backend import resolve


def jax_kernel(backend, module: str, name: str):
    """The JAX implementation ``attnscale.backend.<module>.<name>`` if ``backend`` resolves to
    ``"jax"`` (:func:`resolve`), else ``None``: the one dispatch line of every numpy kernel."""
    if resolve(backend) != "jax":
        return None
    # explicit imports, so that attnscale.deps sees the JAX modules as code of every rule whose
    # kernels can dispatch to them (docs/pipeline.md#what-depends-on-what)
    if module == "jax_layer":
        from attnscale.backend import jax_layer as mod
    elif module == "jax_sphere":
        from attnscale.backend import jax_sphere as mod
    else:
        raise ValueError(f"module must be 'jax_layer' or 'jax_sphere', got {module!r}")
    return getattr(mod, name)
