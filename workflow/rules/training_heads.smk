# The trained retrieval layer's heads on the phase diagram (ours, issue 44;
# docs/training.md#the-retrieval-heads-on-the-phase-diagram): the transformer family's
# multiplier probes and the learned-score theory's gamma_c_eff ln n on every retrieval
# checkpoint. Rule files hold rules only: values come from CFG, each rule names its library
# function in params.entry. Reads the checkpoints of training.smk; trains nothing.


rule training_retrieval_probes:
    """Every seed's checkpoint of one trained retrieval variant (hashes checked first): per
    variant evaluated, test n and head, lambda(s), s* under Paper A's and the normalised lambda,
    and gamma_c_eff ln n (docs/training.md#the-retrieval-heads-on-the-phase-diagram)."""
    input:
        weights=expand(
            f"{RETRIEVAL_DIR}/model.safetensors",
            seed=RETRIEVAL_SEEDS,
            allow_missing=True,
        ),
        lib=lib("experiments.training_retrieval_probes"),
    output:
        heads="results/training/retrieval/{variant}/probes.csv",
        curves="results/training/retrieval/{variant}/probe_curves.csv",
    log:
        "logs/training/retrieval_probes_{variant}.log",
    benchmark:
        "benchmarks/training/retrieval_probes_{variant}.tsv"
    wildcard_constraints:
        variant="plain|rule|learned",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.training_retrieval_probes:probe_retrieval",
        variant=lambda wc: wc.variant,
        seeds=RETRIEVAL_SEEDS,
        ns=CFG.ints("training.retrieval.test_n"),
        contexts=CFG.value("training.retrieval.probes.contexts"),
        rows=CFG.value("training.retrieval.probes.rows"),
        multipliers=CFG.grid("training.retrieval.probes.multipliers").tolist(),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule training_retrieval_probes_summary:
    """Per variant and n, the retrieval head's and all heads' s*(n)/s*(n_train) and
    gamma_c_eff ln n, means and SEs over seeds; the trained scale against the critical one at
    n_train, retrieval and language model (docs/training.md#is-the-trained-scale-critical).
    """
    input:
        heads=expand(
            rules.training_retrieval_probes.output.heads, variant=TRAINED_VARIANTS
        ),
        curves=expand(
            rules.training_retrieval_probes.output.curves, variant=TRAINED_VARIANTS
        ),
        lm_heads=rules.training_lm_probes_summary.output.heads,
        lib=lib("experiments.training_retrieval_probes"),
    output:
        summary="results/training/retrieval/probes_summary.csv",
        seeds="results/training/retrieval/probes_seeds.csv",
        heads="results/training/retrieval/probes_heads.csv",
        curves="results/training/retrieval/probes_curves.csv",
        critical="results/training/critical.csv",
    log:
        "logs/training/retrieval_probes_summary.log",
    benchmark:
        "benchmarks/training/retrieval_probes_summary.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.training_retrieval_probes:summarise_retrieval_probes",
    script:
        ENTRY


rule training_heads_figure:
    """Plot: the retrieval head's s*(n)/s*(n_train) under both definitions and the
    effective-score gamma_c_eff ln n against n / n_train per variant with SE bands; the trained
    scale against the critical one at n_train, retrieval and language model."""
    input:
        summary=rules.training_retrieval_probes_summary.output.summary,
        critical=rules.training_retrieval_probes_summary.output.critical,
        lib=lib("figures.training_heads"),
    output:
        png=report(
            "figures/training/heads.png",
            caption="../report/training_heads_figure.rst",
            category="Trained models",
            labels={
                "figure": "trained retrieval heads on the phase diagram (ours)",
                "quantity": "s*(n), gamma_c_eff ln n per variant",
            },
        ),
        pdf="figures/training/heads.pdf",
    log:
        "logs/training/heads_figure.log",
    benchmark:
        "benchmarks/training/heads_figure.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.training_heads:plot_heads",
    script:
        ENTRY
