# Learned query-key matrices, an attention sink and depth in Paper A's layer (ours, issue 10
# items 3-5; docs/realistic-attention.md). One compute job per token draw, one plot per question.


rule realistic_learned_qk:
    """One layer with scores beta <W y_i, y_j> for W = I, I + epsilon G and (d/r) U U^T, one
    draw (docs/realistic-attention.md#learned-query-key-matrix)."""
    input:
        lib=lib("experiments.realistic"),
    output:
        curves="results/realistic/learned_qk/trial{trial}_curves.csv",
        critical="results/realistic/learned_qk/trial{trial}_critical.csv",
    log:
        "logs/realistic/learned_qk/trial{trial}.log",
    benchmark:
        "benchmarks/realistic/learned_qk/trial{trial}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=1500,
        runtime=10,
    params:
        entry="experiments.realistic:learned_qk",
        n=CFG.value("realistic.learned_qk.n"),
        d=CFG.value("realistic.learned_qk.d"),
        rho=CFG.value("realistic.learned_qk.rho"),
        gammas=CFG.grid("realistic.learned_qk.gamma").tolist(),
        epsilons=CFG.grid("realistic.learned_qk.epsilon").tolist(),
        ranks=CFG.ints("realistic.learned_qk.rank"),
        trial=lambda wc: int(wc.trial),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule realistic_learned_qk_figure:
    """Plot: self-weight and lambda against gamma per W, simulated vs predicted critical gamma."""
    input:
        curves=expand(
            rules.realistic_learned_qk.output.curves,
            trial=range(CFG.value("realistic.learned_qk.trials")),
        ),
        critical=expand(
            rules.realistic_learned_qk.output.critical,
            trial=range(CFG.value("realistic.learned_qk.trials")),
        ),
        lib=lib("figures.realistic"),
    output:
        png=report(
            "figures/realistic/learned_qk.png",
            caption="../report/realistic_learned_qk_figure.rst",
            category="Realistic attention",
            labels={"figure": "learned Q^T K (ours)", "quantity": "A_ii, lambda"},
        ),
        pdf="figures/realistic/learned_qk.pdf",
    log:
        "logs/realistic/learned_qk_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.realistic:plot_learned_qk",
        caption=(
            f"n = {CFG.value('realistic.learned_qk.n')}, d = "
            f"{CFG.value('realistic.learned_qk.d')}, rho = "
            f"{CFG.value('realistic.learned_qk.rho')}, "
            f"{CFG.value('realistic.learned_qk.trials')} token draws shared by every W (lines: "
            "mean, band: SE) [choice]. G = (H + H^T)/sqrt(2d), spectral radius 2 [choice]; "
            "W = (d/r) U U^T keeps E<W y, y> = 1 [choice]. Dashed: simplex with the effective "
            "scores s_self, s_cross of each draw; x: gamma_c,eff = 1/(s_self - s_cross); "
            "triangle: with the within-row score spread sigma, first root of beta (s_self - "
            "s_cross) = ln(n-1) + beta^2 sigma^2/2 [derived]; circle: simulated mean A_ii = 1/2. "
            "An arrow at the right edge: no transition (no root / no crossing up to gamma = 64)."
        ),
    script:
        ENTRY


rule realistic_sink:
    """n - 1 near-simplex tokens and a sink in position 1 over a (c_s, kappa) grid, one draw
    (docs/realistic-attention.md#attention-sink)."""
    input:
        lib=lib("experiments.realistic"),
    output:
        curves="results/realistic/sink/trial{trial}_curves.csv",
        critical="results/realistic/sink/trial{trial}_critical.csv",
    log:
        "logs/realistic/sink/trial{trial}.log",
    benchmark:
        "benchmarks/realistic/sink/trial{trial}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=1500,
        runtime=10,
    params:
        entry="experiments.realistic:attention_sink",
        n=CFG.value("realistic.sink.n"),
        d=CFG.value("realistic.sink.d"),
        rho=CFG.value("realistic.sink.rho"),
        gammas=CFG.grid("realistic.sink.gamma").tolist(),
        c_s=CFG.grid("realistic.sink.c_s").tolist(),
        kappa=CFG.grid("realistic.sink.kappa").tolist(),
        trial=lambda wc: int(wc.trial),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule realistic_sink_summary:
    """Figure data of the sink figure: self-weight and sink mass averaged over draws, and the
    simplex-with-sink theory lines at the draws' mean rho_hat
    (docs/realistic-attention.md#attention-sink)."""
    input:
        curves=expand(
            rules.realistic_sink.output.curves,
            trial=range(CFG.value("realistic.sink.trials")),
        ),
        critical=expand(
            rules.realistic_sink.output.critical,
            trial=range(CFG.value("realistic.sink.trials")),
        ),
        lib=lib("experiments.realistic_summaries"),
    output:
        curves="results/realistic/sink_curves_summary.csv",
        theory="results/realistic/sink_theory.csv",
    log:
        "logs/realistic/sink_summary.log",
    benchmark:
        "benchmarks/realistic/sink_summary.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.realistic_summaries:sink_figure_data",
    script:
        ENTRY


