# The sharpness family's widths on fixed-norm tokens against the finite-d theory's (ours, issue 45;
# docs/long-context.md#the-width-on-fixed-norm-tokens): one job per configured point. Rule files
# hold rules only: values come from CFG, each rule names its library function in params.entry.


rule sharpness_fixed_norm:
    """Widths and centres of the three observables from fixed-norm token draws (||z_0|| = 1)
    of one (d, n, rho), with the finite-d theory's at the same norm."""
    input:
        lib=lib("experiments.sharpness_fixed_norm"),
    output:
        csv="results/sharpness/fixed_norm/d{d}_n{n}_rho{rho}.csv",
    log:
        "logs/sharpness/fixed_norm/d{d}_n{n}_rho{rho}.log",
    benchmark:
        "benchmarks/sharpness/fixed_norm/d{d}_n{n}_rho{rho}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        # the Gaussian draw, the tokens and one n x d temporary (float64), plus 500 MB
        mem_mb=lambda wc: 500 + 24 * int(wc.n) * int(wc.d) // 10**6,
        # as rule sharpness_curves per draw, plus the finite-d theory (a few CPU-s)
        runtime=lambda wc: 5
        + int(
            3
            * fixed_norm_point(wc)["rows"]
            * int(wc.n)
            * (2e-8 + 1.5e-10 * int(wc.d))
            * len(CFG.grid("sharpness.x"))
            * fixed_norm_point(wc)["draws"]
            / 60
        ),
    params:
        entry="experiments.sharpness_fixed_norm:fixed_norm_transitions",
        n=lambda wc: int(wc.n),
        d=lambda wc: int(wc.d),
        rho=lambda wc: float(fixed_norm_point(wc)["rho"]),
        x=CFG.grid("sharpness.x").tolist(),
        rows=lambda wc: int(fixed_norm_point(wc)["rows"]),
        probes=CFG.value("sharpness.probes"),
        draws=lambda wc: int(fixed_norm_point(wc)["draws"]),
        root_seed=ROOT_SEED,
    script:
        ENTRY
