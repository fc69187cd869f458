"""The errors of the transformer package (docs/real-transformer.md#the-model)."""

from __future__ import annotations

__all__ = ["ModelError"]


class ModelError(ValueError):
    """The model cannot be used; the message names the file, the key or the install line."""
