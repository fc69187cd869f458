"""Architecture adapters: one small class per architecture, each turning a model's weights into
the float64 numpy forward pass the experiments probe (docs/real-transformer.md#the-forward-pass).

An adapter is built from ``config.json`` (a dict) and the safetensors arrays and offers

* ``n_layers``, ``n_heads``, ``d_model``, ``d_head``, ``max_positions``, ``causal``;
* ``forward(ids, multipliers=None, keep_probs=False)``: the hidden states and, per layer, the
  attention inputs and every head's queries and keys (biases included; the scores are
  ``multiplier * q_i . k_j / sqrt(d_head)``), as :class:`LayerRecord`.

:data:`ADAPTERS` maps ``config.json``'s ``model_type`` to the adapter. Only the BERT encoder
(post-LN, bidirectional: Paper A's unmasked setting) exists now; a decoder (causal, pre-LN,
GPT-2's layout) is a second class with the same interface.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import erf

from attnscale.transformer.errors import ModelError
from attnscale.transformer.library import softmax_rows

__all__ = ["LayerRecord", "BertEncoder", "ADAPTERS", "adapter_for", "layer_norm", "gelu"]


@dataclass
class LayerRecord:
    """What one layer's attention sees: ``inputs`` (n, d_model), the tokens entering the
    layer's attention; ``q``, ``k`` (heads, n, d_head) with biases; ``probs`` (heads, n, n) or
    None; ``multiplier``, the factor the layer's scores were run with."""

    inputs: np.ndarray
    q: np.ndarray
    k: np.ndarray
    probs: np.ndarray | None
    multiplier: float

    def scores(self, h: int, row_idx=None) -> np.ndarray:
        """Head ``h``'s scores at the trained scale, ``q_i . k_j / sqrt(d_head)`` (rows ``row_idx``)."""
        q = self.q[h] if row_idx is None else self.q[h][row_idx]
        return (q @ self.k[h].T) / np.sqrt(self.q.shape[2])


def layer_norm(x, weight, bias, eps):
    """Layer norm over the last axis (biased variance, as BERT's)."""
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, axis=-1, keepdims=True)
    return xc / np.sqrt(var + eps) * weight + bias


def gelu(x):
    """GELU in its erf form, ``x Phi(x)`` (config.json ``hidden_act: gelu``)."""
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


class BertEncoder:
    """BERT encoder (``model_type: bert``): absolute positions, post-LN, bidirectional."""

    model_type = "bert"
    causal = False

    def __init__(self, config: dict, tensors: dict):
        self.config = config
        for key, want in (("hidden_act", "gelu"), ("position_embedding_type", "absolute")):
            if config.get(key, want) != want:
                raise ModelError(
                    f"config.json: {key} = {config.get(key)!r}; the BERT adapter "
                    f"supports {want!r} only"
                )
        if config.get("is_decoder", False):
            raise ModelError("config.json: is_decoder = true; the BERT adapter is an encoder")
        self.n_layers = int(config["num_hidden_layers"])
        self.n_heads = int(config["num_attention_heads"])
        self.d_model = int(config["hidden_size"])
        if self.d_model % self.n_heads:
            raise ModelError("config.json: hidden_size is not a multiple of num_attention_heads")
        self.d_head = self.d_model // self.n_heads
        self.max_positions = int(config["max_position_embeddings"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))

        def get(name):
            if name not in tensors:
                raise ModelError(f"model.safetensors has no tensor {name!r}")
            return np.asarray(tensors[name], dtype=np.float64)

        e = "embeddings."
        self.word = get(e + "word_embeddings.weight")
        self.pos = get(e + "position_embeddings.weight")
        self.type0 = get(e + "token_type_embeddings.weight")[0]
        self.emb_ln = (get(e + "LayerNorm.weight"), get(e + "LayerNorm.bias"))
        self.layers = []
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            self.layers.append(
                {
                    "Wq": get(a + "self.query.weight"),
                    "bq": get(a + "self.query.bias"),
                    "Wk": get(a + "self.key.weight"),
                    "bk": get(a + "self.key.bias"),
                    "Wv": get(a + "self.value.weight"),
                    "bv": get(a + "self.value.bias"),
                    "Wo": get(a + "output.dense.weight"),
                    "bo": get(a + "output.dense.bias"),
                    "ln1": (get(a + "output.LayerNorm.weight"), get(a + "output.LayerNorm.bias")),
                    "Wi": get(p + "intermediate.dense.weight"),
                    "bi": get(p + "intermediate.dense.bias"),
                    "Wf": get(p + "output.dense.weight"),
                    "bf": get(p + "output.dense.bias"),
                    "ln2": (get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias")),
                }
            )

    def heads(self, x):
        """(n, d_model) -> (heads, n, d_head)."""
        n = x.shape[0]
        return x.reshape(n, self.n_heads, self.d_head).transpose(1, 0, 2)

    def forward(self, ids, multipliers=None, keep_probs: bool = False):
        """Hidden states (list of n_layers + 1 arrays (n, d_model): embeddings, then each layer's
        output) and one :class:`LayerRecord` per layer.

        ``multipliers``: one factor per layer (or a scalar) applied to that layer's scores
        (default 1, the trained model).
        """
        ids = np.asarray(ids, dtype=np.int64)
        n = ids.size
        if n > self.max_positions:
            raise ModelError(
                f"a window of {n} tokens exceeds the model's "
                f"max_position_embeddings = {self.max_positions}"
            )
        mult = np.broadcast_to(
            np.asarray(1.0 if multipliers is None else multipliers, dtype=np.float64),
            (self.n_layers,),
        )
        x = self.word[ids] + self.pos[:n] + self.type0
        x = layer_norm(x, *self.emb_ln, self.eps)
        hidden, records = [x], []
        scale = 1.0 / np.sqrt(self.d_head)
        for L, s in zip(self.layers, mult, strict=True):
            q = self.heads(x @ L["Wq"].T + L["bq"])
            k = self.heads(x @ L["Wk"].T + L["bk"])
            v = self.heads(x @ L["Wv"].T + L["bv"])
            Z = (s * scale) * (q @ k.transpose(0, 2, 1))
            P = softmax_rows(Z.reshape(-1, Z.shape[-1])).reshape(Z.shape)
            ctx = (P @ v).transpose(1, 0, 2).reshape(n, self.d_model)
            records.append(LayerRecord(x, q, k, P if keep_probs else None, float(s)))
            a = layer_norm(ctx @ L["Wo"].T + L["bo"] + x, *L["ln1"], self.eps)
            f = gelu(a @ L["Wi"].T + L["bi"]) @ L["Wf"].T + L["bf"]
            x = layer_norm(f + a, *L["ln2"], self.eps)
            hidden.append(x)
        return hidden, records

    def embed(self, ids) -> np.ndarray:
        """Sentence embedding of sentence-transformers' all-MiniLM-L6-v2: mean of the last
        hidden states over the tokens, normalised to unit length."""
        hidden, _ = self.forward(ids)
        m = hidden[-1].mean(axis=0)
        return m / np.linalg.norm(m)


#: ``model_type`` of config.json -> adapter class.
ADAPTERS = {"bert": BertEncoder}


def adapter_for(config: dict):
    """The adapter class of ``config`` (``ModelError`` naming the architecture if none)."""
    mt = config.get("model_type")
    if mt not in ADAPTERS:
        raise ModelError(
            f"config.json: model_type {mt!r} (architectures "
            f"{config.get('architectures')}) has no adapter; supported: "
            f"{sorted(ADAPTERS)}"
        )
    return ADAPTERS[mt]
