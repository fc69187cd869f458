# What sets the order of the critical scale (ours, issue 20; docs/regimes.md): simulated and
# predicted beta*(n) for the gap, no-gap (REM), finite-d and near-tie regimes, the practical
# reading for one head, the summary table and one figure. Rule files hold rules only: values come
# from CFG (src/attnscale/pipeline/config.py), each rule names its library function in params.entry.


rule regimes_rem:
    """Simulated beta*(n) of the random-energy model: n i.i.d. Gaussian scores per query row,
    no self-score (docs/regimes.md#no-gap-the-random-energy-model)."""
    input:
        lib=lib("experiments.regimes_rem"),
    output:
        csv="results/regimes/rem.csv",
    log:
        "logs/regimes/rem.log",
    benchmark:
        "benchmarks/regimes/rem.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        # one query row's scores and a scratch buffer at the largest n, plus 500 MB
        mem_mb=500 + 3 * 8e-6 * max(CFG.grid("regimes.n")),
        runtime=15,
    params:
        entry="experiments.regimes_rem:rem_points",
        n=CFG.ints("regimes.n"),
        s=CFG.value("regimes.rem.s"),
        contexts=CFG.value("regimes.rem.contexts"),
        level=CFG.value("regimes.level"),
        grid_points=CFG.value("regimes.grid_points"),
        batches=CFG.value("regimes.batches"),
        truncation_eps=CFG.value("regimes.rem.truncation_eps"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule regimes_gap_ties:
    """Simulated beta*(n) of Paper A's Gaussian tokens at large d (gap regime) and of the same
    rows with n^kappa exact or noisy copies of the query (near-ties)
    (docs/regimes.md#gap-regime-paper-a, docs/regimes.md#near-ties)."""
    input:
        lib=lib("experiments.regimes_tokens"),
    output:
        csv="results/regimes/gap_ties.csv",
    log:
        "logs/regimes/gap_ties.log",
    benchmark:
        "benchmarks/regimes/gap_ties.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=500 + 6 * 8e-6 * max(CFG.grid("regimes.n")),
        runtime=15,
    params:
        entry="experiments.regimes_tokens:token_points",
        regime="gap",
        n=CFG.ints("regimes.n"),
        d=[CFG.value("regimes.gap.d")],
        rho=CFG.value("regimes.gap.rho"),
        contexts=CFG.value("regimes.gap.contexts"),
        level=CFG.value("regimes.level"),
        grid_points=CFG.value("regimes.grid_points"),
        batches=CFG.value("regimes.batches"),
        root_seed=ROOT_SEED,
        ties=[[t["kappa"], t["copy_noise"]] for t in CFG.get("regimes.ties")],
    script:
        ENTRY


rule regimes_ties_finite_d:
    """Simulated beta*(n) of the query alone and of the near-tie series again at small d, where
    the first-order group formula fails (docs/regimes.md#exact-finite-d-theory-for-k-copies).
    """
    input:
        lib=lib("experiments.regimes_tokens"),
    output:
        csv="results/regimes/ties_finite_d.csv",
    log:
        "logs/regimes/ties_finite_d.log",
    benchmark:
        "benchmarks/regimes/ties_finite_d.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=500 + 6 * 8e-6 * max(CFG.grid("regimes.n")),
        runtime=15,
    params:
        entry="experiments.regimes_tokens:token_points",
        regime="gap",
        label_d=True,
        n=CFG.ints("regimes.n"),
        d=CFG.ints("regimes.ties_finite_d.d"),
        rho=CFG.value("regimes.gap.rho"),
        contexts=CFG.value("regimes.ties_finite_d.contexts"),
        level=CFG.value("regimes.level"),
        grid_points=CFG.value("regimes.grid_points"),
        batches=CFG.value("regimes.batches"),
        root_seed=ROOT_SEED,
        ties=[[t["kappa"], t["copy_noise"]] for t in CFG.get("regimes.ties")],
    script:
        ENTRY


rule regimes_finite_d:
    """Simulated beta*(n) of Gaussian tokens at small d, where the log n scale ends
    (docs/regimes.md#finite-d-where-log-n-ends)."""
    input:
        lib=lib("experiments.regimes_tokens"),
    output:
        csv="results/regimes/finite_d.csv",
    log:
        "logs/regimes/finite_d.log",
    benchmark:
        "benchmarks/regimes/finite_d.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=500 + 6 * 8e-6 * max(CFG.grid("regimes.n")),
        runtime=15,
    params:
        entry="experiments.regimes_tokens:token_points",
        regime="finite_d",
        n=CFG.ints("regimes.n"),
        d=CFG.ints("regimes.finite_d.d"),
        rho=CFG.value("regimes.finite_d.rho"),
        contexts=CFG.value("regimes.finite_d.contexts"),
        level=CFG.value("regimes.level"),
        grid_points=CFG.value("regimes.grid_points"),
        batches=CFG.value("regimes.batches"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule regimes_read_off:
    """The practical reading simulated: one head with the exact near-ties around the number that
    lowers gamma* by the configured shift (docs/regimes.md#practical-reading)."""
    input:
        lib=lib("experiments.regimes_tokens"),
    output:
        csv="results/regimes/read_off_sim.csv",
    log:
        "logs/regimes/read_off_sim.log",
    benchmark:
        "benchmarks/regimes/read_off_sim.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=500 + 6 * 8e-6 * CFG.value("regimes.read_off.n"),
        runtime=10,
    params:
        entry="experiments.regimes_tokens:read_off_points",
        n=CFG.value("regimes.read_off.n"),
        d=CFG.value("regimes.read_off.d"),
        rho=CFG.value("regimes.read_off.rho"),
        shift=CFG.value("regimes.read_off.shift"),
        contexts=CFG.value("regimes.read_off.contexts"),
        level=CFG.value("regimes.level"),
        grid_points=CFG.value("regimes.grid_points"),
        batches=CFG.value("regimes.batches"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule regimes_theory:
    """Every prediction of the figure on a line grid and at the simulated points, the practical
    reading in theory and the REM's orders at a few n (docs/regimes.md)."""
    input:
        lib=lib("experiments.regimes_theory"),
    output:
        lines="results/regimes/theory.csv",
        read_off="results/regimes/read_off_theory.csv",
        rem_orders="results/regimes/rem_orders.csv",
    log:
        "logs/regimes/theory.log",
    benchmark:
        "benchmarks/regimes/theory.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        runtime=10,
    params:
        entry="experiments.regimes_theory:theory",
        n=CFG.ints("regimes.n"),
        theory_n=CFG.grid("regimes.theory_n").tolist(),
        gap_d=CFG.value("regimes.gap.d"),
        gap_rho=CFG.value("regimes.gap.rho"),
        ties=[[t["kappa"], t["copy_noise"]] for t in CFG.get("regimes.ties")],
        rem_s=CFG.value("regimes.rem.s"),
        fd_d=CFG.ints("regimes.finite_d.d"),
        fd_rho=CFG.value("regimes.finite_d.rho"),
        ties_d=CFG.ints("regimes.ties_finite_d.d"),
        level=CFG.value("regimes.level"),
        rem_orders_n=CFG.grid("regimes.rem_orders.n").tolist(),
        rem_orders_factors=CFG.grid("regimes.rem_orders.factors").tolist(),
        read_off={
            "n": CFG.value("regimes.read_off.n"),
            "d": CFG.value("regimes.read_off.d"),
            "rho": CFG.value("regimes.read_off.rho"),
            "shift": CFG.value("regimes.read_off.shift"),
            "copy_cosine": CFG.grid("regimes.read_off.copy_cosine").tolist(),
        },
    script:
        ENTRY


rule regimes_summary:
    """Summary: simulated and predicted beta*(n) side by side (tidy table behind the figure), the
    practical-reading table and the local exponent of the finite-d series
    (docs/regimes.md#results)."""
    input:
        simulations=[
            rules.regimes_gap_ties.output.csv,
            rules.regimes_finite_d.output.csv,
            rules.regimes_rem.output.csv,
            rules.regimes_ties_finite_d.output.csv,
        ],
        theory=rules.regimes_theory.output.lines,
        read_off_sim=rules.regimes_read_off.output.csv,
        read_off_theory=rules.regimes_theory.output.read_off,
        lib=lib("experiments.regimes_summary"),
    output:
        table="results/regimes/critical_scale.csv",
        read_off="results/regimes/read_off.csv",
        exponent="results/regimes/local_exponent.csv",
    log:
        "logs/regimes/table.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.regimes_summary:critical_scale_table",
    script:
        ENTRY


rule regimes_figure:
    """Figure (ours): beta*(n) of every regime, simulation against prediction."""
    input:
        table=rules.regimes_summary.output.table,
        read_off=rules.regimes_summary.output.read_off,
        exponent=rules.regimes_summary.output.exponent,
        lib=lib("figures.regimes"),
    output:
        png=report(
            "figures/regimes/critical_scale.png",
            caption="../report/regimes_figure.rst",
            category="Critical scale (ours)",
            labels={"figure": "critical-scale regimes (ours)", "quantity": "beta*(n)"},
        ),
        pdf="figures/regimes/critical_scale.pdf",
    log:
        "logs/regimes/figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.regimes:plot_regimes",
        caption=(
            "beta* is where the mean weight of the top group (the query and its copies; the top "
            "score in the REM) equals "
            f"{CFG.value('regimes.level')} [choice]. Points: simulation, one query row of n "
            "scores per context (gap/ties/finite d: Paper A's Gaussian tokens drawn through "
            "their sufficient statistics; REM: i.i.d. N(0, s^2) scores, no self-score), root of "
            "the Monte Carlo mean with common random numbers across beta, error bars 2 SE "
            "(delta method over contexts; panel e: paired over the same rows) [derived method]; "
            "contexts per n: gap/ties "
            f"{CFG.value('regimes.gap.contexts')}, finite d "
            f"{CFG.value('regimes.finite_d.contexts')}, near-ties at small d "
            f"{CFG.value('regimes.ties_finite_d.contexts')}, REM "
            f"{CFG.value('regimes.rem.contexts')} [choice]. Solid: exact finite-n predictions "
            "[derived]: finite-d theory of the self-weight (gap, finite d) and of k copies "
            "(near-ties), quadrature of E A_(1) (REM). Dashed: leading orders, Paper A's "
            "ln(n-1)/(1-rho) [paper] and ln((n-k)/k)/(1-rho), sqrt(2 ln n)/(alpha_c s) "
            "[derived]. Dash-dot-dot: first order in 1/d [derived], for finite d drawn to where "
            "it loses its root (grey dashed vertical; ln n / d = 1/2 in panel d). Loosely "
            "dotted and panel d: Paper B's power law with its constant [derived]. Panel f: the "
            "practical reading, a d = "
            f"{CFG.value('regimes.read_off.d')} head at n = {CFG.value('regimes.read_off.n')} "
            "[choice], k from the first-order group formula [derived], checked by simulation "
            "against the first-order and the exact theory; local exponents over the last decade."
        ),
    script:
        ENTRY
