"""The retrieval task and its one-layer attention model (docs/training.md#retrieval).

A query token carries one of n keys; the context holds n tokens, each binding a key (distinct,
from a vocabulary of ``keys``) and a value (from a vocabulary of ``values``); the model must
output the value bound to the query's key [paper: Paper B's fixed query against n keys, here
trained]. One attention layer with ``heads`` heads, no positional encoding, no residual: the
query's embedding attends over the n context tokens and a linear readout maps the heads'
outputs to the value's logits [choice: the smallest model in which the scale of the scores is
all that changes with n].

The forward pass is written with the array module ``xp`` (numpy or jax.numpy): the training
differentiates it, the evaluation and the theory read its scores in numpy.
"""

from __future__ import annotations

import numpy as np

from attnscale.training.scaling import factor

__all__ = ["ARCHITECTURE", "init_params", "batch", "scores", "forward", "loss"]

#: The architecture name written to a checkpoint's config.json.
ARCHITECTURE = "attnscale-retrieval"


def init_params(rng: np.random.Generator, cfg: dict) -> dict:
    """Initial float32 parameters: key and value embeddings N(0, 1/(d/2)) in the two halves of a
    token [choice: a token is the concatenation of its key's and its value's embeddings; the
    query carries its key's embedding and zeros], projections N(0, 1/fan_in), and the
    learned variant's s_h at 1 / (sqrt(d_h) ln n_train) (the plain factor at n_train)."""
    d, h, dh = cfg["d"], cfg["heads"], cfg["d"] // cfg["heads"]
    half = d // 2

    def normal(shape, fan):
        return (rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32)

    return {
        "key_embed": normal((cfg["keys"], half), half),
        "value_embed": normal((cfg["values"], d - half), d - half),
        "wq": normal((d, h * dh), d),
        "wk": normal((d, h * dh), d),
        "wv": normal((d, h * dh), d),
        "readout": normal((h * dh, cfg["values"]), h * dh),
        "s": np.full(h, 1.0 / (np.sqrt(dh) * np.log(cfg["n_train"])), np.float32),
    }


def batch(rng: np.random.Generator, size: int, n, cfg: dict, n_pad: int | None = None) -> dict:
    """``size`` examples with n keys each (``n``: an int, or an array of per-example n),
    padded to ``n_pad`` (default max n) with a mask. Keys distinct within an example."""
    n = np.broadcast_to(np.asarray(n, dtype=np.int64), (size,))
    n_pad = int(n.max()) if n_pad is None else int(n_pad)
    # distinct keys: the n_pad smallest of iid uniforms over the key vocabulary, in random order
    u = rng.random((size, cfg["keys"]))
    keys = np.argpartition(u, n_pad - 1, axis=1)[:, :n_pad]
    keys = np.take_along_axis(keys, rng.permuted(np.tile(np.arange(n_pad), (size, 1)), axis=1), 1)
    values = rng.integers(0, cfg["values"], size=(size, n_pad))
    mask = np.arange(n_pad)[None, :] < n[:, None]
    pos = (rng.random(size) * n).astype(np.int64)
    row_idx = np.arange(size)
    return {
        "keys": keys.astype(np.int32),
        "values": values.astype(np.int32),
        "mask": mask,
        "n": n.astype(np.int32),
        "query": keys[row_idx, pos].astype(np.int32),
        "position": pos.astype(np.int32),
        "target": values[row_idx, pos].astype(np.int32),
    }


def _project(params, b, xp):
    h = params["s"].shape[0]
    ek = params["key_embed"][b["keys"]]
    x = xp.concatenate([ek, params["value_embed"][b["values"]]], axis=-1)  # (B, N, d)
    eq = params["key_embed"][b["query"]]
    xq = xp.concatenate([eq, xp.zeros((eq.shape[0], x.shape[-1] - eq.shape[-1]), eq.dtype)], -1)
    flat = x.reshape(-1, x.shape[-1])  # 2-D products: one GEMM each
    q = (xq @ params["wq"]).reshape(xq.shape[0], h, -1)
    k = (flat @ params["wk"]).reshape(x.shape[0], x.shape[1], h, -1)
    v = (flat @ params["wv"]).reshape(x.shape[0], x.shape[1], h, -1)
    return q, k, v


def scores(params, b, variant, cfg, xp=np, *, training=False, qkv=None):
    """The scaled scores of every head, shape (B, heads, N), padding at -1e30; and the raw
    q . k (same shape) (docs/training.md#retrieval)."""
    q, k, _ = _project(params, b, xp) if qkv is None else qkv
    raw = (q[:, :, None, :] @ k.transpose(0, 2, 3, 1))[:, :, 0, :]  # (B, H, N)
    dh = q.shape[-1]
    n = b["n"].astype(raw.dtype)
    c = factor(variant, n, dh, cfg["n_train"], params["s"], xp, training=training)  # (B, H)
    z = xp.where(b["mask"][:, None, :], raw * c[:, :, None], -1e30)
    return z, raw


def softmax(z, xp=np):
    """Row softmax over the last axis."""
    e = xp.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def forward(params, b, variant, cfg, xp=np, *, training=False, with_scores=False):
    """Logits over the values (B, values) and the attention weights (B, heads, N) (and the
    scaled scores, with ``with_scores``)."""
    qkv = _project(params, b, xp)
    z, _ = scores(params, b, variant, cfg, xp, training=training, qkv=qkv)
    w = softmax(z, xp)
    o = (w[:, :, None, :] @ qkv[2].transpose(0, 2, 1, 3))[:, :, 0, :].reshape(w.shape[0], -1)
    logits = o @ params["readout"]
    return (logits, w, z) if with_scores else (logits, w)


def loss(params, b, variant, cfg, xp=np):
    """Mean cross-entropy of the value (the training objective)."""
    logits, _ = forward(params, b, variant, cfg, xp, training=True)
    m = logits.max(axis=-1, keepdims=True)
    lse = (m + xp.log(xp.exp(logits - m).sum(axis=-1, keepdims=True)))[:, 0]
    picked = xp.take_along_axis(logits, b["target"][:, None], axis=1)[:, 0]
    return (lse - picked).mean()
