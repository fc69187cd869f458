# Does the log n rule help a trained model? (ours, issue 44; docs/training.md): attention models
# trained with and without Paper A's rule, tested far beyond their training length. Rule files
# hold rules only: values come from CFG, each rule names its library function in params.entry.
# The training jobs need JAX and optax (the pinned [jax] extra); they say so if missing.

TRAINED_VARIANTS = ["plain", "rule", "learned"]
RETRIEVAL_SEEDS = list(range(CFG.value("training.retrieval.seeds")))
RETRIEVAL_DIR = "results/training/retrieval/{variant}/seed{seed}"
# the files of one checkpoint (and its training curve), named kind_seed in a training rule
CHECKPOINT_FILES = {
    "model": "model.safetensors",
    "config": "config.json",
    "vocab": "vocab.json",
    "curve": "curve.csv",
}


rule training_retrieval_train:
    """Train one variant of the retrieval model at every seed (same initial weights and data
    order for every variant, one compilation per job); the loss every log_every steps goes to
    the log (docs/training.md#training)."""
    input:
        lib=lib("experiments.training", "training.trainer"),
    output:
        **{
            f"{k}_{s}": f"results/training/retrieval/{{variant}}/seed{s}/{f}"
            for s in RETRIEVAL_SEEDS
            for k, f in CHECKPOINT_FILES.items()
        },
    log:
        "logs/training/retrieval_{variant}.log",
    benchmark:
        "benchmarks/training/retrieval_{variant}.tsv"
    wildcard_constraints:
        variant="plain|rule|learned",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.training:train_retrieval",
        variant=lambda wc: wc.variant,
        seeds=RETRIEVAL_SEEDS,
        root_seed=ROOT_SEED,
        model=lambda wc: {
            k: CFG.value(f"training.retrieval.{k}")
            for k in ("d", "heads", "keys", "values", "n_min", "n_train")
        },
        schedule=lambda wc: {
            k: CFG.value(f"training.retrieval.{k}")
            for k in ("steps", "batch", "lr", "warmup", "weight_decay", "log_every")
        },
    script:
        ENTRY


