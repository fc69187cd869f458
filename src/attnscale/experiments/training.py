"""Entry functions of the training family's retrieval rules (docs/training.md): train one
variant and seed, evaluate its checkpoint at every test n with the theory's prediction, and
summarise over seeds. Rule -> this adapter -> :mod:`attnscale.training`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.pipeline.io import provenance_columns, set_provenance, with_job_provenance_all
from attnscale.training import checkpoint, evaluate, prediction
from attnscale.training import retrieval as R
from attnscale.training.scaling import TRAINED_AS, VARIANTS

__all__ = [
    "checkpoint_outputs",
    "retrieval_config",
    "train_retrieval",
    "evaluate_retrieval",
    "summarise_retrieval",
]

#: Parameters every variant trains; the fixed random key embeddings [choice: the keys stay
#: random vectors, so the distractors' scores have a law of their own, as in Paper B] and the
#: s_h of all but ``learned`` are frozen.
FROZEN = {"plain": ("s", "key_embed"), "rule": ("s", "key_embed"), "learned": ("key_embed",)}


def retrieval_config(model: dict, variant: str) -> dict:
    """The checkpoint's config.json body of a retrieval model (sizes, variant, training n)."""
    if variant not in FROZEN:
        raise ValueError(f"variant: a trained variant is one of {sorted(FROZEN)}, got {variant!r}")
    cfg = {k: int(model[k]) for k in ("d", "heads", "keys", "values", "n_min", "n_train")}
    if cfg["d"] % cfg["heads"]:
        raise ValueError(f"training.retrieval.d = {cfg['d']} must be a multiple of heads")
    return {"architecture": R.ARCHITECTURE, "variant": variant, **cfg}


def train_retrieval(*, variant: str, seeds: list, root_seed: int, model: dict, schedule: dict):
    """Entry of rule ``training_retrieval_train``: one variant, every seed (one compilation).

    The initial parameters and the batches of a seed depend on (root_seed, seed) only, so every
    variant sees the same initial weights and the same data in the same order.

    Returns
    -------
    dict
        Per seed s: ``model_s`` (safetensors bytes), ``config_s`` and ``vocab_s`` (JSON) and
        ``curve_s`` (the loss every ``schedule['log_every']`` steps).
    """
    from attnscale.pipeline.runtime import LOG
    from attnscale.training import require
    from attnscale.training.trainer import train

    cfg = retrieval_config(model, variant)
    jax, _ = require()
    bsz = int(schedule["batch"])

    def run(seed):
        params = R.init_params(job_rng(root_seed, spawn_key("training-retrieval-init", seed)), cfg)
        data = job_rng(root_seed, spawn_key("training-retrieval-data", seed))

        def next_batch(step):
            n = data.integers(cfg["n_min"], cfg["n_train"] + 1, size=bsz)
            return R.batch(data, bsz, n, cfg, n_pad=cfg["n_train"])

        return params, next_batch

    LOG.info("retrieval %s seeds %s: %s", variant, seeds, cfg)
    trained = train(
        lambda p, b: R.loss(p, b, variant, cfg, jax.numpy),
        [run(int(s)) for s in seeds],
        steps=int(schedule["steps"]),
        lr=float(schedule["lr"]),
        weight_decay=float(schedule["weight_decay"]),
        warmup=int(schedule["warmup"]),
        log_every=int(schedule["log_every"]),
        frozen=FROZEN[variant],
        log=LOG,
    )
    vocab = {"keys": cfg["keys"], "values": cfg["values"], "kind": "integer ids"}
    return with_job_provenance_all(
        checkpoint_outputs(trained, seeds, cfg, schedule, vocab, variant, root_seed)
    )


