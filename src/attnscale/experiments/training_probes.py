"""Entry functions of the trained language model's head probes (docs/training.md#the-trained-heads-on-the-phase-diagram):
the transformer family's multiplier probes (:func:`attnscale.transformer.probes.head_curves`,
:func:`~attnscale.transformer.probes.critical_multiplier`) run on the causal decoder's
checkpoints through its adapter (:class:`attnscale.training.decoder.CausalDecoder`), per head and
per position band of the query (n = position + 1 keys seen).

The scores are the trained model's, the variant's factor included (the adapter's records carry
it), each row masked to the keys it sees; ``s`` multiplies them, so ``s = 1`` is the trained
model and ``s*`` is the head's critical multiplier at that band's n.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.layer.tokens import mean_cosine
from attnscale.pipeline.io import set_provenance, with_job_provenance_all
from attnscale.training import TrainingError, checkpoint
from attnscale.training import decoder as D
from attnscale.training.scaling import TRAINED_AS, VARIANTS
from attnscale.transformer.library import gamma_c_eff
from attnscale.transformer.probes import DEFINITIONS, critical_multiplier, head_curves

__all__ = [
    "MASKED",
    "causal_scores",
    "band_rows",
    "probe_record",
    "critical_multipliers",
    "effective_multiplier",
    "probe_lm",
    "summarise_probes",
]

#: The score of a key a causal row does not see (finite, so that ``s * MASKED`` stays finite and
#: its softmax weight is exactly 0 for every ``s > 0``).
MASKED = -1e30


def causal_scores(record, h: int, row_idx, hi: int) -> np.ndarray:
    """Head ``h``'s trained scores ``(m, hi)`` of the query rows ``row_idx`` on keys ``0`` to ``hi - 1``,
    with the keys after each row masked (:data:`MASKED`)."""
    row_idx = np.asarray(row_idx)
    S = record.scores(h, row_idx)[:, :hi]
    return np.where(np.arange(hi)[None, :] <= row_idx[:, None], S, MASKED)


def band_rows(lo: int, hi: int, rows: int, rng) -> np.ndarray:
    """Sorted query positions of the band ``[lo, hi)`` (position 0, which sees one key, left out
    [choice]): all of them, or ``rows`` drawn without replacement."""
    pos = np.arange(max(int(lo), 1), int(hi))
    if pos.size <= rows:
        return pos
    return np.sort(rng.choice(pos, size=int(rows), replace=False))


def effective_multiplier(s_self: float, s_cross: float, n: float) -> float:
    """The learned-score theory's critical multiplier of a head, ``gamma_c_eff ln n``
    (docs/real-transformer.md#reading-the-theory-off-a-head): the multiplier of the trained
    scores at which the mean self-weight is 1/2 when the ``n - 1`` other scores are replaced by
    their mean; 1 is a head trained exactly at that scale (docs/training.md#is-the-trained-scale-critical).
    ``n`` is rounded to an integer; ``nan`` below 3 keys, ``inf`` where the self-score does not
    win on average."""
    n = int(round(float(n)))
    if n < 3 or not (np.isfinite(s_self) and np.isfinite(s_cross)):
        return float("nan")
    return float(gamma_c_eff(s_self, s_cross, n) * np.log(n))


def probe_record(record, edges, rows_by_band, multipliers) -> list[dict]:
    """Every head of one layer's record, per position band: lambda(s) on the band's query rows
    (pairs within the band), lambda(inf) (the argmax map), rho_hat, the mean cosine of the
    band's normalised query rows [choice], and the effective scores: the mean over the band's
    rows of the own key's trained score (``s_self``) and of the mean score of the keys before it
    (``s_cross``), with ``n_keys`` the rows' mean number of keys seen
    (docs/training.md#the-trained-heads-on-the-phase-diagram)."""
    X = record.inputs
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    out = []
    for b, row_idx in enumerate(rows_by_band):
        hi = int(edges[b + 1])
        rho = mean_cosine(Y[row_idx])
        before = np.arange(hi)[None, :] < row_idx[:, None]  # the other keys a row sees
        for h in range(record.q.shape[0]):
            S = causal_scores(record, h, row_idx, hi)
            res = head_curves(Y[:hi], S, row_idx, multipliers)
            out.append(
                {
                    "band": b,
                    "head": h,
                    "rho_hat": rho,
                    "lambda": res["lambda"],
                    "lambda_inf": res["lambda_inf"],
                    "s_self": float(S[np.arange(row_idx.size), row_idx].mean()),
                    "s_cross": float((np.where(before, S, 0.0).sum(1) / row_idx).mean()),
                    "n_keys": float((row_idx + 1).mean()),
                }
            )
    return out


def _windows(weights, text, text_part, heldout, cfg, vocab, windows, length):
    from attnscale.experiments.training_lm import split_text

    ids, chars, cut, sha = split_text(text, text_part, heldout)
    if chars != vocab["chars"] or sha != cfg["text_sha256"]:
        raise TrainingError(f"{weights}: trained on another text (SHA-256 {cfg['text_sha256']})")
    held = ids[cut:]
    if held.size < windows * length:
        raise TrainingError(
            f"training.lm: the held-out text ({held.size} characters) holds "
            f"fewer than {windows} windows of {length}"
        )
    return [held[w * length : (w + 1) * length] for w in range(windows)]


def critical_multipliers(ms, lam, lam_inf, rho):
    """s* per definition; ``nan`` where rho_hat lies outside (0, 1), where Paper A's critical
    level is not defined [choice]."""
    if not 0.0 < rho < 1.0:
        return {f"s_star_{name}": np.nan for name in ("paper_a", "normalised")}
    return {
        f"s_star_{name}": critical_multiplier(ms, lam, lam_inf, rho, normalise=norm)
        for name, (_, _, norm) in DEFINITIONS.items()
        if name != "text_keys"
    }


def probe_lm(
    *,
    weights,
    variant,
    seed,
    text,
    text_part,
    heldout,
    windows,
    length_factor,
    rows,
    multipliers,
    root_seed,
) -> dict:
    """Entry of rule ``training_lm_probes``: one checkpoint (hashes checked first), every variant
    evaluated on it (the plain model also as ``test_rule``), on ``windows`` held-out windows of
    ``length_factor`` times its context; per layer, head and position band (the edges of
    :func:`attnscale.experiments.training_lm.bands`) the lambda(s) curve averaged over windows,
    and s* under Paper A's and the normalised lambda."""
    from attnscale.experiments.training_lm import bands

    params, cfg, vocab, digest = checkpoint.load(
        Path(weights).parent / "config.json", D.ARCHITECTURE, variant=variant, seed=int(seed)
    )
    T = int(cfg["n_train"])
    edges = bands(T, int(length_factor))
    wins = _windows(weights, text, text_part, heldout, cfg, vocab, int(windows), int(edges[-1]))
    ms = np.asarray(multipliers, dtype=np.float64)
    rng = job_rng(root_seed, spawn_key("training-lm-probes", int(seed)))
    picks = [
        [band_rows(a, b, int(rows), rng) for a, b in zip(edges[:-1], edges[1:], strict=True)]
        for _ in wins
    ]
    heads, curves = [], []
    for v in [v for v in VARIANTS if TRAINED_AS[v] == cfg["variant"]]:
        model = D.CausalDecoder({**cfg, "variant_eval": v}, params)
        acc = {}
        for w, ids in enumerate(wins):
            for layer, rec in enumerate(model.forward(ids)[1]):
                for r in probe_record(rec, edges, picks[w], ms):
                    a = acc.setdefault((layer, r["head"], r["band"]), [])
                    a.append(r)
        for (layer, h, b), rs in sorted(acc.items()):
            lam = np.mean([r["lambda"] for r in rs], axis=0)
            lam_inf = float(np.mean([r["lambda_inf"] for r in rs]))
            rho = float(np.mean([r["rho_hat"] for r in rs]))
            eff = {k: float(np.mean([r[k] for r in rs])) for k in ("s_self", "s_cross", "n_keys")}
            eff["s_eff"] = effective_multiplier(eff["s_self"], eff["s_cross"], eff["n_keys"])
            key = {"variant": v, "seed": int(seed), "layer": layer, "head": h, "band": b}
            key.update({"lo": int(edges[b]), "hi": int(edges[b + 1])})
            heads.append(
                {
                    **key,
                    "rho_hat": rho,
                    "lambda_inf": lam_inf,
                    **critical_multipliers(ms, lam, lam_inf, rho),
                    **eff,
                }
            )
            curves += [{**key, "multiplier": m, "lambda": x} for m, x in zip(ms, lam, strict=True)]
    out = {"heads": pd.DataFrame(heads), "curves": pd.DataFrame(curves)}
    for df in out.values():
        df["n_train"] = T
        df["windows"] = len(wins)
        df["checkpoint_sha256"] = digest
        set_provenance(df, root_seed, only=("root_seed",))
    learned = cfg["variant"] == "learned"
    out["heads"]["learned_factor"] = [
        float(params[f"{r.layer}.s"][r.head]) * np.log(T) * np.sqrt(cfg["d"] // cfg["heads"])
        if learned
        else np.nan
        for r in out["heads"].itertuples()
    ]
    return with_job_provenance_all(out)


def _ratios(H: pd.DataFrame) -> pd.DataFrame:
    """Each head's s*(band) over its s* in the band that ends at n_train, per definition."""
    H = H.copy()
    ref = H[H["hi"] == H["n_train"]].set_index(["variant", "seed", "layer", "head"])
    idx = pd.MultiIndex.from_frame(H[["variant", "seed", "layer", "head"]])
    for name in ("paper_a", "normalised"):
        col = f"s_star_{name}"
        H[f"ratio_{name}"] = H[col].to_numpy() / ref[col].reindex(idx).to_numpy()
    return H


def summarise_probes(*, heads: list, curves: list) -> dict:
    """Entry of rule ``training_lm_probes_summary``: every head of every checkpoint with its
    s*(n)/s*(n_train) (``heads``); per variant and band, over heads and seeds: the share of
    heads whose lambda crosses the critical level, the median s* and the median and quartiles
    of the ratio, per definition (``summary``); the curves, concatenated (``curves``)."""
    H = _ratios(pd.concat(heads, ignore_index=True))
    records = []
    for (v, b), g in H.groupby(["variant", "band"], sort=False):
        r = {"variant": v, "band": int(b), "lo": int(g["lo"].iloc[0]), "hi": int(g["hi"].iloc[0])}
        r["n_mid"] = float(np.sqrt((max(r["lo"], 1) + 1) * r["hi"]))
        r["heads"] = len(g)
        for name in ("paper_a", "normalised"):
            s, q = g[f"s_star_{name}"], g[f"ratio_{name}"].dropna()
            r[f"crossing_{name}"] = float(s.notna().mean())
            r[f"s_star_{name}"] = float(s.median()) if s.notna().any() else np.nan
            for lab, p in (("q25", 0.25), ("median", 0.5), ("q75", 0.75)):
                r[f"ratio_{name}_{lab}"] = float(q.quantile(p)) if len(q) else np.nan
        r["learned_factor"] = float(g["learned_factor"].median())
        records.append(r)
    S = pd.DataFrame(records)
    order = {v: i for i, v in enumerate(VARIANTS)}
    S = S.sort_values(["variant", "band"], key=lambda c: c.map(order) if c.name == "variant" else c)
    S["seeds"] = H["seed"].nunique()
    sha = ";".join(sorted(H["checkpoint_sha256"].unique()))
    out = {"summary": S, "heads": H, "curves": pd.concat(curves, ignore_index=True)}
    for df in out.values():
        df["n_train"] = int(H["n_train"].iloc[0])
        df["checkpoint_sha256"] = sha
    return with_job_provenance_all(out)
