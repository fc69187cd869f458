"""Entry functions of the trained retrieval layer's head probes
(docs/training.md#the-retrieval-heads-on-the-phase-diagram): the transformer family's multiplier
probes (:func:`attnscale.transformer.probes.head_curves`, the critical multipliers of
:func:`attnscale.experiments.training_probes.critical_multipliers`) on every retrieval checkpoint,
per head and test n, and the learned-score theory's critical multiplier ``gamma_c_eff ln n``
(:func:`attnscale.experiments.training_probes.effective_multiplier`).

Paper A's lambda needs pairs of query rows over the same keys, and a retrieval example has one
query. So one *context* (n tokens, each binding a key and a value) is queried by ``rows`` queries
at once, one for each of ``rows`` distinct context positions (all of them when n is smaller)
[choice]: the queries do not interact, so each row is exactly the model's attention of that
query on that context. A query's own token (Paper A's ``y_i``) is the context token that carries
its key, the right key; ``Y`` are the normalised context tokens and ``A(s) Y`` the head's outputs
on them (values ``V = I`` as in every probe). ``s = 1`` is the trained model with its variant's
factor ``c(n)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.experiments.training_probes import critical_multipliers, effective_multiplier
from attnscale.layer.dense.attention import softmax_rows
from attnscale.layer.tokens import mean_cosine
from attnscale.pipeline.io import set_provenance, with_job_provenance_all
from attnscale.training import checkpoint
from attnscale.training import retrieval as R
from attnscale.training.scaling import TRAINED_AS, VARIANTS
from attnscale.transformer.probes import head_curves

__all__ = [
    "context",
    "tokens",
    "probe_context",
    "probe_checkpoint",
    "probe_retrieval",
    "summarise_retrieval_probes",
    "lm_at_train",
    "critical_table",
]

#: The per-head quantities averaged over contexts before s* is read off.
AVERAGED = ("rho_hat", "lambda_inf", "s_self", "s_cross", "weight_right")


def context(rng, n: int, rows: int, cfg: dict) -> dict:
    """One context of ``n`` tokens (:func:`attnscale.training.retrieval.batch`) queried at
    ``min(rows, n)`` distinct positions (sorted): a batch of that many examples that share the
    context, one query each."""
    one = R.batch(rng, 1, n, cfg)
    pos = np.sort(rng.choice(n, size=min(int(rows), n), replace=False))
    m = pos.size
    return {
        "keys": np.repeat(one["keys"], m, axis=0),
        "values": np.repeat(one["values"], m, axis=0),
        "mask": np.repeat(one["mask"], m, axis=0),
        "n": np.full(m, n, dtype=np.int32),
        "query": one["keys"][0, pos],
        "position": pos.astype(np.int32),
        "target": one["values"][0, pos],
    }


def tokens(params, b) -> np.ndarray:
    """The context's tokens ``(n, d)``: each the concatenation of its key's and its value's
    embeddings, as the model builds them (docs/training.md#retrieval; tested against the
    model's scores)."""
    return np.concatenate(
        [params["key_embed"][b["keys"][0]], params["value_embed"][b["values"][0]]], axis=1
    )


def probe_context(params, cfg, variant, b, multipliers) -> list[dict]:
    """Every head on one queried context: lambda(s) and lambda(inf) over the pairs of query rows
    (:func:`attnscale.transformer.probes.head_curves`), rho_hat (the mean cosine of the queries'
    own tokens, as in the language model's probes), the mean trained score of the right key
    (``s_self``) and of the others (``s_cross``), and the mean weight on the right key at s = 1."""
    z, _ = R.scores(params, b, variant, cfg, np)  # (m, heads, n), the trained scaled scores
    pos = np.asarray(b["position"])
    m, n = pos.size, z.shape[2]
    X = tokens(params, b)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    rho = mean_cosine(Y[pos])
    own = np.zeros((m, n), dtype=bool)
    own[np.arange(m), pos] = True
    out = []
    for h in range(z.shape[1]):
        S = z[:, h, :]
        res = head_curves(Y, S, pos, multipliers)
        out.append(
            {
                "head": h,
                "rho_hat": rho,
                "lambda": res["lambda"],
                "lambda_inf": res["lambda_inf"],
                "s_self": float(S[own].mean()),
                "s_cross": float(S[~own].mean()),
                "weight_right": float(softmax_rows(S)[own].mean()),
            }
        )
    return out


def _head_rows(acc, ms, key, n, rho):
    """One row per head from the contexts' records ``acc[h]``: means over contexts, s* per
    definition at the checkpoint's pooled ``rho`` and the effective-score critical multiplier."""
    records = []
    for h, rs in sorted(acc.items()):
        lam = np.mean([r["lambda"] for r in rs], axis=0)
        r = {k: float(np.mean([x[k] for x in rs])) for k in AVERAGED}
        r["rho_pooled"] = rho
        r.update(critical_multipliers(ms, lam, r["lambda_inf"], rho))
        r["s_eff"] = effective_multiplier(r["s_self"], r["s_cross"], n)
        records.append({**key, "head": h, **r, "lambda": lam})
    return records


def probe_checkpoint(params, cfg, ns, contexts, rows, ms, root_seed) -> tuple[list, list]:
    """Every variant evaluated on one checkpoint's parameters (the plain model also as
    ``test_rule``) at every n of ``ns`` of at least 3 keys and at n_train [choice: a pair of rows and a
    distractor], on ``contexts`` held-out contexts with ``rows`` queries each. rho_hat enters
    s* pooled over every context of every n [derived: the tokens are iid, their law does not
    depend on n; one level for every n, so that s*(n)/s*(n_train) compares crossings of one
    level]. Returns the rows of the heads and curves tables."""
    p64 = {k: np.asarray(v, np.float64) for k, v in params.items()}
    seed = int(cfg["seed"])
    recs = {}
    for n in sorted({int(n) for n in ns if int(n) >= 3} | {int(cfg["n_train"])}):
        rng = job_rng(root_seed, spawn_key("training-retrieval-probes", seed, n))
        batches = [context(rng, n, rows, cfg) for _ in range(int(contexts))]
        for v in [v for v in VARIANTS if TRAINED_AS[v] == cfg["variant"]]:
            acc: dict = {}
            for b in batches:
                for r in probe_context(p64, cfg, v, b, ms):
                    acc.setdefault(r["head"], []).append(r)
            recs[(v, n)] = acc
    rho = float(np.mean([r["rho_hat"] for a in recs.values() for rs in a.values() for r in rs]))
    heads, curves = [], []
    for (v, n), acc in recs.items():
        key = {"variant": v, "seed": seed, "n": n}
        for r in _head_rows(acc, ms, key, n, rho):
            lam = r.pop("lambda")
            heads.append(r)
            curves += [
                {**key, "head": r["head"], "multiplier": s, "lambda": x}
                for s, x in zip(ms, lam, strict=True)
            ]
    return heads, curves


def probe_retrieval(*, weights, variant, seeds, ns, contexts, rows, multipliers, root_seed) -> dict:
    """Entry of rule ``training_retrieval_probes``: every seed's checkpoint of one trained
    variant (``weights``: their model.safetensors, in the order of ``seeds``; the hashes of
    each checked first), probed by :func:`probe_checkpoint`. Returns ``heads`` (per variant
    evaluated, seed, n and head: rho_hat, lambda(inf), s* under Paper A's and the normalised
    lambda, s_self, s_cross, ``s_eff`` = gamma_c_eff ln n, the weight on the right key at
    s = 1, the learned factor) and ``curves`` (lambda(s))."""
    ms = np.asarray(multipliers, dtype=np.float64)
    loaded = [
        checkpoint.load(Path(w).parent / "config.json", R.ARCHITECTURE, variant=variant, seed=s)
        for w, s in zip(weights, [int(s) for s in seeds], strict=True)
    ]
    heads, curves = [], []
    for params, cfg, _, digest in loaded:
        H, C = (
            pd.DataFrame(x)
            for x in probe_checkpoint(params, cfg, ns, contexts, rows, ms, root_seed)
        )
        dh = cfg["d"] // cfg["heads"]
        s = np.asarray(params["s"], np.float64) * np.log(cfg["n_train"]) * np.sqrt(dh)
        H["learned_factor"] = s[H["head"]] if cfg["variant"] == "learned" else np.nan
        for df in (H, C):
            df["n_train"] = int(cfg["n_train"])
            df["contexts"] = int(contexts)
            df["checkpoint_sha256"] = digest
            set_provenance(df, root_seed, only=("root_seed",))
        heads.append(H)
        curves.append(C)
    return with_job_provenance_all(
        {
            "heads": pd.concat(heads, ignore_index=True),
            "curves": pd.concat(curves, ignore_index=True),
        }
    )


#: The statistics of the trained scale against the critical one at n_train.
CRITICAL = ["s_eff", "s_star_paper_a", "s_star_normalised", "learned_factor"]

#: The per-seed statistics summarised over seeds (docs/training.md#the-retrieval-heads-on-the-phase-diagram).
STATS = [
    f"{what}_{name}"
    for what in ("s_star", "ratio", "crossing")
    for name in ("paper_a", "normalised")
] + ["s_eff", "ratio_eff", "rho_pooled", "weight_right", "learned_factor"]


def _per_seed(H: pd.DataFrame) -> pd.DataFrame:
    """Per variant, seed and n: the *retrieval head*'s statistics (the head with the largest
    mean weight on the right key at n_train, chosen once per checkpoint and variant [choice], as
    in the evaluation) and over all heads (``*_heads``: the median, the share for
    ``crossing_*``); ratios are each head's s*(n) (or s_eff(n)) over its own at n_train."""
    H = H.copy()
    ref = H[H["n"] == H["n_train"]].set_index(["variant", "seed", "head"])
    idx = pd.MultiIndex.from_frame(H[["variant", "seed", "head"]])
    for name in ("paper_a", "normalised"):
        col = f"s_star_{name}"
        H[f"ratio_{name}"] = H[col].to_numpy() / ref[col].reindex(idx).to_numpy()
        H[f"crossing_{name}"] = H[col].notna().astype(float)
    H["ratio_eff"] = H["s_eff"].to_numpy() / ref["s_eff"].reindex(idx).to_numpy()
    best = {k: g["weight_right"].idxmax()[2] for k, g in ref.groupby(level=["variant", "seed"])}
    records = []
    for (v, seed, n), g in H.groupby(["variant", "seed", "n"], sort=True):
        top = g[g["head"] == best.get((v, seed), -1)]
        r = {"variant": v, "seed": seed, "n": n, "head": best.get((v, seed), -1)}
        for c in STATS:
            r[c] = float(top[c].iloc[0]) if len(top) else np.nan
            agg = g[c].mean() if c.startswith("crossing") else g[c].median()
            r[f"{c}_heads"] = float(agg) if g[c].notna().any() else np.nan
        records.append(r)
    return pd.DataFrame(records)


def _over_seeds(P: pd.DataFrame, cols: list) -> pd.DataFrame:
    """Per variant and n, each statistic's mean over the seeds where it is defined (s* is not
    where lambda does not cross), its SE over them (``ddof = 1``; ``nan`` for one) and their
    number (``*_seeds``)."""
    records = []
    for (v, n), g in P.groupby(["variant", "n"], sort=False):
        r = {"variant": v, "n": n, "seeds": g["seed"].nunique()}
        for c in cols:
            x = g[c].to_numpy(float)
            x = x[np.isfinite(x)]
            r[c] = x.mean() if x.size else np.nan
            r[f"{c}_se"] = x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else np.nan
            r[f"{c}_seeds"] = x.size
        records.append(r)
    return pd.DataFrame(records)


def summarise_retrieval_probes(*, heads: list, curves: list, lm_heads: pd.DataFrame) -> dict:
    """Entry of rule ``training_retrieval_probes_summary``: every head with its ratios
    (``heads``), the per-seed statistics (``seeds``), their means and SEs over seeds per variant
    and n (``summary``), the lambda(s) curves concatenated (``curves``) and the trained scale
    against the critical one for the retrieval and the language models (``critical``,
    :func:`critical_table`; ``lm_heads``: ``training_lm_probes_summary``'s heads)."""
    H = pd.concat(heads, ignore_index=True)
    P = _per_seed(H)
    order = {v: i for i, v in enumerate(VARIANTS)}
    P = P.sort_values(
        ["variant", "seed", "n"], key=lambda c: c.map(order) if c.name == "variant" else c
    )
    S = _over_seeds(P, [c for c in P.columns if c not in ("variant", "seed", "n", "head")])
    n_train = int(H["n_train"].iloc[0])
    S["n_over_n_train"] = S["n"] / n_train
    S["n_train"] = n_train
    sha = ";".join(sorted(H["checkpoint_sha256"].unique()))
    out = {"summary": S, "seeds": P, "heads": H, "curves": pd.concat(curves, ignore_index=True)}
    out["critical"] = critical_table(S, lm_heads)
    for df in out.values():
        df["n_train"] = n_train
        df["checkpoint_sha256"] = sha
    return with_job_provenance_all(out)


def lm_at_train(heads: pd.DataFrame) -> pd.DataFrame:
    """The language model's heads at n_train (docs/training.md#is-the-trained-scale-critical):
    per variant, the mean and SE over seeds of each seed's median over its heads (every layer)
    in the position band that ends at n_train, of ``s_eff`` (gamma_c_eff ln n) and s* per
    definition, from the table ``probes_heads.csv`` of ``training_lm_probes_summary``; and the
    number of heads (all seeds) whose ``s_eff`` is infinite (``infinite`` of ``heads``)."""
    H = heads[heads["hi"] == heads["n_train"]]
    P = H.groupby(["variant", "seed"], as_index=False, sort=False)[CRITICAL].median()
    P["n"] = int(H["n_train"].iloc[0])
    out = _over_seeds(P, CRITICAL)
    count = H.groupby("variant", sort=False)["s_eff"]
    out["infinite"] = out["variant"].map(count.apply(lambda x: int(np.isinf(x).sum())))
    out["heads"] = out["variant"].map(count.size())
    return out


def critical_table(summary: pd.DataFrame, lm_heads: pd.DataFrame) -> pd.DataFrame:
    """The trained scale against the critical one at n_train, one row per model and variant
    (docs/training.md#is-the-trained-scale-critical): the retrieval head's statistics of
    ``summary`` at n_train (``model = retrieval``) and :func:`lm_at_train` (``model = lm``)."""
    keep = ["variant", "n", "seeds"] + [f"{c}{x}" for c in CRITICAL for x in ("", "_se", "_seeds")]
    R = summary[summary["n"] == summary["n_train"]][keep].assign(model="retrieval")
    return pd.concat([R, lm_at_train(lm_heads).assign(model="lm")], ignore_index=True)