rule training_retrieval_eval:
    """One checkpoint (hashes checked first) at every test n: accuracy, right-key weight,
    entropy, score gap, and the theory's prediction from its scores at the training n
    (docs/training.md#what-is-measured)."""
    input:
        weights=f"{RETRIEVAL_DIR}/model.safetensors",
        lib=lib("experiments.training"),
    output:
        metrics=f"{RETRIEVAL_DIR}/metrics.csv",
        prediction=f"{RETRIEVAL_DIR}/prediction.csv",
    log:
        "logs/training/retrieval_eval_{variant}_seed{seed}.log",
    wildcard_constraints:
        variant="plain|rule|learned",
        seed=r"\d+",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.training:evaluate_retrieval",
        variant=lambda wc: wc.variant,
        seed=lambda wc: int(wc.seed),
        ns=CFG.ints("training.retrieval.test_n"),
        examples=CFG.value("training.retrieval.examples"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule training_retrieval_summary:
    """Means and SEs over seeds, every variant against plain (paired by seed, Holm-corrected),
    the theory against the measurement (docs/training.md#statistics)."""
    input:
        metrics=expand(
            rules.training_retrieval_eval.output.metrics,
            variant=TRAINED_VARIANTS,
            seed=RETRIEVAL_SEEDS,
        ),
        prediction=expand(
            rules.training_retrieval_eval.output.prediction,
            variant=TRAINED_VARIANTS,
            seed=RETRIEVAL_SEEDS,
        ),
        curves=expand(
            f"{RETRIEVAL_DIR}/curve.csv",
            variant=TRAINED_VARIANTS,
            seed=RETRIEVAL_SEEDS,
        ),
        lib=lib("experiments.training"),
    output:
        summary="results/training/retrieval/summary.csv",
        comparisons="results/training/retrieval/comparisons.csv",
        theory="results/training/retrieval/theory.csv",
        curves="results/training/retrieval/curves.csv",
    log:
        "logs/training/retrieval_summary.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.training:summarise_retrieval",
    script:
        ENTRY


rule training_retrieval_figure:
    """Plot: accuracy and right-key weight against n / n_train per variant with SE bands and the
    theory's curves; the training curves."""
    input:
        summary=rules.training_retrieval_summary.output.summary,
        theory=rules.training_retrieval_summary.output.theory,
        curves=rules.training_retrieval_summary.output.curves,
        lib=lib("figures.training"),
    output:
        png=report(
            "figures/training/retrieval.png",
            caption="../report/training_retrieval_figure.rst",
            category="Trained models",
            labels={
                "figure": "retrieval beyond the training length (ours)",
                "quantity": "accuracy, right-key weight",
            },
        ),
        pdf="figures/training/retrieval.pdf",
    log:
        "logs/training/retrieval_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.training:plot_retrieval",
    script:
        ENTRY


LM_SEEDS = list(range(CFG.value("training.lm.seeds")))
LM_DIR = "results/training/lm/{variant}/seed{seed}"
# the language model's text: its own file, or the transformer family's corpus
LM_TEXT = CFG.get("training.lm.text") or CFG.get("transformer.text")
LM_TEXT_PART = None if CFG.get("training.lm.text") else CFG.get("transformer.text_part")


rule training_lm_train:
    """Train one variant of the causal character-level decoder at every seed (same initial
    weights and windows for every variant); the loss every log_every steps goes to the log
    (docs/training.md#language-model)."""
    input:
        text=LM_TEXT,
        lib=lib("experiments.training_lm", "training.trainer"),
    output:
        **{
            f"{k}_{s}": f"results/training/lm/{{variant}}/seed{s}/{f}"
            for s in LM_SEEDS
            for k, f in CHECKPOINT_FILES.items()
        },
    log:
        "logs/training/lm_{variant}.log",
    benchmark:
        "benchmarks/training/lm_{variant}.tsv"
    wildcard_constraints:
        variant="plain|rule|learned",
    conda:
        "../../envs/environment.yaml"
    resources:
        runtime=30,
    params:
        entry="experiments.training_lm:train_lm",
        variant=lambda wc: wc.variant,
        seeds=LM_SEEDS,
        root_seed=ROOT_SEED,
        text_part=LM_TEXT_PART,
        heldout=CFG.value("training.lm.heldout"),
        model=lambda wc: {
            k: CFG.value(f"training.lm.{k}")
            for k in ("d", "heads", "layers", "context")
        },
        schedule=lambda wc: {
            k: CFG.value(f"training.lm.{k}")
            for k in ("steps", "batch", "lr", "warmup", "weight_decay", "log_every")
        },
    script:
        ENTRY


rule training_lm_eval:
    """One language-model checkpoint (hashes checked first): the loss per position band on
    held-out windows up to length_factor times the training context."""
    input:
        weights=f"{LM_DIR}/model.safetensors",
        text=LM_TEXT,
        lib=lib("experiments.training_lm"),
    output:
        loss=f"{LM_DIR}/loss.csv",
    log:
        "logs/training/lm_eval_{variant}_seed{seed}.log",
    wildcard_constraints:
        variant="plain|rule|learned",
        seed=r"\d+",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.training_lm:evaluate_lm",
        variant=lambda wc: wc.variant,
        seed=lambda wc: int(wc.seed),
        text_part=LM_TEXT_PART,
        heldout=CFG.value("training.lm.heldout"),
        windows=CFG.value("training.lm.windows"),
        length_factor=CFG.value("training.lm.length_factor"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule training_lm_summary:
    """Loss per position band, mean and SE over seeds; each variant against plain (paired by
    seed, Holm-corrected); the training curves."""
    input:
        losses=expand(f"{LM_DIR}/loss.csv", variant=TRAINED_VARIANTS, seed=LM_SEEDS),
        curves=expand(f"{LM_DIR}/curve.csv", variant=TRAINED_VARIANTS, seed=LM_SEEDS),
        lib=lib("experiments.training_lm"),
    output:
        summary="results/training/lm/summary.csv",
        comparisons="results/training/lm/comparisons.csv",
        curves="results/training/lm/curves.csv",
    log:
        "logs/training/lm_summary.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.training_lm:summarise_lm",
    script:
        ENTRY


rule training_lm_figure:
    """Plot: the language model's loss per position band against position / training context
    per variant with SE bands; the training curves."""
    input:
        summary=rules.training_lm_summary.output.summary,
        curves=rules.training_lm_summary.output.curves,
        lib=lib("figures.training"),
    output:
        png=report(
            "figures/training/lm.png",
            caption="../report/training_lm_figure.rst",
            category="Trained models",
            labels={
                "figure": "language model beyond the training context (ours)",
                "quantity": "loss per position",
            },
        ),
        pdf="figures/training/lm.pdf",
    log:
        "logs/training/lm_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.training:plot_lm",
    script:
        ENTRY


rule training_lm_probes:
    """The transformer family's multiplier probes on one language-model checkpoint (hashes
    checked first), through the decoder adapter: per layer, head and position band, lambda(s)
    and s* under Paper A's and the normalised lambda
    (docs/training.md#the-trained-heads-on-the-phase-diagram)."""
    input:
        weights=f"{LM_DIR}/model.safetensors",
        text=LM_TEXT,
        lib=lib("experiments.training_probes"),
    output:
        heads=f"{LM_DIR}/probes.csv",
        curves=f"{LM_DIR}/probe_curves.csv",
    log:
        "logs/training/lm_probes_{variant}_seed{seed}.log",
    wildcard_constraints:
        variant="plain|rule|learned",
        seed=r"\d+",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.training_probes:probe_lm",
        variant=lambda wc: wc.variant,
        seed=lambda wc: int(wc.seed),
        text_part=LM_TEXT_PART,
        heldout=CFG.value("training.lm.heldout"),
        windows=CFG.value("training.lm.probes.windows"),
        length_factor=CFG.value("training.lm.length_factor"),
        rows=CFG.value("training.lm.probes.rows"),
        multipliers=CFG.grid("training.lm.probes.multipliers").tolist(),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule training_lm_probes_summary:
    """Every probed head with s*(n)/s*(n_train); per variant and band the median and quartiles
    over heads and seeds, per definition of lambda."""
    input:
        heads=expand(f"{LM_DIR}/probes.csv", variant=TRAINED_VARIANTS, seed=LM_SEEDS),
        curves=expand(
            f"{LM_DIR}/probe_curves.csv", variant=TRAINED_VARIANTS, seed=LM_SEEDS
        ),
        lib=lib("experiments.training_probes"),
    output:
        summary="results/training/lm/probes_summary.csv",
        heads="results/training/lm/probes_heads.csv",
        curves="results/training/lm/probes_curves.csv",
    log:
        "logs/training/lm_probes_summary.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.training_probes:summarise_probes",
    script:
        ENTRY


rule training_lm_probes_figure:
    """Plot: s*(n)/s*(n_train) of the trained heads against n / n_train per variant, under the
    normalised and Paper A's lambda, and the median s*(n)."""
    input:
        summary=rules.training_lm_probes_summary.output.summary,
        lib=lib("figures.training"),
    output:
        png=report(
            "figures/training/probes.png",
            caption="../report/training_lm_probes_figure.rst",
            category="Trained models",
            labels={
                "figure": "trained heads on the phase diagram (ours)",
                "quantity": "s*(n) per variant",
            },
        ),
        pdf="figures/training/probes.pdf",
    log:
        "logs/training/lm_probes_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.training:plot_probes",
    script:
        ENTRY
