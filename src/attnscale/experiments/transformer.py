"""Entries of the transformer family (issue 36; docs/real-transformer.md): every head of a
pretrained model on the phase diagram, its critical multiplier and how it moves with n.

* :func:`check_inputs` runs when the first job of this family is scheduled, before any job runs
  (only then: other families do not need the model or the text): the model (package installed,
  files present, SHA-256, architecture, weights readable) and the text (readable, long enough for
  the asked windows); every failure is an error naming the key, the file or the install line.
* :func:`head_phase` (rule ``transformer_heads``, one job per n): the forward pass of each window
  once, then the multiplier probes of every head (:mod:`attnscale.transformer.probes`).
* :func:`global_scaling` (rule ``transformer_global``): every layer's scores multiplied by the
  same s and the forward pass rerun; each layer's lambda and rho_hat.

The summaries (rule ``transformer_summary``) are in
:mod:`attnscale.experiments.transformer_summary`, so that editing them does not rerun the
forward passes.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from attnscale.pipeline.io import provenance_columns
from attnscale.transformer import corpus, loader, probes
from attnscale.transformer.library import job_rng, spawn_key

__all__ = [
    "check_inputs",
    "default_cache",
    "load_windows",
    "head_phase",
    "global_scaling",
]

ROWS_KEY = "transformer/rows"


def _text_tokens(model, text: str, text_part: str | None, need: int):
    """Word pieces of the text, at least ``need`` of them when the text has them: the text is
    cut at a whitespace after about ``8 need`` characters first (word pieces never cross
    whitespace, so the ids are a prefix of the whole text's ids [derived]), the whole text only
    if that is not enough. Returns ``(ids, sha256 of the file)``."""
    body, digest = corpus.read_text(text, text_part)
    cut = body.find(" ", min(len(body), 8 * int(need)))
    if cut > 0:
        ids = model.encode(body[:cut])
        if len(ids) >= need:
            return ids, digest
    return model.encode(body), digest


def default_cache() -> Path:
    """Where :func:`check_inputs` remembers successful checks: ``$XDG_CACHE_HOME/attnscale``
    (default ``~/.cache/attnscale``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attnscale" / "transformer_inputs.json"


def check_inputs(
    *,
    model: str,
    text: str,
    text_part: str | None,
    text_sha256: str | None,
    n,
    windows: int,
    global_n: int,
    global_windows: int,
    cache: str | Path | None = None,
) -> dict:
    """Check the model and the text before any job of the family runs
    (docs/pipeline.md#optional-pieces); returns the resolved model source
    (``ModelSource.params()``), the text's SHA-256 and how many word pieces were read.

    ``cache``: a JSON file remembering successful checks by the configuration and the files'
    sizes and modification times, so that parsing the workflow again does not hash 90 MB again
    (:func:`default_cache`; ``None``: no cache).

    Raises
    ------
    attnscale.transformer.loader.ModelError, attnscale.transformer.corpus.CorpusError
        With the message naming the file, the key, the install line or the number of word
        pieces needed.
    """
    need = max(corpus.tokens_needed(n, windows), corpus.tokens_needed([global_n], global_windows))
    paths = [Path(text)]
    if model == "packaged":
        paths.append(loader.packaged_zip())  # ModelError with the install line if missing
    else:
        paths += [Path(model) / f for f in loader.FILES]
    stamp = [
        [str(p), p.stat().st_size, p.stat().st_mtime_ns] if p.exists() else [str(p)] for p in paths
    ]
    key = json.dumps(
        [
            model,
            str(text),
            text_part,
            text_sha256,
            [int(x) for x in n],
            int(windows),
            int(global_n),
            int(global_windows),
            stamp,
        ]
    )
    key = hashlib.sha256(key.encode()).hexdigest()
    known = {}
    if cache is not None and Path(cache).is_file():
        try:
            known = json.loads(Path(cache).read_text())
        except (ValueError, OSError):
            known = {}
        if isinstance(known, dict) and key in known:
            return known[key]
    source = loader.resolve(model)
    if not Path(text).is_file():
        raise corpus.CorpusError(
            f"transformer.text: corpus file {text} does not exist (the default, "
            "texts/pride-and-prejudice.txt, comes with the repository; "
            "docs/real-transformer.md#real-text)"
        )
    m, config = loader.load_tokenizer(source)
    ids, digest = _text_tokens(m, text, text_part, need)
    if text_sha256 and digest != text_sha256:
        raise corpus.CorpusError(
            f"transformer.text: {text} has SHA-256 {digest}, expected "
            f"{text_sha256} (transformer.text_sha256)"
        )
    if len(ids) < need:
        raise corpus.CorpusError(
            f"transformer.text: {text} has {len(ids)} word pieces; {windows} windows of "
            f"n = {max(n)} tokens ([CLS] + n - 2 word pieces + [SEP]) need {need} word pieces "
            "(lower transformer.windows or give a longer text)"
        )
    positions = int(config.get("max_position_embeddings", 0))
    if max(max(n), global_n) > positions:
        raise corpus.CorpusError(
            f"transformer.n: windows of {max(max(n), global_n)} tokens "
            f"exceed the model's {positions} positions"
        )
    result = {"model": source.params(), "text_sha256": digest, "text_tokens_read": len(ids)}
    if cache is not None:
        known = known if isinstance(known, dict) else {}
        known[key] = result
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(f"{cache}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known))
        tmp.replace(cache)
    return result


def load_windows(model_source: dict, text: str, text_part: str | None, n: int, windows: int):
    """The loaded model and ``windows`` non-overlapping windows of ``n`` tokens of the text."""
    m = loader.load(model_source)
    ids, digest = _text_tokens(m, text, text_part, int(windows) * (int(n) - 2))
    W = corpus.windows(ids, n, windows, m.token_id("[CLS]"), m.token_id("[SEP]"))
    return m, W, digest


def _rows(root_seed, n, w, rows):
    rng = job_rng(root_seed, spawn_key(ROWS_KEY, n, w))
    return probes.text_rows(n, rows, rng)


def head_phase(
    *,
    root_seed: int,
    model: dict,
    text: str,
    text_part: str | None,
    n: int,
    windows: int,
    rows: int,
    multipliers,
    position_bands: int,
    position_band: int,
) -> dict:
    """Entry of rule ``transformer_heads``: the phase curves of every head on ``windows``
    windows of ``n`` tokens (docs/real-transformer.md#the-probes), also by ``position_bands``
    bands of query positions and on the fixed band of positions ``1`` to ``position_band``
    (docs/real-transformer.md#n-apart-from-position).

    Returns
    -------
    dict of arrays
        ``lambda``, ``self_weight``, ``lambda_text``, ``lambda_fixed`` (W, L, H, K);
        ``lambda_band`` (W, L, H, B, K); ``lambda_inf``, ``lambda_text_inf``,
        ``lambda_fixed_inf``, ``self_max``, ``top_key_share``, ``special_mass``, ``s_self``,
        ``s_cross``, ``sd_self``, ``sd_cross``, ``rho_q``, ``rho_k`` (W, L, H);
        ``lambda_band_inf`` (W, L, H, B); ``rho_hat`` (W, L); ``multipliers`` (K,); ``ids``
        (W, n); ``n``, ``rows``, ``d_model``, ``d_head`` and the provenance as a JSON string
        ``meta``.
    """
    ms = np.asarray(multipliers, dtype=np.float64)
    m, W, digest = load_windows(model, text, text_part, int(n), int(windows))
    fixed = np.arange(1, min(int(position_band), int(n) - 2) + 1)
    per = []
    for w, ids in enumerate(W):
        _, recs = m.adapter.forward(ids)
        r = _rows(root_seed, int(n), w, rows)
        kw = {"bands": int(position_bands), "fixed_rows": fixed}
        per.append([probes.layer_probes(rec, r, ms, **kw) for rec in recs])
    out = {k: np.asarray([[lay[k] for lay in win] for win in per]) for k in per[0][0]}
    params = {
        "n": int(n),
        "windows": int(windows),
        "rows": int(rows),
        "position_bands": int(position_bands),
        "position_band": int(position_band),
        "multipliers": ms.tolist(),
        "model": model,
        "text_sha256": digest,
        "text_part": text_part,
    }
    meta = provenance_columns(root_seed, spawn_key(ROWS_KEY, int(n)), params)
    out.update(
        multipliers=ms,
        ids=W,
        n=np.int64(n),
        rows=np.int64(min(rows, n - 2)),
        d_model=np.int64(recs[0].inputs.shape[1]),
        d_head=np.int64(recs[0].q.shape[2]),
        meta=np.array(json.dumps({**meta, **params})),
    )
    return out


def global_scaling(
    *,
    root_seed: int,
    model: dict,
    text: str,
    text_part: str | None,
    n: int,
    windows: int,
    rows: int,
    multipliers,
) -> dict:
    """Entry of rule ``transformer_global``: every layer's scores multiplied by the same ``s``,
    the forward pass rerun, and per layer the rho_hat of its inputs and lambda of each head at
    that scale (docs/real-transformer.md#the-whole-model-scaled).

    Returns ``lambda`` (W, S, L, H), ``self_weight`` (W, S, L, H), ``rho_hat`` (W, S, L),
    ``multipliers`` (S,), ``n``, ``meta``.
    """
    ms = np.asarray(multipliers, dtype=np.float64)
    m, W, digest = load_windows(model, text, text_part, int(n), int(windows))
    lam, sw, rho = [], [], []
    for w, ids in enumerate(W):
        r = _rows(root_seed, int(n), w, rows)
        lw, sww, rw = [], [], []
        for s in ms:
            _, recs = m.adapter.forward(ids, multipliers=s)
            res = [
                probes.layer_probes(rec, r, [s], descriptors=False, text_keys=False) for rec in recs
            ]
            lw.append([x["lambda"][:, 0] for x in res])
            sww.append([x["self_weight"][:, 0] for x in res])
            rw.append([x["rho_hat"] for x in res])
        lam.append(lw)
        sw.append(sww)
        rho.append(rw)
    params = {
        "n": int(n),
        "windows": int(windows),
        "rows": int(rows),
        "multipliers": ms.tolist(),
        "model": model,
        "text_sha256": digest,
        "text_part": text_part,
    }
    meta = provenance_columns(root_seed, spawn_key(ROWS_KEY, int(n)), params)
    return {
        "lambda": np.asarray(lam),
        "self_weight": np.asarray(sw),
        "rho_hat": np.asarray(rho),
        "multipliers": ms,
        "n": np.int64(n),
        "meta": np.array(json.dumps({**meta, **params})),
    }
