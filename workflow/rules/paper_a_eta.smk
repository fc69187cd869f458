# Paper A, backward pass: Gaussian draws (rule paper_a_tokens) -> eta grid -> Figure 2; draws ->
# theorem table; draws -> finite-size check (docs/paper-a.md#the-jacobian-norm-eta).


rule paper_a_eta:
    """eta over the gamma grid and at gamma_c(rho_hat) for the Figure-2 draws of one (n, d) at a
    piece of the rho grid (paper_a.rho_per_job consecutive values)."""
    input:
        draws=cached_token_draws(CFG.value("paper_a.eta.trials")),
        lib=lib("experiments.paper_a_eta"),
    output:
        csv="results/paper_a/eta/n{n}/d{d}/part{part}.csv",
    log:
        "logs/paper_a/eta/n{n}/d{d}/part{part}.log",
    benchmark:
        "benchmarks/paper_a/eta/n{n}/d{d}/part{part}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=mem_mb_rows,
        runtime=15,
    params:
        entry="experiments.paper_a_eta:eta_rows",
        n=lambda wc: int(wc.n),
        d=lambda wc: int(wc.d),
        rhos=lambda wc: RHO_PARTS[int(wc.part)],
        gammas=CFG.grid("paper_a.gamma").tolist(),
        alpha=CFG.value("paper_a.alpha"),
        method=CFG.get("paper_a.eta.method"),
        probes=CFG.get("paper_a.eta.probes"),
        probe_kind=CFG.get("paper_a.eta.probe_kind"),
        root_seed=ROOT_SEED,
        rows=CFG.get("paper_a.rows"),
        z0=CFG.get("paper_a.z0"),
        trials=CFG.value("paper_a.eta.trials"),
    script:
        ENTRY


rule paper_a_eta_summary:
    """Figure-2 data (mean eta per grid cell) and eta at gamma_c per draw."""
    input:
        csvs=expand(
            rules.paper_a_eta.output.csv,
            n=CFG.value("paper_a.n"),
            d=CFG.ints("paper_a.d"),
            part=range(len(RHO_PARTS)),
        ),
        lib=lib("experiments.paper_a_eta"),
    output:
        figure2="results/paper_a/figure2_data.csv",
        critical="results/paper_a/eta_critical_data.csv",
    log:
        "logs/paper_a/eta_summary.log",
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=2000,
    params:
        entry="experiments.paper_a_eta:eta_summary",
    script:
        ENTRY


rule paper_a_eta_figure:
    """Figure 2: eta heat maps over (rho, gamma), one panel per d."""
    input:
        data=rules.paper_a_eta_summary.output.figure2,
        line=rules.paper_a_finite_d_line.output.csv,
        lib=lib("figures.paper_a_eta"),
    output:
        png=report(
            "figures/paper_a/figure2_eta.png",
            caption="../report/paper_a_eta_figure.rst",
            category="Paper A",
            labels={"figure": "Figure 2", "quantity": "eta"},
        ),
        pdf="figures/paper_a/figure2_eta.pdf",
    log:
        "logs/paper_a/figure2.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_a_eta:plot_figure2",
        caption=(
            "Colour: eta / [(1 - 1/d) mean_i 1/||x_i||^2], i.e. eta over the draw's "
            "super-critical limit (Theorem 2.4 at the realised norms), so the plateau 1 - 1/d "
            "reads 1 and the critical limit (1 - 1/d)/(4q) reads 1/4; values above 1.25 in "
            "magenta. Figure 1's tokens, "
            f"n = {CFG.value('paper_a.n')}, {len(CFG.grid('paper_a.rho'))} x "
            f"{len(CFG.grid('paper_a.gamma'))} grid [our choices]; the token draws per cell "
            "and how eta was computed in each panel (read from the table drawn) are stated "
            "at the end. Dashed: gamma = 1/(1 - rho) [paper]."
            f"{long_context_note()}"
        ),
    script:
        ENTRY


