"""Checkpoints: ``model.safetensors`` + ``config.json`` + ``vocab.json`` (docs/training.md#checkpoints).

The training job returns the three files' contents and the adapter writes each atomically.
``config.json`` records the architecture, its sizes, the variant and the SHA-256 of the two
other files; :func:`load` checks the architecture and every hash before anything is computed,
and refuses a mismatch with a message naming the file. The hashes of the loaded files go into
the provenance of every table made from them (column ``checkpoint_sha256``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from attnscale.training import TrainingError

__all__ = ["encode", "load", "sha256"]


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _json_bytes(obj) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode()


def encode(params: dict, config: dict, vocab: dict) -> dict:
    """The three files of a checkpoint as ``{"model": bytes, "config": dict, "vocab": dict}``:
    float32 tensors in sorted order (byte-identical for identical parameters) and config.json
    with the hashes of the weights and of the vocabulary's canonical JSON."""
    from safetensors.numpy import save

    weights = save({k: np.ascontiguousarray(params[k], np.float32) for k in sorted(params)})
    cfg = dict(config)
    cfg["files"] = {"model.safetensors": sha256(weights), "vocab.json": sha256(_json_bytes(vocab))}
    return {"model": weights, "config": cfg, "vocab": vocab}


def load(config_path, architecture: str, **want) -> tuple[dict, dict, dict, str]:
    """Load a checkpoint from its ``config.json`` path; check before computing anything: the
    architecture, the entries ``want`` of config.json (the job's variant and seed), the hashes.

    Returns
    -------
    params, config, vocab, digest
        The float32 arrays, the config, the vocabulary and the SHA-256 of model.safetensors.

    Raises
    ------
    TrainingError
        Another architecture, or a file whose SHA-256 differs from the one recorded, named.
    """
    from safetensors.numpy import load as load_bytes

    cpath = Path(config_path)
    cfg = json.loads(cpath.read_text())
    if cfg.get("architecture") != architecture:
        raise TrainingError(
            f"{cpath}: architecture {cfg.get('architecture')!r}, this job reads {architecture!r}"
        )
    for key, value in want.items():
        if cfg.get(key) != value:
            raise TrainingError(f"{cpath}: {key} {cfg.get(key)!r}, this job reads {value!r}")
    blobs = {}
    for name, want in cfg.get("files", {}).items():
        f = cpath.parent / name
        data = f.read_bytes() if f.exists() else b""
        if sha256(data) != want:
            raise TrainingError(f"{f}: SHA-256 {sha256(data)} differs from {want} in {cpath}")
        blobs[name] = data
    if set(blobs) != {"model.safetensors", "vocab.json"}:
        raise TrainingError(f"{cpath}: 'files' must record model.safetensors and vocab.json")
    params = load_bytes(blobs["model.safetensors"])
    vocab = json.loads(blobs["vocab.json"])
    return params, cfg, vocab, cfg["files"]["model.safetensors"]