rule realistic_sink_figure:
    """Plot: sink mass at gamma_c, the critical line against kappa c_s, weights against gamma."""
    input:
        curves=rules.realistic_sink_summary.output.curves,
        theory=rules.realistic_sink_summary.output.theory,
        critical=rules.realistic_sink_summary.input.critical,
        lib=lib("figures.realistic"),
    output:
        png=report(
            "figures/realistic/sink.png",
            caption="../report/realistic_sink_figure.rst",
            category="Realistic attention",
            labels={
                "figure": "attention sink (ours)",
                "quantity": "sink mass, critical gamma",
            },
        ),
        pdf="figures/realistic/sink.pdf",
    log:
        "logs/realistic/sink_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.realistic:plot_sink",
        caption=(
            f"n = {CFG.value('realistic.sink.n')} tokens including the sink, d = "
            f"{CFG.value('realistic.sink.d')}, rho = {CFG.value('realistic.sink.rho')}, "
            f"{CFG.value('realistic.sink.trials')} draw(s); the sink's direction has mean "
            "cosine exactly c_s with the other tokens, its key is scaled by kappa, its value is "
            "its unit direction, its norm the tokens' rms norm (irrelevant at alpha = 0) "
            "[choice]. Lines: exact finite-n simplex with sink at rho_hat [derived]; dotted: "
            "with the within-row score spread sigma [derived]. The critical line depends on "
            "kappa c_s only; for kappa c_s >= 1 the self-weight never reaches 1/2."
        ),
    script:
        ENTRY


rule realistic_depth:
    """The layer iterated L times at f gamma_c(rho_hat_0), alpha = 0 and 1, one draw, with the
    iterated finite-n simplex map (docs/realistic-attention.md#depth)."""
    input:
        lib=lib("experiments.realistic"),
    output:
        csv="results/realistic/depth/trial{trial}.csv",
    log:
        "logs/realistic/depth/trial{trial}.log",
    benchmark:
        "benchmarks/realistic/depth/trial{trial}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=1500,
        runtime=10,
    params:
        entry="experiments.realistic:depth_iteration",
        n=CFG.value("realistic.depth.n"),
        d=CFG.value("realistic.depth.d"),
        rho=CFG.value("realistic.depth.rho"),
        gamma_factors=CFG.grid("realistic.depth.gamma_factors").tolist(),
        alphas=CFG.grid("realistic.depth.alpha").tolist(),
        layers=CFG.value("realistic.depth.layers"),
        trial=lambda wc: int(wc.trial),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule realistic_depth_summary:
    """Figure data of the depth figure: per (alpha, f, layer) the mean and SE over draws
    of 1 - rho_l and lambda_l, simulated and simplex
    (docs/realistic-attention.md#depth)."""
    input:
        data=expand(
            rules.realistic_depth.output.csv,
            trial=range(CFG.value("realistic.depth.trials")),
        ),
        lib=lib("experiments.realistic_summaries"),
    output:
        csv="results/realistic/depth_summary.csv",
    log:
        "logs/realistic/depth_summary.log",
    benchmark:
        "benchmarks/realistic/depth_summary.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.realistic_summaries:depth_summary",
    script:
        ENTRY


rule realistic_depth_figure:
    """Plot: 1 - rho_l and lambda_l against the layer, simulation vs iterated simplex map."""
    input:
        data=rules.realistic_depth_summary.output.csv,
        lib=lib("figures.realistic"),
    output:
        png=report(
            "figures/realistic/depth.png",
            caption="../report/realistic_depth_figure.rst",
            category="Realistic attention",
            labels={"figure": "depth (ours)", "quantity": "1 - rho_l, lambda_l"},
        ),
        pdf="figures/realistic/depth.pdf",
    log:
        "logs/realistic/depth_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.realistic:plot_depth",
        caption=(
            f"n = {CFG.value('realistic.depth.n')}, d = {CFG.value('realistic.depth.d')}, "
            f"rho = {CFG.value('realistic.depth.rho')}, "
            f"{CFG.value('realistic.depth.trials')} draw(s), L = "
            f"{CFG.value('realistic.depth.layers')} layers with the same beta = f "
            "gamma_c(rho_hat_0) ln n, pre-LN at every layer [choice]. Markers: simulation "
            "(mean over draws); lines: the exact finite-n simplex map iterated on (1 - rho, q) "
            "from the draw's (rho_hat_0, q_hat_0) [derived]. Below 1 - rho = 1e-24 (grey) the "
            "simulated tokens have collapsed to float64 rounding and later layers are not run."
        ),
    script:
        ENTRY
