# Paper A, forward pass: Gaussian draws -> lambda grid -> Figure 1 and its theory check
# (docs/paper-a.md#the-angle-ratio-lambda). Rule files hold rules only: values come from CFG
# (src/attnscale/pipeline/config.py), each rule names its library function in params.entry.


rule paper_a_tokens:
    """Gaussian draw z_0, Z of one (n, d, trial); the tokens of every rho are built from it
    (common random numbers, docs/paper-a.md#gaussian-near-simplex-tokens)."""
    input:
        lib=lib("experiments.paper_a_tokens"),
    output:
        npz="results/paper_a/tokens/n{n}/d{d}/trial{trial}.npz",
    log:
        "logs/paper_a/tokens/n{n}/d{d}/trial{trial}.log",
    benchmark:
        "benchmarks/paper_a/tokens/n{n}/d{d}/trial{trial}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=500,
    params:
        entry="experiments.paper_a_tokens:draw_tokens",
        n=lambda wc: int(wc.n),
        d=lambda wc: int(wc.d),
        trial=lambda wc: int(wc.trial),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule paper_a_lambda:
    """lambda over the gamma grid and at gamma_c(rho_hat) for every draw of one (n, d) at a
    piece of the rho grid (paper_a.rho_per_job consecutive values); all rows or paper_a.rows
    sampled rows (docs/long-context.md#the-rows-choice)."""
    input:
        draws=cached_token_draws(CFG.value("paper_a.trials")),
        lib=lib("experiments.paper_a"),
    output:
        csv="results/paper_a/lambda/n{n}/d{d}/part{part}.csv",
    log:
        "logs/paper_a/lambda/n{n}/d{d}/part{part}.log",
    benchmark:
        "benchmarks/paper_a/lambda/n{n}/d{d}/part{part}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        entry="experiments.paper_a:lambda_rows",
        n=lambda wc: int(wc.n),
        d=lambda wc: int(wc.d),
        rhos=lambda wc: RHO_PARTS[int(wc.part)],
        gammas=CFG.grid("paper_a.gamma").tolist(),
        alpha=CFG.value("paper_a.alpha"),
        rows=CFG.get("paper_a.rows"),
        z0=CFG.get("paper_a.z0"),
        trials=CFG.value("paper_a.trials"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule paper_a_lambda_summary:
    """Figure-data tables: mean lambda per grid cell, and lambda at gamma_c per draw."""
    input:
        csvs=expand(
            rules.paper_a_lambda.output.csv,
            n=CFG.value("paper_a.n"),
            d=CFG.ints("paper_a.d"),
            part=range(len(RHO_PARTS)),
        ),
        lib=lib("experiments.paper_a"),
    output:
        figure1="results/paper_a/figure1_data.csv",
        critical="results/paper_a/lambda_critical_data.csv",
    log:
        "logs/paper_a/lambda_summary.log",
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=2000,
    params:
        entry="experiments.paper_a:lambda_summary",
    script:
        ENTRY


rule paper_a_finite_d_line:
    """The finite-d critical line gamma*(n, d, rho) drawn over Figures 1 and 2 (d >= 3)."""
    input:
        data=rules.paper_a_lambda_summary.output.figure1,
        lib=lib("experiments.finite_d_theory"),
    output:
        csv="results/paper_a/finite_d_line.csv",
    log:
        "logs/paper_a/finite_d_line.log",
    conda:
        "../../envs/environment.yaml"
    resources:
        runtime=10,
    params:
        entry="experiments.finite_d_theory:figure_line",
    script:
        ENTRY


rule paper_a_lambda_figure:
    """Figure 1: lambda heat maps over (rho, gamma), one panel per d."""
    input:
        data=rules.paper_a_lambda_summary.output.figure1,
        line=rules.paper_a_finite_d_line.output.csv,
        lib=lib("figures.paper_a"),
    output:
        png=report(
            "figures/paper_a/figure1_lambda.png",
            caption="../report/paper_a_lambda_figure.rst",
            category="Paper A",
            labels={"figure": "Figure 1", "quantity": "lambda"},
        ),
        pdf="figures/paper_a/figure1_lambda.pdf",
    log:
        "logs/paper_a/figure1.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_a:plot_figure1",
        caption=(
            f"Mean over {CFG.value('paper_a.trials')} token draws per cell; "
            f"n = {CFG.value('paper_a.n')}, {len(CFG.grid('paper_a.rho'))} x "
            f"{len(CFG.grid('paper_a.gamma'))} grid (rho linear, gamma log-spaced) [our choices: "
            "the paper's n and grid are unknown]. Near-simplex Gaussian tokens, z ~ N(0, I/d). "
            "Dashed: gamma = 1/(1 - rho) [paper]."
            f"{long_context_note()}"
        ),
    script:
        ENTRY


rule paper_a_grid_figure:
    """An observable of the registry on Figure 1's (rho, gamma) grid (ours; one per name of
    GRID_OBSERVABLES, docs/pipeline.md#the-observable-registry), one panel per d."""
    input:
        data=rules.paper_a_lambda_summary.output.figure1,
        line=rules.paper_a_finite_d_line.output.csv,
        lib=lib("figures.grid_observables"),
    output:
        png=report(
            "figures/paper_a/grid_{observable}.png",
            caption="../report/paper_a_grid_figure.rst",
            category="Paper A",
            labels={"figure": "Figure 1's grid (ours)", "quantity": "{observable}"},
        ),
        pdf="figures/paper_a/grid_{observable}.pdf",
    log:
        "logs/paper_a/grid_{observable}.log",
    wildcard_constraints:
        observable="|".join(GRID_OBSERVABLES) or "none",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.grid_observables:plot_grid_observable",
        observable=lambda w: w.observable,
        caption=(
            f"Mean over {CFG.value('paper_a.trials')} token draws per cell, the draws and grid of "
            f"Figure 1 (n = {CFG.value('paper_a.n')}), accumulated in the same key-tiled pass as "
            "lambda [ours]. Dashed: gamma = 1/(1 - rho) [paper]."
            f"{long_context_note()}"
        ),
    script:
        ENTRY


rule paper_a_critical_check_figure:
    """Theory check (ours): lambda at gamma_c(rho_hat) vs the limit and the finite-n simplex."""
    input:
        data=rules.paper_a_lambda_summary.output.critical,
        lib=lib("figures.paper_a"),
    output:
        png=report(
            "figures/paper_a/lambda_critical_check.png",
            caption="../report/paper_a_critical_check_figure.rst",
            category="Paper A",
            labels={"figure": "theory check (ours)", "quantity": "lambda at gamma_c"},
        ),
        pdf="figures/paper_a/lambda_critical_check.pdf",
    log:
        "logs/paper_a/critical_check.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_a:plot_critical_check",
        caption=(
            f"One point per token draw (n = {CFG.value('paper_a.n')}, "
            f"{CFG.value('paper_a.trials')} draws per rho), at gamma = gamma_c(rho_hat) with "
            "rho_hat the draw's realised mean cosine. Black: n -> inf limit 1/(1 + 3 rho) "
            "[paper]. Orange dashed: exact finite-n simplex map [our derivation]. Bottom: "
            "simulation minus finite-n simplex."
            f"{long_context_note()}"
        ),
    script:
        ENTRY


rule paper_a_z0_spread:
    """The draw-to-draw spread of the sampled lambda with the Gaussian z_0 and with
    ||z_0|| = 1, at one configured (n, d) (docs/long-context.md#variance-reduction)."""
    input:
        lib=lib("bench.long_context"),
    output:
        csv="results/paper_a/z0_spread/n{n}_d{d}.csv",
    log:
        "logs/paper_a/z0_spread/n{n}_d{d}.log",
    benchmark:
        "benchmarks/paper_a/z0_spread/n{n}_d{d}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=lambda wc: 600 + 32 * int(wc.n) * int(wc.d) // 10**6,
        runtime=15,
    params:
        entry="bench.long_context:z0_spread_table",
        n=lambda wc: int(wc.n),
        d=lambda wc: int(wc.d),
        rho=lambda wc: float(z0_spread_point(wc)["rho"]),
        gamma=lambda wc: [float(g) for g in z0_spread_point(wc)["gamma"]],
        draws=lambda wc: int(z0_spread_point(wc)["draws"]),
        rows=lambda wc: int(z0_spread_point(wc)["rows"]),
        root_seed=ROOT_SEED,
    script:
        ENTRY
