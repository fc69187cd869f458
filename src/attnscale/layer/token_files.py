"""Reading a head's tokens from a file for ``attnscale estimate-rho``
(docs/ask-the-theory.md#estimate-rho-from-tokens): a NumPy ``.npy`` array of real numbers, read
without ever unpickling, and one clear line for every other kind of file.

NumPy is imported inside :func:`load_tokens`, so that the command line can import this module at
start-up without loading it (docs/ask-the-theory.md#start-up-time). Imports nothing of attnscale.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SAVE_HINT", "NPY_MAGIC", "load_tokens"]

#: How to write a token file the command reads (every file error ends with it).
SAVE_HINT = "Save an (n, d) array of numbers with numpy.save('tokens.npy', X)"

#: The first bytes of a .npy file (numpy.lib.format)
NPY_MAGIC = b"\x93NUMPY"


def _looks_like(head: bytes) -> str:
    """What a file that is not a ``.npy`` array seems to be, from its first bytes."""
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive (an .npz file of several arrays?)"
    if head[:1] == b"\x80":
        return "a Python pickle"
    if not head:
        return "empty"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data of an unknown format"
    return "text (a CSV or text dump?)"


def load_tokens(path):
    """The ``(n, d)`` array in a ``.npy`` file for ``attnscale estimate-rho``, read without ever
    unpickling (docs/ask-the-theory.md#estimate-rho-from-tokens).

    Raises ``ValueError`` with one line saying what is wrong and how to save tokens
    (:data:`SAVE_HINT`) for a missing file, a file that is not in NumPy's ``.npy`` format (text,
    a pickle, an ``.npz`` archive), an array of Python objects or of non-numbers (strings,
    booleans, complex numbers). The shape and the values are checked by
    :func:`attnscale.layer.tokens.estimate_rho_q`.
    """
    import numpy as np

    path = Path(path)
    name = str(path)
    try:
        with path.open("rb") as fh:
            head = fh.read(len(NPY_MAGIC))
    except OSError as exc:
        raise ValueError(
            f"tokens must be a readable .npy file, got {name!r}: {exc.strerror or exc}. {SAVE_HINT}"
        ) from exc
    if head != NPY_MAGIC:
        raise ValueError(
            f"tokens must be a .npy array file, but {name!r} is not one: it looks "
            f"like {_looks_like(head)}. {SAVE_HINT}"
        )
    try:
        X = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "object" in str(exc).lower():
            raise ValueError(
                f"tokens in {name!r} are Python objects (dtype object), not numbers. {SAVE_HINT}"
            ) from None
        raise ValueError(f"tokens file {name!r} is a damaged .npy file. {SAVE_HINT}") from None
    except (OSError, EOFError):
        raise ValueError(f"tokens file {name!r} is a damaged .npy file. {SAVE_HINT}") from None
    if X.dtype.kind not in "fiu":
        raise ValueError(
            f"tokens in {name!r} must be real numbers, got dtype {X.dtype}. {SAVE_HINT}"
        )
    return X
