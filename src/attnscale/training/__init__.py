"""Trained attention models with and without Paper A's log n rule (docs/training.md).

Rooms: :mod:`.scaling` (the four variants' score factors), :mod:`.retrieval` (the retrieval
task and its one-layer model), :mod:`.decoder` (the causal character-level decoder and its
adapter), :mod:`.trainer` (AdamW, the loss log, the non-finite stop), :mod:`.checkpoint` (atomic,
hashed checkpoints), :mod:`.evaluate`, :mod:`.stats`, :mod:`.prediction` (the theory's curves)
and :mod:`.summary`. JAX and optax are needed by training and by the JAX forward only
(:func:`require`); they block this family alone, with one message.

Imports no other part of attnscale (docs/pipeline.md#the-package-layout).
"""

from __future__ import annotations

__all__ = ["INSTALL_HINT", "TrainingError", "require"]

#: How to install what the training family needs (docs/training.md#installing).
INSTALL_HINT = (
    'install the pinned JAX extra: pip install -e ".[jax]" (jax, jaxlib, optax), '
    "or pip install -r envs/requirements.txt"
)


class TrainingError(RuntimeError):
    """A training-family failure with a message for the user (bad checkpoint, non-finite loss,
    missing package)."""


def require():
    """Import and return ``(jax, optax)``, or raise :class:`TrainingError` saying that the
    training family (docs/training.md) needs them and how to install them."""
    try:
        import jax
        import optax
    except ImportError as err:
        raise TrainingError(
            f"the training family (docs/training.md) needs JAX and optax, which are not "
            f"importable ({err}); {INSTALL_HINT}"
        ) from None
    return jax, optax
