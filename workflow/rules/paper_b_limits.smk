# Paper B limit laws checked by simulation (ours; docs/paper-b.md,
# docs/paper-b-beyond.md#critical-output-law): the law of A_(1) and of the nearest key at the
# critical scale, the heat-equation drift, and the critical output law (marked Poisson). Rule
# files hold rules only: values come from CFG, each rule names its library function in
# params.entry.


# --------------------------------------------------------------------------- critical laws
rule paper_b_critical_laws:
    """Law of A_(1) at beta = gamma n^alpha and of n^alpha T_(1) for growing n (ours)."""
    input:
        lib=lib("experiments.paper_b_laws"),
    output:
        ecdf="results/paper_b/critical_laws/d{d}_ecdf.csv",
        summary="results/paper_b/critical_laws/d{d}_summary.csv",
    log:
        "logs/paper_b/critical_laws_d{d}.log",
    benchmark:
        "benchmarks/paper_b/critical_laws_d{d}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        entry="experiments.paper_b_laws:critical_laws",
        d=lambda wc: int(wc.d),
        n_values=CFG.ints("paper_b.critical_laws.n"),
        gammas=CFG.grid("paper_b.critical_laws.gamma").tolist(),
        trials=CFG.value("paper_b.critical_laws.trials"),
        limit_trials=CFG.value("paper_b.critical_laws.limit_trials"),
        method=CFG.get("paper_b.uniform_sampler"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule paper_b_critical_laws_figure:
    """Critical-laws figure (ours): ECDFs against the Poisson and Weibull limits."""
    input:
        ecdf=expand(
            rules.paper_b_critical_laws.output.ecdf,
            d=CFG.ints("paper_b.critical_laws.d"),
        ),
        summary=expand(
            rules.paper_b_critical_laws.output.summary,
            d=CFG.ints("paper_b.critical_laws.d"),
        ),
        lib=lib("figures.paper_b_laws"),
    output:
        png=report(
            "figures/paper_b/critical_laws.png",
            caption="../report/paper_b_critical_laws_figure.rst",
            category="Paper B",
            labels={"figure": "critical laws (ours)", "quantity": "law of A_(1)"},
        ),
        pdf="figures/paper_b/critical_laws.pdf",
    log:
        "logs/paper_b/plot_critical_laws.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_b_laws:plot_critical_laws",
        caption=(
            "(ours) Uniform keys, q = e_1, each context evaluated at every gamma [choice]. "
            "Black dashed: Poisson limit of A_(1) [paper; simulated, derived] and the Weibull "
            "law exp(-C s^(1/alpha)) of the scaled nearest-key distance [paper]; grey bands: "
            "where a finite-n ECDF falls pointwise (+-2 SE) if its law is the limit's; dotted: "
            "exact finite-n law (1 - F(s/n^alpha))^n [derived]. KS: two-sample "
            "Kolmogorov-Smirnov distance to the simulated limit (one-sample for the nearest "
            "key); the 5% critical value is about "
            f"{1.36 * math.sqrt(1 / CFG.value('paper_b.critical_laws.trials') + 1 / CFG.value('paper_b.critical_laws.limit_trials')):.3f}."
        ),
    script:
        ENTRY


# --------------------------------------------------------------------------- heat drift
rule paper_b_heat_drift:
    """beta P_q ATT_n(q) against grad_S log rho(q) at one beta, many contexts (ours)."""
    input:
        lib=lib("experiments.paper_b_drift"),
    output:
        csv="results/paper_b/heat_drift/beta{beta}.csv",
    log:
        "logs/paper_b/heat_drift/beta{beta}.log",
    benchmark:
        "benchmarks/paper_b/heat_drift/beta{beta}.tsv"
    wildcard_constraints:
        beta=r"\d+\.\d{4}",
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=2500,
        runtime=15,
    params:
        entry="experiments.paper_b_drift:heat_drift",
        beta=lambda wc: CFG.exact("paper_b.heat_drift.beta", wc.beta),
        n=CFG.value("paper_b.heat_drift.n"),
        q=CFG.get("paper_b.heat_drift.q"),
        target_se=CFG.value("paper_b.heat_drift.target_se"),
        min_contexts=CFG.value("paper_b.heat_drift.min_contexts"),
        max_contexts=CFG.value("paper_b.heat_drift.max_contexts"),
        cut=CFG.value("paper_b.heat_drift.cut"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule paper_b_heat_drift_summary:
    """Heat-drift table: mean and SE per beta, with the n = inf quadrature."""
    input:
        csvs=expand(
            rules.paper_b_heat_drift.output.csv,
            beta=CFG.labels("paper_b.heat_drift.beta"),
        ),
        lib=lib("experiments.paper_b_drift"),
    output:
        summary="results/paper_b/heat_drift_summary.csv",
        curve="results/paper_b/heat_drift_theory.csv",
    log:
        "logs/paper_b/heat_drift_summary.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.paper_b_drift:heat_drift_summary",
        q=CFG.get("paper_b.heat_drift.q"),
        theory_betas=CFG.grid("paper_b.heat_drift.theory_beta").tolist(),
    script:
        ENTRY


rule paper_b_heat_drift_figure:
    """Heat-drift figure (ours): ratio to the score, O(1/beta) correction, normal part."""
    input:
        summary=rules.paper_b_heat_drift_summary.output.summary,
        curve=rules.paper_b_heat_drift_summary.output.curve,
        lib=lib("figures.paper_b_drift"),
    output:
        png=report(
            "figures/paper_b/heat_drift.png",
            caption="../report/paper_b_heat_drift_figure.rst",
            category="Paper B",
            labels={"figure": "heat drift (ours)", "quantity": "beta P_q ATT_n"},
        ),
        pdf="figures/paper_b/heat_drift.pdf",
    log:
        "logs/paper_b/plot_heat_drift.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_b_drift:plot_heat_drift",
        caption=(
            f"(ours) rho ∝ exp(x1 x2) on S^2, q = {CFG.get('paper_b.heat_drift.q')} "
            f"(normalised), n = {CFG.value('paper_b.heat_drift.n'):,} keys [paper]. Contexts "
            "per beta chosen so the ratio's SE is about "
            f"{CFG.value('paper_b.heat_drift.target_se'):g} (between "
            f"{CFG.value('paper_b.heat_drift.min_contexts')} and "
            f"{CFG.value('paper_b.heat_drift.max_contexts')}) [choice]; only keys with "
            f"beta T <= {CFG.value('paper_b.heat_drift.cut'):g} + log n are drawn (exact in "
            "law: binomial count, rejection within the cap). Blue: n = inf output at the same "
            "beta by quadrature [derived]. Ratio = <beta P_q ATT, g> over |g|^2 with "
            "g = grad_S log rho(q); error bars +-2 SE over contexts."
        ),
    script:
        ENTRY


# --------------------------------------------------------------------------- output law
rule paper_b_output_law:
    """Scaled displacement at beta = gamma n^alpha against the marked-Poisson limit, one d
    (ours, docs/paper-b-beyond.md#critical-output-law)."""
    input:
        lib=lib("experiments.paper_b_output_law"),
    output:
        ecdf="results/paper_b/output_law/d{d}_ecdf.csv",
        summary="results/paper_b/output_law/d{d}_summary.csv",
    log:
        "logs/paper_b/output_law_d{d}.log",
    benchmark:
        "benchmarks/paper_b/output_law_d{d}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        runtime=10,
    params:
        entry="experiments.paper_b_output_law:critical_output_law",
        d=lambda wc: int(wc.d),
        n_values=CFG.ints("paper_b.output_law.n"),
        gammas=CFG.grid("paper_b.output_law.gamma").tolist(),
        trials=CFG.value("paper_b.output_law.trials"),
        limit_trials=CFG.value("paper_b.output_law.limit_trials"),
        plot_points=CFG.value("paper_b.output_law.plot_points"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule paper_b_output_law_figure:
    """Critical output law figure (ours): ECDFs of |L_n|, KS against n with its noise level,
    second moment against the Mecke value."""
    input:
        ecdf=expand(
            rules.paper_b_output_law.output.ecdf,
            d=CFG.ints("paper_b.output_law.d"),
        ),
        summary=expand(
            rules.paper_b_output_law.output.summary,
            d=CFG.ints("paper_b.output_law.d"),
        ),
        lib=lib("figures.paper_b_output_law"),
    output:
        png=report(
            "figures/paper_b/output_law.png",
            caption="../report/paper_b_output_law_figure.rst",
            category="Paper B",
            labels={"figure": "critical output law (ours)", "quantity": "|L_n|"},
        ),
        pdf="figures/paper_b/output_law.pdf",
    log:
        "logs/paper_b/plot_output_law.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_b_output_law:plot_output_law",
        caption=(
            "(ours) Uniform keys, q = e_1, beta = gamma n^{2/(d-1)}. L_n = n^{1/(d-1)} "
            "P_q(ATT_n(q) - q) from the nearest keys of each context (exact order statistics, "
            "docs/paper-b-beyond.md) [derived]; black dashed: its limit, a weighted average "
            "sum_i W_i z_i over a Poisson cloud of intensity rho(q) in the tangent space, "
            "W_i ∝ exp(-gamma |z_i|^2 / 2) [paper], simulated directly [derived]. ECDFs drawn "
            f"through {CFG.value('paper_b.output_law.plot_points')} evenly spaced order "
            "statistics per sample [choice]. KS: two-sample Kolmogorov-Smirnov distance of "
            "|L_n| to the limit sample; grey: its noise level at these sample sizes "
            "(Kolmogorov law, 95% point; dashed: mean); open squares: a second limit sample "
            "against the first. Right: E|L_n|^2 over the Mecke-formula value of E|L|^2 "
            "[derived] (+-2 SE)."
        ),
    script:
        ENTRY
