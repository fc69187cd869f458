"""The causal decoder of the training family (docs/training.md#language-model): pre-LN, no
positional encoding [choice: position encodings confound length generalisation, the question
asked], byte-level vocabulary without a tokenizer (``vocab.json``), each head's scores
multiplied by its variant's factor of n = the number of keys the query sees
(:func:`attnscale.training.scaling.factor`).

:func:`forward` is written with the array module ``xp`` (numpy or jax.numpy): training
differentiates it, evaluation runs it in numpy. :class:`CausalDecoder` is the architecture
adapter beside the BERT one (:mod:`attnscale.transformer.architectures`): the same interface
(``forward(ids, multipliers, keep_probs)`` -> hidden states and a :class:`Record` per layer,
with the fields of the transformer family's ``LayerRecord``), so that the transformer probes
can read a trained checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscale.training.scaling import factor

__all__ = [
    "ARCHITECTURE",
    "Record",
    "init_params",
    "forward",
    "loss",
    "token_loss",
    "CausalDecoder",
]


@dataclass
class Record:
    """What one layer's attention sees (the fields of the transformer family's ``LayerRecord``):
    ``inputs`` (n, d), ``q``, ``k`` (heads, n, d_head), ``probs`` (heads, n, n) or None,
    ``multiplier``."""

    inputs: np.ndarray
    q: np.ndarray
    k: np.ndarray
    probs: np.ndarray | None
    multiplier: float

    def scores(self, h: int, row_idx=None) -> np.ndarray:
        """Head ``h``'s scores at the trained scale, ``q_i . k_j / sqrt(d_head)``."""
        q = self.q[h] if row_idx is None else self.q[h][row_idx]
        return (q @ self.k[h].T) / np.sqrt(self.q.shape[2])


#: The architecture name written to a checkpoint's config.json (its ``model_type``).
ARCHITECTURE = "attnscale-decoder"
EPS = 1e-5


def init_params(rng: np.random.Generator, cfg: dict) -> dict:
    """Initial float32 parameters (embeddings and projections N(0, 1/fan_in), layer norms at
    1 and 0, the output projections scaled by 1/sqrt(2 layers)); s_h at 1/(sqrt(d_h) ln n_train)."""
    d, h, V, L = cfg["d"], cfg["heads"], cfg["vocab"], cfg["layers"]
    dh, f = d // h, 4 * d

    def normal(shape, fan, scale=1.0):
        return (scale * rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32)

    p = {"embed": normal((V, d), 1.0) * np.float32(0.1), "unembed": normal((d, V), d)}
    p["ln_f.g"], p["ln_f.b"] = np.ones(d, np.float32), np.zeros(d, np.float32)
    out = 1.0 / np.sqrt(2 * L)
    for i in range(L):
        for k, shape, fan, sc in (
            ("wq", (d, d), d, 1.0),
            ("wk", (d, d), d, 1.0),
            ("wv", (d, d), d, 1.0),
            ("wo", (d, d), d, out),
            ("w1", (d, f), d, 1.0),
            ("w2", (f, d), f, out),
        ):
            p[f"{i}.{k}"] = normal(shape, fan, sc)
        p[f"{i}.b1"], p[f"{i}.b2"] = np.zeros(f, np.float32), np.zeros(d, np.float32)
        for ln in ("ln1", "ln2"):
            p[f"{i}.{ln}.g"], p[f"{i}.{ln}.b"] = np.ones(d, np.float32), np.zeros(d, np.float32)
        p[f"{i}.s"] = np.full(h, 1.0 / (np.sqrt(dh) * np.log(cfg["n_train"])), np.float32)
    return p


def _ln(x, g, b, xp):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    return xc / xp.sqrt((xc * xc).mean(axis=-1, keepdims=True) + EPS) * g + b


def _gelu(x, xp):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def _attention(p, i, x, variant, cfg, xp, training, mult=1.0):
    B, T, d = x.shape
    h = cfg["heads"]
    dh = d // h

    def split(w):
        return (x.reshape(-1, d) @ w).reshape(B, T, h, dh).transpose(0, 2, 1, 3)

    q, k, v = split(p[f"{i}.wq"]), split(p[f"{i}.wk"]), split(p[f"{i}.wv"])
    n = xp.arange(1, T + 1).astype(x.dtype)  # keys the query at position t sees
    c = factor(variant, n, dh, cfg["n_train"], p[f"{i}.s"], xp, training=training)  # (T, H)
    z = (q @ k.transpose(0, 1, 3, 2)) * (mult * c.T[None, :, :, None])
    causal = np.tril(np.ones((T, T), bool))
    z = xp.where(causal, z, -1e30)
    z = z - z.max(axis=-1, keepdims=True)
    w = xp.exp(z)
    w = w / w.sum(axis=-1, keepdims=True)
    o = (w @ v).transpose(0, 2, 1, 3).reshape(B * T, d) @ p[f"{i}.wo"]
    return o.reshape(B, T, d), (q, k, w)


