# Transition sharpness against context length (ours, issue 27;
# docs/long-context.md#transition-sharpness-against-context-length): the self-weight, lambda and
# eta against x = gamma / gamma_c(rho_hat) from sampled query rows, one job per (d, n). Rule files
# hold rules only: values come from CFG, each rule names its library function in params.entry.


rule sharpness_curves:
    """The three observables of every draw and rho of one (d, n) on the x grid, from sampled
    rows; Paper A's token draws made inside the job and never written."""
    input:
        lib=lib("experiments.sharpness"),
    output:
        csv="results/sharpness/d{d}/n{n}.csv",
    log:
        "logs/sharpness/d{d}/n{n}.log",
    benchmark:
        "benchmarks/sharpness/d{d}/n{n}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        # the Gaussian draw, the tokens and one n x d temporary (float64), plus 500 MB
        mem_mb=lambda wc: 500 + 24 * int(wc.n) * int(wc.d) // 10**6,
        # about 2e-8 + 1.5e-10 d CPU-s per sampled row, key, x, rho and draw, three times over
        runtime=lambda wc: 5
        + int(
            3
            * CFG.value("sharpness.rows")
            * int(wc.n)
            * (2e-8 + 1.5e-10 * int(wc.d))
            * len(CFG.grid("sharpness.x"))
            * len(CFG.grid("sharpness.rho"))
            * CFG.value("sharpness.trials")
            / 60
        ),
    params:
        entry="experiments.sharpness:sharpness_curves",
        n=lambda wc: int(wc.n),
        d=lambda wc: int(wc.d),
        rhos=CFG.grid("sharpness.rho").tolist(),
        x=CFG.grid("sharpness.x").tolist(),
        rows=CFG.value("sharpness.rows"),
        probes=CFG.value("sharpness.probes"),
        trials=CFG.value("sharpness.trials"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule sharpness_summary:
    """Figure data: mean curves over draws with the finite-d theory, the 10 %-90 % width and
    the centre of every transition with delta-method SEs, the finite-d and finite-n simplex
    references, and the width's local slopes against ln n."""
    input:
        data=[
            rules.sharpness_curves.output.csv.format(d=s["d"], n=n)
            for s in CFG.get("sharpness.sizes")
            for n in CFG.ints("sharpness.n")
            if n <= s["n_max"]
        ],
        lib=lib("experiments.sharpness_summary"),
    output:
        curves="results/sharpness/curves.csv",
        transitions="results/sharpness/transitions.csv",
        trends="results/sharpness/trends.csv",
    log:
        "logs/sharpness/summary.log",
    benchmark:
        "benchmarks/sharpness/summary.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        # the finite-d theory of every (d, rho, n): about 3-4 CPU-s each
        runtime=15,
    params:
        entry="experiments.sharpness_summary:sharpness_summary",
    script:
        ENTRY


rule sharpness_figure:
    """Figure (ours): the self-weight, lambda and eta against gamma / gamma_c for n up to 2^20
    with the finite-d theory, the width and the centre of each transition against ln n / d, with
    Paper A's limit and the finite-d theory's width and centre.
    """
    input:
        curves=rules.sharpness_summary.output.curves,
        transitions=rules.sharpness_summary.output.transitions,
        lib=lib("figures.sharpness"),
    output:
        png=report(
            "figures/sharpness/sharpness.png",
            caption="../report/sharpness_figure.rst",
            category="Long contexts",
            labels={
                "figure": "transition sharpness (ours)",
                "quantity": "lambda, eta",
            },
        ),
        pdf="figures/sharpness/sharpness.pdf",
        # each row as an image of its own, to be read at a page's width (issue 45)
        row_self_weight="figures/sharpness/rows/self_weight.png",
        row_lambda="figures/sharpness/rows/lambda.png",
        row_eta="figures/sharpness/rows/eta.png",
        row_entropy="figures/sharpness/rows/entropy.png",
        row_width="figures/sharpness/rows/width.png",
        row_centre="figures/sharpness/rows/centre.png",
    log:
        "logs/sharpness/figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.sharpness:plot_sharpness_rows",
        caption=(
            "(ours) Paper A's layer, Gaussian near-simplex tokens [paper model], alpha = 0, "
            "beta = x gamma_c(rho_hat) ln n with rho_hat each draw's realised mean cosine "
            "(a Gaussian z_0, read at rho_hat) [choice]. Each curve: mean over "
            f"{CFG.value('sharpness.trials')} token draws (Paper A's draws of the same n, d) "
            f"of estimates from {CFG.value('sharpness.rows')} sampled query rows, each exact "
            "against all n keys, eta with one tangent probe per row [derived: unbiased, "
            "docs/long-context.md]; band: 2 SE of the mean curve (the larger of the draws' "
            "spread and the within-draw error); error bars: 2 SE by the delta method over "
            "draws [derived]. Sizes, x grid and draws [choice]. Thin dashed, same colour: the "
            "finite-d theory of the same draws (the self-weight at each draw's ||z_0||; "
            "lambda's and eta's mean field at ||z_0|| = 1 and the draws' mean rho_hat) "
            "[derived]; dotted black: the floor the outputs' tilt towards the query puts under "
            "lambda, at the largest n [derived]. Dashed black step: Paper A's n -> inf limit, 0 "
            "below gamma_c and 1 above, the critical value at gamma_c (open circle) [paper]. "
            "Triangles: where the finite-d theory's curve crosses the critical value (its centre; for "
            "A_ii the finite-d critical point x* = beta*(1 - rho_hat)/ln n of the draws at their "
            "||z_0||) [derived]. Width: x90 - x10 of the normalised curve [choice], against "
            "ln n / d; thick pale line: the finite-d theory's width [derived]; dotted: Paper A's "
            "finite-n simplex map [derived], which shrinks like 1/ln n. Centre: crossing of the "
            "value at gamma_c (1/2, 1/(1 + 3 rho_hat), 1/4) [choice]; thick pale line: the "
            "finite-d theory's centre (for A_ii its x*) [derived]."
        ),
    script:
        ENTRY


rule sharpness_calibration:
    """Calibration of the crossing SEs at one configured point: the spread of each width and
    centre over independent experiments against its mean delta-method SE."""
    input:
        lib=lib("experiments.sharpness_calibration"),
    output:
        csv="results/sharpness/calibration/d{d}_n{n}_T{draws}_m{rows}.csv",
    log:
        "logs/sharpness/calibration/d{d}_n{n}_T{draws}_m{rows}.log",
    benchmark:
        "benchmarks/sharpness/calibration/d{d}_n{n}_T{draws}_m{rows}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        # about 3e-11 CPU-s per sampled row, key, dimension and grid point, per draw
        runtime=lambda wc: 5
        + int(
            3e-11
            * int(wc.rows)
            * int(wc.n)
            * int(wc.d)
            * len(CFG.grid("sharpness.x"))
            * int(wc.draws)
            * calibration_point(wc)["experiments"]
            / 60
        ),
    params:
        entry="experiments.sharpness_calibration:calibration",
        d=lambda wc: int(wc.d),
        n=lambda wc: int(wc.n),
        draws=lambda wc: int(wc.draws),
        rows=lambda wc: int(wc.rows),
        rho=lambda wc: float(calibration_point(wc)["rho"]),
        experiments=lambda wc: int(calibration_point(wc)["experiments"]),
        x=CFG.grid("sharpness.x").tolist(),
        root_seed=ROOT_SEED,
    script:
        ENTRY
