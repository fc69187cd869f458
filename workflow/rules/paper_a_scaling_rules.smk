# Scaling rules of real models on Paper A's phase diagram (ours; docs/scaling-rules.md).


rule paper_a_scaling_rules_data:
    """m(n) and gamma_eff / gamma_c (calibration A) for every rule on the n grid."""
    input:
        lib=lib("experiments.paper_a_scaling_rules"),
    output:
        csv="results/paper_a/scaling_rules.csv",
    log:
        "logs/paper_a/scaling_rules_data.log",
    benchmark:
        "benchmarks/paper_a/scaling_rules_data.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=500,
    params:
        entry="experiments.paper_a_scaling_rules:scaling_rules_data",
        ns=CFG.grid("paper_a.scaling_rules.n").tolist(),
        overlay_n=CFG.value("paper_a.scaling_rules.overlay_n"),
    script:
        ENTRY


rule paper_a_scaling_rules_figure:
    """Plot: rules against n, and on Figure 1's lambda map."""
    input:
        rules=rules.paper_a_scaling_rules_data.output.csv,
        figure1=rules.paper_a_lambda_summary.output.figure1,
        lib=lib("figures.paper_a_scaling_rules"),
    output:
        png=report(
            "figures/paper_a/scaling_rules.png",
            caption="../report/paper_a_scaling_rules_figure.rst",
            category="Paper A",
            labels={
                "figure": "scaling rules (ours)",
                "quantity": "gamma_eff / gamma_c",
            },
        ),
        pdf="figures/paper_a/scaling_rules.pdf",
    log:
        "logs/paper_a/scaling_rules.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_a_scaling_rules:plot_scaling_rules",
        caption=(
            "(ours) Logit multipliers m(n) of real models (formulas from their public code, "
            "docs/scaling-rules.md; SWAN-GPT and scale-invariant attention unverified and not "
            "shown), placed with calibration A [our choice]: beta_n = gamma_c ln(L) m(n), i.e. "
            "critical at each model's own length L, so gamma_eff / gamma_c = ln(L) m(n) / ln(n). "
            "Dashed: gamma = gamma_c [paper]. Right: Figure 1's lambda map at its n with each "
            "rule's gamma_eff at n = "
            f"{CFG.value('paper_a.scaling_rules.overlay_n'):,} drawn over rho "
            "(gamma_eff = ratio x gamma_c(rho)); the phase boundary is n-independent in the limit."
        ),
    script:
        ENTRY
