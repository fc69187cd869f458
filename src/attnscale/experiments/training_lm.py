"""Entry functions of the training family's language-model rules (docs/training.md#language-model):
train a causal byte-level decoder per variant (every seed in one job), evaluate its loss per
position band on held-out text up to 16 times the training context, and summarise over seeds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.experiments.training import checkpoint_outputs
from attnscale.pipeline.io import set_provenance, with_job_provenance_all
from attnscale.training import TrainingError, checkpoint
from attnscale.training import decoder as D
from attnscale.training.scaling import TRAINED_AS, VARIANTS

__all__ = ["split_text", "train_lm", "evaluate_lm", "summarise_lm", "bands"]

FROZEN = {"plain": "s", "rule": "s", "learned": None}


def split_text(text_path: str, text_part, heldout: float):
    """The text's characters as ids, its vocabulary (sorted distinct characters) and the split
    point: the first 1 - heldout of the text trains, the rest is held out [choice]."""
    from attnscale.transformer.corpus import read_text

    text, sha = read_text(text_path, text_part)
    chars = sorted(set(text))
    lut = {c: i for i, c in enumerate(chars)}
    ids = np.fromiter((lut[c] for c in text), np.int32, len(text))
    return ids, chars, int(len(ids) * (1.0 - heldout)), sha


def _frozen(variant, layers):
    return () if FROZEN[variant] is None else tuple(f"{i}.s" for i in range(layers))


def train_lm(*, variant, seeds, root_seed, text, text_part, heldout, model, schedule):
    """Entry of rule ``training_lm_train``: one variant, every seed; same initial weights and
    the same windows in the same order for every variant (they depend on the seed only)."""
    from attnscale.pipeline.runtime import LOG
    from attnscale.training import require
    from attnscale.training.trainer import train

    jax, _ = require()
    ids, chars, cut, sha = split_text(text, text_part, heldout)
    cfg = {
        "architecture": D.ARCHITECTURE,
        "model_type": D.ARCHITECTURE,
        "variant": variant,
        "vocab": len(chars),
        **{k: int(model[k]) for k in ("d", "heads", "layers")},
        "n_train": int(model["context"]),
        "text_sha256": sha,
    }
    T, bsz = cfg["n_train"], int(schedule["batch"])
    if cut < T + 2:
        raise TrainingError(
            f"training.lm: the training text ({cut} characters) is shorter than the context {T}"
        )

    def run(seed):
        params = D.init_params(job_rng(root_seed, spawn_key("training-lm-init", seed)), cfg)
        data = job_rng(root_seed, spawn_key("training-lm-data", seed))

        def next_batch(step):
            start = data.integers(0, cut - T - 1, size=bsz)
            return ids[start[:, None] + np.arange(T + 1)]

        return params, next_batch

    LOG.info("language model %s seeds %s: %s", variant, seeds, cfg)
    trained = train(
        lambda p, b: D.loss(p, b, variant, cfg, jax.numpy),
        [run(int(s)) for s in seeds],
        steps=int(schedule["steps"]),
        lr=float(schedule["lr"]),
        weight_decay=float(schedule["weight_decay"]),
        warmup=int(schedule["warmup"]),
        log_every=int(schedule["log_every"]),
        frozen=_frozen(variant, cfg["layers"]),
        log=LOG,
    )
    vocab = {"kind": "characters", "chars": chars}
    return with_job_provenance_all(
        checkpoint_outputs(trained, seeds, cfg, schedule, vocab, variant, root_seed)
    )


def bands(context: int, factor: int = 16) -> np.ndarray:
    """Position band edges (query positions, 0-based): 0, T/2, T, 2T, 4T, ... factor T."""
    edges = [0, context // 2, context]
    while edges[-1] < factor * context:
        edges.append(edges[-1] * 2)
    return np.array(edges)


def evaluate_lm(
    *, weights, variant, seed, text, text_part, heldout, windows, length_factor, root_seed
):
    """Entry of rule ``training_lm_eval``: the checkpoint (hashes checked first) on
    ``windows`` consecutive held-out windows of length_factor x its context; the loss per
    position band, per variant evaluated (the plain model also as ``test_rule``)."""
    params, cfg, vocab, digest = checkpoint.load(
        Path(weights).parent / "config.json", D.ARCHITECTURE, variant=variant, seed=int(seed)
    )
    ids, chars, cut, sha = split_text(text, text_part, heldout)
    if chars != vocab["chars"] or sha != cfg["text_sha256"]:
        raise TrainingError(f"{weights}: trained on another text (SHA-256 {cfg['text_sha256']})")
    T = cfg["n_train"]
    L = int(length_factor) * T
    held = ids[cut:]
    if held.size < windows * (L + 1):
        raise TrainingError(
            f"training.lm: the held-out text ({held.size} characters) holds "
            f"fewer than {windows} windows of {L + 1}"
        )
    p64 = {k: np.asarray(v, np.float64) for k, v in params.items()}
    edges = bands(T, int(length_factor))
    records = []
    for variant in [v for v in VARIANTS if TRAINED_AS[v] == cfg["variant"]]:
        per = np.zeros(L)
        for w in range(windows):
            x = held[w * (L + 1) : (w + 1) * (L + 1)][None, :]
            per += D.token_loss(p64, x, variant, cfg, np)[0]
        per /= windows
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            records.append(
                {
                    "variant": variant,
                    "seed": int(cfg["seed"]),
                    "lo": int(lo),
                    "hi": int(hi),
                    "band": f"{lo}-{hi}",
                    "position_over_context": float(np.sqrt(max(lo, 1) * hi)) / T,
                    "loss": per[lo:hi].mean(),
                }
            )
    df = pd.DataFrame(records)
    df["context"] = T
    df["windows"] = windows
    df["checkpoint_sha256"] = digest
    set_provenance(df, root_seed, only=("root_seed",))
    return with_job_provenance_all(df)


def summarise_lm(*, losses: list, curves: list) -> dict:
    """Entry of rule ``training_lm_summary``: loss per band, mean and SE over seeds per variant;
    each variant against plain per band (paired by seed, Holm-corrected); the training curves."""
    from attnscale.training.summary import comparisons, over_seeds

    M = pd.concat(losses, ignore_index=True)
    S = over_seeds(M, ["variant", "lo", "hi", "position_over_context"], ["loss"])
    C = comparisons(M, "lo", ["loss"])
    sha = ";".join(sorted(M["checkpoint_sha256"].unique()))
    out = {"summary": S, "comparisons": C, "curves": pd.concat(curves, ignore_index=True)}
    for df in out.values():
        df["context"] = int(M["context"].iloc[0])
        df["checkpoint_sha256"] = sha
    return with_job_provenance_all(out)
