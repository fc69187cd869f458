# Paper A: tokens -> lambda grid -> Figure 1 and its theory check.

PAPER_A_TARGETS = [
    "figures/paper_a/figure1_lambda.png",
    "figures/paper_a/figure1_lambda.pdf",
    "figures/paper_a/lambda_critical_check.png",
    "figures/paper_a/lambda_critical_check.pdf",
]


rule paper_a_tokens:
    """Near-simplex Gaussian tokens for one (n, d, rho, trial), spec paper-a.md §6."""
    input:
        lib=lib("tokens", "seeding", "io", "experiments.paper_a"),
    output:
        npz="results/paper_a/tokens/n{n}/d{d}/rho{rho}/trial{trial}.npz",
    log:
        "logs/paper_a/tokens/n{n}/d{d}/rho{rho}/trial{trial}.log",
    benchmark:
        "benchmarks/paper_a/tokens/n{n}/d{d}/rho{rho}/trial{trial}.tsv"
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        root_seed=ROOT_SEED,
    script:
        "../scripts/paper_a_tokens.py"


rule paper_a_lambda:
    """lambda over the gamma grid and at gamma_c(rho_hat) for every draw of one (n, d, rho)."""
    input:
        tokens=expand(
            "results/paper_a/tokens/n{{n}}/d{{d}}/rho{{rho}}/trial{trial}.npz",
            trial=PA_TRIALS,
        ),
        lib=lib("attention", "theory", "io", "experiments.paper_a", "validation"),
    output:
        csv="results/paper_a/lambda/n{n}/d{d}/rho{rho}.csv",
    log:
        "logs/paper_a/lambda/n{n}/d{d}/rho{rho}.log",
    benchmark:
        "benchmarks/paper_a/lambda/n{n}/d{d}/rho{rho}.tsv"
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        gammas=PA_GAMMA.tolist(),
        alpha=PA["alpha"],
    script:
        "../scripts/paper_a_lambda.py"


rule paper_a_lambda_summary:
    """Figure-data tables: mean lambda per grid cell, and lambda at gamma_c per draw."""
    input:
        csvs=paper_a_lambda_csvs,
        lib=lib("experiments.paper_a", "io"),
    output:
        figure1="results/paper_a/figure1_data.csv",
        critical="results/paper_a/lambda_critical_data.csv",
    log:
        "logs/paper_a/lambda_summary.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    script:
        "../scripts/paper_a_lambda_summary.py"


rule paper_a_figure1:
    """Figure 1: lambda heat maps over (rho, gamma), one panel per d."""
    input:
        data="results/paper_a/figure1_data.csv",
        lib=lib("figures.paper_a", "plotting"),
    output:
        png=report(
            "figures/paper_a/figure1_lambda.png",
            caption="../report/paper_a_figure1.rst",
            category="Paper A",
            labels={"figure": "Figure 1", "quantity": "lambda"},
        ),
        pdf="figures/paper_a/figure1_lambda.pdf",
    log:
        "logs/paper_a/figure1.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        caption=(
            f"Mean over {len(PA_TRIALS)} token draws per cell; n = {PA['n']}, "
            f"{len(PA_RHO)} x {len(PA_GAMMA)} grid (rho linear, gamma log-spaced) "
            "[our choices: the paper's n and grid are unknown]. Near-simplex Gaussian tokens, "
            "z ~ N(0, I/d). Dashed: gamma = 1/(1 - rho) [paper]."
        ),
    script:
        "../scripts/paper_a_figure1.py"


rule paper_a_critical_check:
    """Theory check (ours): lambda at gamma_c(rho_hat) vs the limit and the finite-n simplex."""
    input:
        data="results/paper_a/lambda_critical_data.csv",
        lib=lib("figures.paper_a", "plotting", "theory"),
    output:
        png=report(
            "figures/paper_a/lambda_critical_check.png",
            caption="../report/paper_a_critical_check.rst",
            category="Paper A",
            labels={"figure": "theory check (ours)", "quantity": "lambda at gamma_c"},
        ),
        pdf="figures/paper_a/lambda_critical_check.pdf",
    log:
        "logs/paper_a/critical_check.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        caption=(
            f"One point per token draw (n = {PA['n']}, {len(PA_TRIALS)} draws per rho), at "
            "gamma = gamma_c(rho_hat) with rho_hat the draw's realised mean cosine. Black: n -> inf "
            "limit 1/(1 + 3 rho) [paper]. Orange dashed: exact finite-n simplex map [our "
            "derivation]. Bottom: simulation minus finite-n simplex."
        ),
    script:
        "../scripts/paper_a_critical_check.py"
