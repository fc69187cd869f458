# A real transformer on the phase diagram (ours, issue 36; docs/real-transformer.md): every head
# of a pretrained model, its critical multiplier s* and how it moves with n. The model and the
# text are checked when the first job of this family is scheduled, before any job runs
# (transformer_text, common.smk): without them only this family fails. Rule files hold rules
# only: values come from CFG, each rule names its library function in params.entry.


rule transformer_heads:
    """The forward pass of every window of n tokens once, then the phase curves of every head
    from the cached queries and keys (docs/real-transformer.md#the-probes)."""
    input:
        text=transformer_text,
        lib=lib("experiments.transformer"),
    output:
        npz="results/transformer/heads_n{n}.npz",
    log:
        "logs/transformer/heads_n{n}.log",
    benchmark:
        "benchmarks/transformer/heads_n{n}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        entry="experiments.transformer:head_phase",
        model=lambda wc: transformer_inputs()["model"],
        text_part=CFG.get("transformer.text_part"),
        n=lambda wc: int(wc.n),
        windows=CFG.value("transformer.windows"),
        rows=CFG.value("transformer.rows"),
        multipliers=CFG.grid("transformer.multipliers").tolist(),
        position_bands=CFG.value("transformer.position_bands"),
        position_band=CFG.value("transformer.position_band"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule transformer_global:
    """Every layer's scores multiplied by the same s, the forward pass rerun per s; each layer's
    lambda and rho_hat (docs/real-transformer.md#the-whole-model-scaled)."""
    input:
        text=transformer_text,
        lib=lib("experiments.transformer"),
    output:
        npz="results/transformer/global.npz",
    log:
        "logs/transformer/global.log",
    benchmark:
        "benchmarks/transformer/global.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        entry="experiments.transformer:global_scaling",
        model=lambda wc: transformer_inputs()["model"],
        text_part=CFG.get("transformer.text_part"),
        n=CFG.value("transformer.global.n"),
        windows=CFG.value("transformer.global.windows"),
        rows=CFG.value("transformer.rows"),
        multipliers=CFG.grid("transformer.global.multipliers").tolist(),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule transformer_summary:
    """Means over windows with block-bootstrap SEs, critical multipliers, the theory's
    predictions, s*(n) against the log n rule, the bootstrap's calibration (on generated
    series, and on disjoint parts of the text where transformer.calibration_parts is set)
    (docs/real-transformer.md#what-is-measured)."""
    input:
        heads=expand(rules.transformer_heads.output.npz, n=CFG.ints("transformer.n")),
        global_run=rules.transformer_global.output.npz,
        lib=lib("experiments.transformer_summary"),
    output:
        heads="results/transformer/heads.csv",
        curves="results/transformer/curves.csv",
        layers="results/transformer/layers.csv",
        global_="results/transformer/global.csv",
        calibration="results/transformer/bootstrap_calibration.csv",
        definitions="results/transformer/definitions.csv",
        positions="results/transformer/positions.csv",
        part_calibration="results/transformer/part_calibration.csv",
    log:
        "logs/transformer/summary.log",
    benchmark:
        "benchmarks/transformer/summary.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.transformer_summary:summaries",
        block=CFG.value("transformer.bootstrap.block"),
        resamples=CFG.value("transformer.bootstrap.resamples"),
        calibration_replicates=CFG.value("transformer.bootstrap.calibration_replicates"),
        n_ref=CFG.value("transformer.n_ref"),
        n_train=CFG.value("transformer.n_train"),
        position_band=CFG.value("transformer.position_band"),
        calibration_parts=CFG.value("transformer.calibration_parts"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule transformer_widths:
    """A head's transition width against the finite-d mean field's and the finite-n simplex's
    at the layer's rho_hat, one job per n (docs/real-transformer.md#the-width-against-the-theory).
    """
    input:
        heads=rules.transformer_summary.output.heads,
        definitions=rules.transformer_summary.output.definitions,
        lib=lib("experiments.transformer_widths"),
    output:
        table="results/transformer/widths_n{n}.csv",
    log:
        "logs/transformer/widths_n{n}.log",
    benchmark:
        "benchmarks/transformer/widths_n{n}.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.transformer_widths:widths",
        n=lambda wc: int(wc.n),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule transformer_widths_figure:
    """Plot: each layer's median width over the theory's, against n, for both theories and
    both dimensions."""
    input:
        widths=expand(
            rules.transformer_widths.output.table,
            n=CFG.get("transformer.widths_n") or CFG.ints("transformer.n"),
        ),
        lib=lib("figures.transformer"),
    output:
        png=report(
            "figures/transformer/widths.png",
            caption="../report/transformer_widths_figure.rst",
            category="A real transformer",
            labels={
                "figure": "transition widths against the theory (ours)",
                "quantity": "width in ln s",
            },
        ),
        pdf="figures/transformer/widths.pdf",
    log:
        "logs/transformer/widths_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.transformer:plot_widths",
        n_train=CFG.value("transformer.n_train"),
    script:
        ENTRY


rule transformer_phase_figure:
    """Plot: every head on the phase diagram (its trained scale over its critical multiplier,
    by layer, at each n) and s*(n) / s*(n_ref) against the log n rule."""
    input:
        heads=rules.transformer_summary.output.heads,
        lib=lib("figures.transformer"),
    output:
        png=report(
            "figures/transformer/phase.png",
            caption="../report/transformer_phase_figure.rst",
            category="A real transformer",
            labels={
                "figure": "heads on the phase diagram (ours)",
                "quantity": "1/s*, s*(n)",
            },
        ),
        pdf="figures/transformer/phase.pdf",
    log:
        "logs/transformer/phase_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.transformer:plot_phase",
        n_ref=CFG.value("transformer.n_ref"),
        n_train=CFG.value("transformer.n_train"),
    script:
        ENTRY


rule transformer_curves_figure:
    """Plot: lambda(s) / lambda(inf) of every head and the layer median with its band, per
    layer; the whole model scaled, each layer's lambda and rho_hat."""
    input:
        curves=rules.transformer_summary.output.curves,
        layers=rules.transformer_summary.output.layers,
        global_=rules.transformer_summary.output.global_,
        lib=lib("figures.transformer"),
    output:
        png=report(
            "figures/transformer/curves.png",
            caption="../report/transformer_curves_figure.rst",
            category="A real transformer",
            labels={
                "figure": "phase curves by layer (ours)",
                "quantity": "lambda(s), rho_hat",
            },
        ),
        pdf="figures/transformer/curves.pdf",
    log:
        "logs/transformer/curves_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.transformer:plot_curves",
        n=CFG.value("transformer.n_ref"),
    script:
        ENTRY
