# eta's mean field against the exact eta (ours, issue 45; docs/finite-d.md#mean-field-eta-against-the-exact-eta):
# paired per token draw, one job per configured (d, rho). Rule files hold rules only: values come
# from CFG, each rule names its library function in params.entry.


rule finite_d_eta_check:
    """The exact eta and eta's mean field at each draw's ||z_0|| for every draw of one (d, rho)
    on the x grid (docs/finite-d.md#mean-field-eta-against-the-exact-eta)."""
    input:
        lib=lib("experiments.finite_d_eta_check"),
    output:
        csv="results/finite_d/eta_check/d{d}_rho{rho}.csv",
    log:
        "logs/finite_d/eta_check/d{d}_rho{rho}.log",
    benchmark:
        "benchmarks/finite_d/eta_check/d{d}_rho{rho}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        # the tokens, the Gram matrix and a few n x n blocks per beta (float64), plus 500 MB
        mem_mb=lambda wc: 500
        + 8
        * 8
        * CFG.value("finite_d.eta_check.n") ** 2
        * len(CFG.grid("finite_d.eta_check.x"))
        // 10**6,
        runtime=5,
    params:
        entry="experiments.finite_d_eta_check:eta_check",
        n=CFG.value("finite_d.eta_check.n"),
        d=lambda wc: int(wc.d),
        rho=lambda wc: float(eta_check_point(wc)["rho"]),
        x=CFG.grid("finite_d.eta_check.x").tolist(),
        draws=lambda wc: int(eta_check_point(wc)["draws"]),
        root_seed=ROOT_SEED,
    script:
        ENTRY