def forward(p, ids, variant, cfg, xp=np, *, training=False, multipliers=None, records=None):
    """Logits (B, T, vocab) of token ids (B, T). ``multipliers``: one extra factor per layer on
    the scores (the probes' s); ``records``: a list that receives each layer's attention
    input and (q, k, weights)."""
    x = p["embed"][ids]
    B, T, d = x.shape
    for i in range(cfg["layers"]):
        a = _ln(x, p[f"{i}.ln1.g"], p[f"{i}.ln1.b"], xp)
        m = 1.0 if multipliers is None else multipliers[i]
        o, qkw = _attention(p, i, a, variant, cfg, xp, training, m)
        if records is not None:
            records.append((a, *qkw))
        x = x + o
        y = _ln(x, p[f"{i}.ln2.g"], p[f"{i}.ln2.b"], xp).reshape(B * T, d)
        x = x + (_gelu(y @ p[f"{i}.w1"] + p[f"{i}.b1"], xp) @ p[f"{i}.w2"] + p[f"{i}.b2"]).reshape(
            B, T, d
        )
    return _ln(x, p["ln_f.g"], p["ln_f.b"], xp) @ p["unembed"]


def token_loss(p, ids, variant, cfg, xp=np, *, training=False):
    """Cross-entropy of the next token at every position (B, T - 1)."""
    logits = forward(p, ids[:, :-1], variant, cfg, xp, training=training)
    m = logits.max(axis=-1, keepdims=True)
    lse = (m + xp.log(xp.exp(logits - m).sum(axis=-1, keepdims=True)))[..., 0]
    picked = xp.take_along_axis(logits, ids[:, 1:, None], axis=-1)[..., 0]
    return lse - picked


def loss(p, ids, variant, cfg, xp=np):
    """Mean next-token cross-entropy (the training objective)."""
    return token_loss(p, ids, variant, cfg, xp, training=True).mean()


class CausalDecoder:
    """Architecture adapter of a trained decoder checkpoint (``model_type: attnscale-decoder``):
    float64 numpy forward with the interface of :class:`~attnscale.transformer.architectures.BertEncoder`.
    The records' q carry the variant's factor relative to 1/sqrt(d_h), so that a record's
    ``scores`` are the trained model's scores at multiplier 1."""

    model_type = ARCHITECTURE
    causal = True

    def __init__(self, config: dict, tensors: dict):
        self.config = config
        self.n_layers, self.n_heads = int(config["layers"]), int(config["heads"])
        self.d_model = int(config["d"])
        self.d_head = self.d_model // self.n_heads
        self.max_positions = 1 << 30  # no positional encoding: any length
        self.p = {k: np.asarray(v, np.float64) for k, v in tensors.items()}

    def forward(self, ids, multipliers=None, keep_probs: bool = False):
        """Hidden states are not kept (an empty list); one :class:`Record` per layer (one window)."""
        mult = np.broadcast_to(
            np.asarray(1.0 if multipliers is None else multipliers, float), (self.n_layers,)
        )
        rec = []
        forward(
            self.p,
            np.asarray(ids)[None, :],
            self.config["variant_eval"]
            if "variant_eval" in self.config
            else self.config["variant"],
            self.config,
            np,
            multipliers=mult,
            records=rec,
        )
        out = []
        T = len(ids)
        variant = self.config.get("variant_eval", self.config["variant"])
        n = np.arange(1, T + 1, dtype=float)
        for i, ((a, q, k, w), s) in enumerate(zip(rec, mult, strict=True)):
            c = factor(variant, n, self.d_head, self.config["n_train"], self.p[f"{i}.s"], np)
            rel = c.T * np.sqrt(self.d_head)  # (H, T): the factor over the plain one
            qs = q[0] * rel[:, :, None]
            out.append(Record(a[0], qs, k[0], w[0] if keep_probs else None, float(s)))
        return [], out
