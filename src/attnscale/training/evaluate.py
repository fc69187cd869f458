"""Evaluation of trained retrieval models at every test n (docs/training.md#what-is-measured).

Per variant, checkpoint and n: the accuracy of the value read out, the weight on the right key,
the row's entropy and the score gap (the right key's scaled score minus the best distractor's),
of the *retrieval head* (the head with the largest mean weight on the right key at the training
n, chosen once per checkpoint [choice]) and averaged over heads. Held-out data: the test draws
come from a stream of their own (SeedSequence of the test n), never used in training.
"""

from __future__ import annotations

import numpy as np

from attnscale.training import retrieval as R

__all__ = ["retrieval_head", "retrieval_metrics", "score_sample"]


def _per_head(params, b, variant, cfg):
    logits, w, z = R.forward(params, b, variant, cfg, np, with_scores=True)
    row_idx = np.arange(len(b["target"]))
    right = w[row_idx, :, b["position"]]  # (B, H)
    zr = z[row_idx, :, b["position"]]
    zd = z.copy()
    zd[row_idx, :, b["position"]] = -np.inf
    gap = zr - zd.max(axis=-1)
    ent = -(np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)).sum(axis=-1)
    correct = logits.argmax(axis=-1) == b["target"]
    return correct, right, ent, gap


def retrieval_head(params, cfg, rng, examples) -> int:
    """The head with the largest mean weight on the right key at the training n."""
    b = R.batch(rng, examples, cfg["n_train"], cfg)
    _, right, _, _ = _per_head(params, b, cfg["variant"], cfg)
    return int(right.mean(axis=0).argmax())


def retrieval_metrics(params, cfg, variant, n, rng, examples, head, chunk=32) -> dict:
    """Means over ``examples`` held-out draws at one n (float64 forward, ``chunk`` examples at a
    time so that memory stays ~ chunk * n * d)."""
    p64 = {k: np.asarray(v, np.float64) for k, v in params.items()}
    parts = []
    for start in range(0, examples, chunk):
        b = R.batch(rng, min(chunk, examples - start), n, cfg)
        parts.append(_per_head(p64, b, variant, cfg))
    correct, right, ent, gap = (np.concatenate(x) for x in zip(*parts, strict=True))
    out = {"accuracy": correct.mean(), "accuracy_se": correct.std(ddof=1) / np.sqrt(examples)}
    for name, x in (("weight_right", right), ("entropy", ent), ("gap", gap)):
        out[name] = x[:, head].mean()
        out[f"{name}_heads"] = x.mean()
    out["entropy_uniform"] = np.log(n)
    return out


def score_sample(params, cfg, rng, examples, head) -> dict:
    """Raw q . k of the retrieval head at the training n: the right key's score (one per example)
    and the distractors' (all of them), for the theory (:mod:`attnscale.training.prediction`)."""
    p64 = {k: np.asarray(v, np.float64) for k, v in params.items()}
    b = R.batch(rng, examples, cfg["n_train"], cfg)
    _, raw = R.scores(p64, b, "plain", cfg, np)
    raw = raw[:, head, :]
    row_idx = np.arange(examples)
    right = raw[row_idx, b["position"]]
    mask = np.ones_like(raw, bool)
    mask[row_idx, b["position"]] = False
    return {"right": right, "distractors": raw[mask].reshape(examples, -1)}
