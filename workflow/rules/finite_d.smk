# Finite d (ours, issue 9; docs/finite-d.md): where the transition sits at finite (n, d), and the
# intermediate phase at low d. Rule files hold rules only: values come from CFG
# (src/attnscale/pipeline/config.py), each rule names its library function in params.entry.


rule finite_d_transition_points:
    """Simulated critical points beta*(n, d, rho) for one d and every n, rho: root of the mean
    self-weight = 1/2 over query rows and draws, common random numbers across beta and rho
    (docs/finite-d.md)."""
    input:
        lib=lib("experiments.finite_d"),
    output:
        csv="results/finite_d/transition/d{d}.csv",
    log:
        "logs/finite_d/transition/d{d}.log",
    benchmark:
        "benchmarks/finite_d/transition/d{d}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        # the query rows' score gaps of every draw and rho (float64) at the largest n, plus 500 MB
        mem_mb=500
        + 8e-6
        * 1.5
        * CFG.value("finite_d.transition.trials")
        * CFG.value("finite_d.transition.rows")
        * max(CFG.ints("finite_d.transition.n"))
        * len(CFG.grid("finite_d.transition.rho")),
        runtime=30,
    params:
        entry="experiments.finite_d:transition_points",
        n=CFG.ints("finite_d.transition.n"),
        d=lambda wc: int(wc.d),
        rho=CFG.grid("finite_d.transition.rho").tolist(),
        trials=CFG.value("finite_d.transition.trials"),
        rows=CFG.value("finite_d.transition.rows"),
        theory=CFG.get("finite_d.transition.theory_check"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule finite_d_transition_theory:
    """Finite-d theory of the transition: exact beta*, its approximations and asymptotes on an n
    grid, plus the read-off head (docs/finite-d.md)."""
    input:
        lib=lib("experiments.finite_d_theory"),
    output:
        csv="results/finite_d/transition_theory.csv",
    log:
        "logs/finite_d/transition_theory.log",
    benchmark:
        "benchmarks/finite_d/transition_theory.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        runtime=10,
    params:
        entry="experiments.finite_d_theory:transition_theory",
        n=CFG.grid("finite_d.transition.theory_n").tolist(),
        d=CFG.ints("finite_d.transition.d"),
        rho=CFG.grid("finite_d.transition.rho").tolist(),
        read_off=[
            [
                CFG.value("finite_d.transition.read_off.n"),
                CFG.value("finite_d.transition.read_off.d"),
            ]
        ],
    script:
        ENTRY


rule finite_d_transition_figure:
    """Figure (ours): gamma* = beta*(n, d) / ln n against n, theory lines and simulated points."""
    input:
        data=expand(
            rules.finite_d_transition_points.output.csv,
            d=CFG.ints("finite_d.transition.d"),
        ),
        theory=rules.finite_d_transition_theory.output.csv,
        # the regimes experiment's finite-d series to n = 1e6 (rule regimes_finite_d, included
        # after this file, hence the path)
        regimes="results/regimes/finite_d.csv",
        lib=lib("figures.finite_d"),
    output:
        png=report(
            "figures/finite_d/transition.png",
            caption="../report/finite_d_transition_figure.rst",
            category="Finite d",
            labels={"figure": "transition at finite d (ours)", "quantity": "gamma*"},
        ),
        pdf="figures/finite_d/transition.pdf",
    log:
        "logs/finite_d/transition.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.finite_d:plot_transition",
        caption=(
            "Lines: exact finite-d critical point, E A_ii = 1/2 by the Laplace route [our "
            "derivation]. Dashed: gamma_c = 1/(1 - rho), Paper A's ln n << d limit [paper]. "
            "Dotted (rho = 0): the n^{2/(d-1)} power law of the ln n >> d regime [our "
            "derivation], drawn where ln n >= d/2 [choice]. Bottom row: gamma*/gamma_c "
            "zoomed. Points: simulated beta* where the mean self-weight over "
            f"{CFG.value('finite_d.transition.rows')} query rows x "
            f"{CFG.value('finite_d.transition.trials')} Gaussian token draws equals 1/2 "
            "(common random numbers across beta), error bars 2 SE by the delta method over "
            "draws; sizes, draws and rows [choice]. Open diamonds (rho = 0): the regimes page's "
            "finite-d series, one query row of n tokens per context drawn through its "
            f"sufficient statistics, {CFG.value('regimes.finite_d.contexts')} contexts per n, "
            "2 SE [choice]. Star: read-off head "
            f"d = {CFG.value('finite_d.transition.read_off.d')}, "
            f"n = {CFG.value('finite_d.transition.read_off.n')} [choice]."
        ),
    script:
        ENTRY


rule finite_d_intermediate_rows:
    """N_eff, N_eff of the other keys and the 90 %-mass key count per cell of Figure 1's grid for
    one (n, d), from Figure 1's first token draws (docs/finite-d.md)."""
    input:
        draws=token_draws(CFG.value("finite_d.intermediate.trials")),
        lib=lib("experiments.finite_d"),
    output:
        csv="results/finite_d/intermediate/n{n}/d{d}.csv",
    log:
        "logs/finite_d/intermediate/n{n}/d{d}.log",
    benchmark:
        "benchmarks/finite_d/intermediate/n{n}/d{d}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        runtime=10,
    params:
        entry="experiments.finite_d:intermediate_phase",
        n=lambda wc: int(wc.n),
        d=lambda wc: int(wc.d),
        rho=CFG.grid("paper_a.rho").tolist(),
        gamma=CFG.grid("paper_a.gamma").tolist(),
        rows=CFG.value("finite_d.intermediate.rows"),
        mass=CFG.value("finite_d.intermediate.mass"),
        theory=CFG.get("finite_d.intermediate.theory_line"),
    script:
        ENTRY


rule finite_d_intermediate_figure:
    """Figure (ours): how many keys a query attends to over (rho, gamma), d = paper_a.d."""
    input:
        data=expand(
            rules.finite_d_intermediate_rows.output.csv,
            n=CFG.value("paper_a.n"),
            d=CFG.ints("paper_a.d"),
        ),
        lib=lib("figures.finite_d"),
    output:
        png=report(
            "figures/finite_d/intermediate.png",
            caption="../report/finite_d_intermediate_figure.rst",
            category="Finite d",
            labels={"figure": "intermediate phase (ours)", "quantity": "N_eff"},
        ),
        pdf="figures/finite_d/intermediate.pdf",
    log:
        "logs/finite_d/intermediate.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.finite_d:plot_intermediate",
        caption=(
            f"Means over {CFG.value('finite_d.intermediate.rows')} query rows x "
            f"{CFG.value('finite_d.intermediate.trials')} token draws (Figure 1's first draws) "
            f"per cell, n = {CFG.value('paper_a.n')} [choice]. Top: N_eff = 1/sum_j A_ij^2; "
            "middle: the same for the keys other than the query; bottom: keys holding "
            f"{CFG.value('finite_d.intermediate.mass'):.0%} of the mass [our measures]. "
            "Dashed: gamma_c = 1/(1 - rho) [paper]; solid: finite-d critical line gamma*(n, d, "
            "rho) [our derivation; d >= 3]; dotted: simulated mean A_ii = 1/2."
        ),
    script:
        ENTRY
