# Scaling rules of real models on Paper A's phase diagram (ours; spec scaling-rules.md).

PAPER_A_RULES_TARGETS = [
    "figures/paper_a/scaling_rules.png",
    "figures/paper_a/scaling_rules.pdf",
]


rule paper_a_scaling_rules_data:
    """m(n) and gamma_eff / gamma_c (calibration A) for every rule on the n grid."""
    input:
        lib=lib("scaling_rules", "experiments.paper_a_rules", "io"),
    output:
        csv="results/paper_a/scaling_rules.csv",
    log:
        "logs/paper_a/scaling_rules_data.log",
    benchmark:
        "benchmarks/paper_a/scaling_rules_data.tsv"
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        ns=PA_RULES_N.tolist(),
        overlay_n=PA["scaling_rules"]["overlay_n"],
    script:
        "../scripts/paper_a_scaling_rules_data.py"


rule paper_a_scaling_rules:
    """Plot: rules against n, and on Figure 1's lambda map."""
    input:
        rules="results/paper_a/scaling_rules.csv",
        figure1="results/paper_a/figure1_data.csv",
        lib=lib("figures.paper_a_rules", "figures.paper_a", "plotting"),
    output:
        png=report(
            "figures/paper_a/scaling_rules.png",
            caption="../report/paper_a_scaling_rules.rst",
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
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        caption=(
            "(ours) Logit multipliers m(n) of real models (formulas from their public code, spec "
            "scaling-rules.md; SWAN-GPT and scale-invariant attention unverified and not shown), "
            "placed with calibration A [the spec's choice]: beta_n = gamma_c ln(L) m(n), i.e. "
            "critical at each model's own length L, so gamma_eff / gamma_c = ln(L) m(n) / ln(n). "
            "Dashed: gamma = gamma_c [paper]. Right: Figure 1's lambda map at its n with each rule's "
            f"gamma_eff at n = {PA['scaling_rules']['overlay_n']:,} drawn over rho "
            "(gamma_eff = ratio x gamma_c(rho)); the phase boundary is n-independent in the limit."
        ),
    script:
        "../scripts/paper_a_scaling_rules.py"