rule paper_a_theorem_rows:
    """Simulation beside theory at gamma = f gamma_c(rho_hat) for the draws of one (n, d, rho)."""
    input:
        draws=cached_token_draws(CFG.value("paper_a.theorem_table.trials")),
        lib=lib("experiments.paper_a_theorem"),
    output:
        csv="results/paper_a/theorem_table/n{n}/d{d}/rho{rho}.csv",
    log:
        "logs/paper_a/theorem_table/n{n}/d{d}/rho{rho}.log",
    benchmark:
        "benchmarks/paper_a/theorem_table/n{n}/d{d}/rho{rho}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=mem_mb_rows,
        runtime=15,
    params:
        entry="experiments.paper_a_theorem:theory_rows_all",
        n=lambda wc: int(wc.n),
        d=lambda wc: int(wc.d),
        rho=lambda wc: CFG.exact("paper_a.theorem_table.rho", wc.rho),
        gamma_factors=CFG.grid("paper_a.theorem_table.gamma_factors").tolist(),
        alphas=CFG.grid("paper_a.theorem_table.alpha").tolist(),
        rows=CFG.get("paper_a.rows"),
        z0=CFG.get("paper_a.z0"),
        trials=CFG.value("paper_a.theorem_table.trials"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule paper_a_theorem_table_summary:
    """Tidy theorem table: simulation mean +- SE, finite-n simplex value, limit, paired z."""
    input:
        csvs=expand(
            rules.paper_a_theorem_rows.output.csv,
            n=CFG.get("paper_a.theorem_table.n") or CFG.value("paper_a.n"),
            d=CFG.ints("paper_a.d"),
            rho=CFG.labels("paper_a.theorem_table.rho"),
        ),
        lib=lib("experiments.paper_a_theorem"),
    output:
        csv="results/paper_a/theorem_table.csv",
    log:
        "logs/paper_a/theorem_table_data.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.paper_a_theorem:theorem_table_data",
    script:
        ENTRY


rule paper_a_theorem_table_figure:
    """The theorem table rendered as a figure."""
    input:
        data=rules.paper_a_theorem_table_summary.output.csv,
        lib=lib("figures.paper_a_eta"),
    output:
        png=report(
            "figures/paper_a/theorem_table.png",
            caption="../report/paper_a_theorem_table_figure.rst",
            category="Paper A",
            labels={
                "figure": "theorem table (ours)",
                "quantity": "A_ii, cosine, lambda, eta",
            },
        ),
        pdf="figures/paper_a/theorem_table.pdf",
    log:
        "logs/paper_a/theorem_table.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_a_eta:plot_theorem_table",
        caption=(
            f"{CFG.value('paper_a.theorem_table.trials')} token draws per (d, rho), "
            f"n = {CFG.get('paper_a.theorem_table.n') or CFG.value('paper_a.n')}; "
            "gamma = f gamma_c(rho_hat) per draw. sim: mean +- SE "
            "over draws (<A_ii>: mean self-weight; cosine: mean <y_i', y_j'> over i != j; eta "
            "exact). simplex n: exact finite-n simplex value at the draw's rho_hat, q_hat [our "
            "derivation]. limit: n -> inf (Theorems 2.1, 2.4 [paper]; alpha > 0 and lambda "
            "forms [our derivation]). z: paired (sim - simplex n) / SE over draws; green "
            "|z| <= 2, orange otherwise."
            f"{long_context_note()}"
        ),
    script:
        ENTRY


use rule paper_a_theorem_rows as paper_a_finite_size_rows with:
    input:
        draws=token_draws(CFG.value("paper_a.finite_size.trials")),
        lib=lib("experiments.paper_a_theorem"),
    output:
        csv="results/paper_a/finite_size/n{n}/d{d}/rho{rho}.csv",
    log:
        "logs/paper_a/finite_size/n{n}/d{d}/rho{rho}.log",
    benchmark:
        "benchmarks/paper_a/finite_size/n{n}/d{d}/rho{rho}.tsv"
    resources:
        mem_mb=mem_mb_dense,
        runtime=15,
    params:
        entry="experiments.paper_a_theorem:theory_rows_all",
        n=lambda wc: int(wc.n),
        d=lambda wc: int(wc.d),
        rho=lambda wc: CFG.exact("paper_a.finite_size.rho", wc.rho),
        gamma_factors=[1.0],
        alphas=CFG.grid("paper_a.finite_size.alpha").tolist(),
        rows="all",
        z0="gaussian",
        trials=CFG.value("paper_a.finite_size.trials"),


rule paper_a_finite_size_summary:
    """Tidy finite-size table (the theorem table of the finite-size draws)."""
    input:
        csvs=expand(
            rules.paper_a_finite_size_rows.output.csv,
            n=CFG.ints("paper_a.finite_size.n"),
            d=CFG.ints("paper_a.d"),
            rho=CFG.labels("paper_a.finite_size.rho"),
        ),
        lib=lib("experiments.paper_a_theorem"),
    output:
        csv="results/paper_a/finite_size_data.csv",
    log:
        "logs/paper_a/finite_size_data.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.paper_a_theorem:theorem_table_data",
    script:
        ENTRY


rule paper_a_finite_size_figure:
    """Finite-size panel: critical values against n with their limits, per d."""
    input:
        data=rules.paper_a_finite_size_summary.output.csv,
        lib=lib("figures.paper_a_eta"),
    output:
        png=report(
            "figures/paper_a/finite_size.png",
            caption="../report/paper_a_finite_size_figure.rst",
            category="Paper A",
            labels={
                "figure": "finite-size check (ours)",
                "quantity": "critical values",
            },
        ),
        pdf="figures/paper_a/finite_size.pdf",
    log:
        "logs/paper_a/finite_size.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_a_eta:plot_finite_size",
        caption=(
            f"{CFG.value('paper_a.finite_size.trials')} token draws per (n, d, rho) at "
            "gamma = gamma_c(rho_hat); points: mean +- SE over draws; dashed: exact finite-n "
            "simplex value at the draws' rho_hat, q_hat [our derivation]; dotted: n -> inf "
            "limit (Theorems 2.1, 2.4 [paper]; A_ii -> 1/2 [paper]; lambda [our derivation]). "
            "eta exact (block formula)."
        ),
    script:
        ENTRY