def evaluate_retrieval(
    *, weights: str, variant: str, seed: int, ns: list, examples: int, root_seed: int
) -> dict:
    """Entry of rule ``training_retrieval_eval``: one checkpoint at every test n.

    The checkpoint (``weights``: its model.safetensors; config.json beside it) is checked first
    (:func:`attnscale.training.checkpoint.load`). The plain checkpoint is also evaluated as
    ``test_rule``. Returns ``metrics`` (per variant evaluated and n) and ``prediction`` (the
    theory's curves from the retrieval head's scores at the training n).
    """
    params, cfg, _, digest = checkpoint.load(
        Path(weights).parent / "config.json", R.ARCHITECTURE, variant=variant, seed=int(seed)
    )
    seed, trained = int(cfg["seed"]), cfg["variant"]
    head = evaluate.retrieval_head(
        params, cfg, job_rng(root_seed, spawn_key("training-retrieval-head", seed)), examples
    )
    dh = cfg["d"] // cfg["heads"]
    sample = evaluate.score_sample(
        params,
        cfg,
        job_rng(root_seed, spawn_key("training-retrieval-scores", seed)),
        examples,
        head,
    )
    records, pred = [], []
    for variant in [v for v in VARIANTS if TRAINED_AS[v] == trained]:
        for n in ns:
            rng = job_rng(root_seed, spawn_key("training-retrieval-test", seed, int(n)))
            m = evaluate.retrieval_metrics(params, cfg, variant, int(n), rng, examples, head)
            records.append({"variant": variant, "seed": seed, "n": int(n), "head": head, **m})
        prng = job_rng(root_seed, spawn_key("training-retrieval-theory", seed))
        for p in prediction.predict(
            sample["right"],
            sample["distractors"],
            variant,
            ns,
            dh,
            cfg["n_train"],
            params["s"][head : head + 1],
            prng,
        ):
            pred.append({"variant": variant, "seed": seed, **p})
    tail = prediction.tail_length(sample["right"], sample["distractors"])
    out = {"metrics": pd.DataFrame(records), "prediction": pd.DataFrame(pred)}
    for df in out.values():
        df["n_train"] = cfg["n_train"]
        df["n_tail"] = tail
        df["checkpoint_sha256"] = digest
        set_provenance(df, root_seed, only=("root_seed",))
    return with_job_provenance_all(out)


#: The retrieval metrics summarised over seeds and compared between variants.
METRICS = ["accuracy", "weight_right", "entropy", "gap", "weight_right_heads"]


def summarise_retrieval(*, metrics: list, prediction: list, curves: list) -> dict:
    """Entry of rule ``training_retrieval_summary``: ``summary`` (mean and SE over seeds per
    variant and n), ``comparisons`` (each variant against plain, paired by seed, Holm-corrected),
    ``theory`` (measured against predicted, per variant and n) and ``curves`` (the training
    curves, all variants and seeds). Every table keeps the checkpoints' SHA-256."""
    from attnscale.training.summary import comparisons, over_seeds

    M = pd.concat(metrics, ignore_index=True)
    P = pd.concat(prediction, ignore_index=True)
    n_train = int(M["n_train"].iloc[0])
    S = over_seeds(M, ["variant", "n"], METRICS + ["n_tail"])
    S["n_over_n_train"] = S["n"] / n_train
    C = comparisons(M, "n", ["accuracy", "weight_right"])
    both = M.merge(P, on=["variant", "seed", "n"], suffixes=("", "_p"))
    T = over_seeds(
        both,
        ["variant", "n"],
        ["accuracy", "weight_right", "accuracy_iid", "weight_iid", "weight_gap", "factor"],
    )
    sha = ";".join(sorted(M["checkpoint_sha256"].unique()))
    out = {"summary": S, "comparisons": C, "theory": T, "curves": pd.concat(curves)}
    for df in out.values():
        df["n_train"] = n_train
        df["checkpoint_sha256"] = sha
    return with_job_provenance_all(out)


def checkpoint_outputs(trained, seeds, cfg: dict, schedule, vocab: dict, variant: str, root_seed):
    """The outputs of a training job (docs/training.md#checkpoints): per seed, the checkpoint's
    files (:func:`attnscale.training.checkpoint.encode`) and its training curve, keyed
    ``{file}_{seed}``; the curve carries the checkpoint's SHA-256 and the root seed."""
    out = {}
    for seed, (final, curve) in zip(seeds, trained, strict=True):
        files = checkpoint.encode(final, {**cfg, "seed": int(seed), "schedule": schedule}, vocab)
        files["curve"] = pd.DataFrame(
            {
                "variant": variant,
                "seed": int(seed),
                "step": curve["step"],
                "loss": curve["loss"],
                "checkpoint_sha256": files["config"]["files"]["model.safetensors"],
                **provenance_columns(root_seed, None, {}, only=("root_seed",)),
            }
        )
        out.update({f"{k}_{seed}": v for k, v in files.items()})
    return out
