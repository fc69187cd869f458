# Critical exponent of beta*(n) (ours, issue 11 items 2-4): uniform keys across d, keys on great
# sub-spheres, RoPE-rotated keys, the exponent fits (a compute rule) and two figures
# (docs/paper-b-beyond.md#critical-exponent-across-dimensions). Rule files hold rules only: values
# come from CFG (src/attnscale/pipeline/config.py), each rule names its library function in params.entry.


rule paper_b_exponent_sphere:
    """beta*(n) for uniform keys on S^{d-1} (every d) and on great sub-spheres S^{k-1} of S^{d-1}
    through the query (every k), in one job: exact D2Q Beta law with exact caps near the query,
    and sub-sphere keys drawn in R^d up to full_keys_max_n
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions,
    docs/paper-b-beyond.md#keys-on-a-submanifold)."""
    input:
        lib=lib("experiments.paper_b_exponent"),
    output:
        csv="results/paper_b_exponent/sphere.csv",
    log:
        "logs/paper_b_exponent/sphere.log",
    benchmark:
        "benchmarks/paper_b_exponent/sphere.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=1500,
        runtime=15,
    params:
        entry="experiments.paper_b_exponent:sphere_points",
        uniform={
            "d": CFG.ints("paper_b_exponent.uniform.d"),
            "n": CFG.grid("paper_b_exponent.uniform.n").tolist(),
            "contexts": CFG.value("paper_b_exponent.uniform.contexts"),
        },
        subsphere={
            "d": CFG.value("paper_b_exponent.subsphere.d"),
            "k": CFG.ints("paper_b_exponent.subsphere.k"),
            "n": CFG.grid("paper_b_exponent.subsphere.n").tolist(),
            "contexts": CFG.value("paper_b_exponent.subsphere.contexts"),
            "full_keys_max_n": CFG.value("paper_b_exponent.subsphere.full_keys_max_n"),
        },
        level=CFG.value("paper_b_exponent.level"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule paper_b_exponent_rope:
    """beta*(n) for RoPE-rotated keys of one head dimension d: vMF content, kappa = kappa_per_d * d
    for every kappa_per_d of the config (and inf, one repeated content key, if repeated_key), at
    relative positions 0 .. n-1; for d in rope_long.d also the repeated key up to long contexts
    (docs/paper-b-beyond.md#rope-like-keys)."""
    input:
        lib=lib("experiments.paper_b_exponent_rope"),
    output:
        csv="results/paper_b_exponent/rope/d{d}.csv",
    log:
        "logs/paper_b_exponent/rope/d{d}.log",
    benchmark:
        "benchmarks/paper_b_exponent/rope/d{d}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        entry="experiments.paper_b_exponent_rope:rope_points",
        d=lambda wc: int(wc.d),
        kappa_per_d=CFG.grid("paper_b_exponent.rope.kappa_per_d").tolist()
        + ([math.inf] if CFG.get("paper_b_exponent.rope.repeated_key") else []),
        base=CFG.value("paper_b_exponent.rope.base"),
        n=CFG.grid("paper_b_exponent.rope.n").tolist(),
        contexts=CFG.value("paper_b_exponent.rope.contexts"),
        level=CFG.value("paper_b_exponent.level"),
        long_n=lambda wc: (
            CFG.grid("paper_b_exponent.rope_long.n").tolist()
            if int(wc.d) in CFG.ints("paper_b_exponent.rope_long.d")
            else None
        ),
        long_contexts=CFG.value("paper_b_exponent.rope_long.contexts"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule paper_b_exponent_fits:
    """All beta*(n) points in one table and the exponent fits of every curve: weighted least
    squares of log beta* on log n under four models (ours,
    docs/paper-b-beyond.md#critical-exponent-across-dimensions)."""
    input:
        points=[
            rules.paper_b_exponent_sphere.output.csv,
            *expand(
                rules.paper_b_exponent_rope.output.csv,
                d=CFG.ints("paper_b_exponent.rope.d"),
            ),
        ],
        lib=lib("experiments.paper_b_exponent_fits"),
    output:
        points="results/paper_b_exponent/points.csv",
        fits="results/paper_b_exponent/fits.csv",
    log:
        "logs/paper_b_exponent/fits.log",
    benchmark:
        "benchmarks/paper_b_exponent/fits.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.paper_b_exponent_fits:exponent_tables",
        upper_n_min=CFG.value("paper_b_exponent.upper_n_min"),
    script:
        ENTRY


rule paper_b_exponent_figure:
    """The exponent figure (ours): the fitted exponents across d, the compensated beta*(n) and
    the sub-spheres."""
    input:
        points=rules.paper_b_exponent_fits.output.points,
        fits=rules.paper_b_exponent_fits.output.fits,
        lib=lib("figures.paper_b_exponent"),
    output:
        png=report(
            "figures/paper_b_exponent/exponent.png",
            caption="../report/paper_b_exponent_figure.rst",
            category="Paper B (ours)",
            labels={"figure": "critical exponent", "quantity": "beta*(n)"},
        ),
        pdf="figures/paper_b_exponent/exponent.pdf",
    log:
        "logs/paper_b_exponent/exponent_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_b_exponent:plot_exponent",
        caption=(
            f"beta*(n): the beta where the mean top weight E A_(1) equals "
            f"{CFG.value('paper_b_exponent.level')} [choice], by Brent's method on the mean over "
            f"{CFG.value('paper_b_exponent.uniform.contexts')} contexts per n (common random "
            "numbers), error bars +-2 delta-method SE. Theory: beta* ~ n^{2/(d-1)} [paper], "
            "n^{2/(k-1)} on a great sub-sphere S^{k-1} [derived]. (a) weighted least squares "
            "of log beta* on log n: all n with a B/beta* finite-n term [derived; primary], all n "
            f"pure power law, n >= {CFG.value('paper_b_exponent.upper_n_min'):g} pure power law; "
            "SE times max(1, sqrt(chi2/dof)) [choice]. (b) beta*(n)/n^{2/(d-1)} relative to its "
            "value at the largest n: flat = the exponent. (c) sub-spheres in d = "
            f"{CFG.value('paper_b_exponent.subsphere.d')}: exact D2Q law (lines) and keys drawn "
            "in R^d (squares): the intrinsic dimension k sets the exponent, not d."
        ),
    script:
        ENTRY


rule paper_b_exponent_rope_figure:
    """beta*(n) for RoPE-rotated keys against uniform keys, and the repeated key at long n (ours)."""
    input:
        points=rules.paper_b_exponent_fits.output.points,
        fits=rules.paper_b_exponent_fits.output.fits,
        lib=lib("figures.paper_b_exponent"),
    output:
        png=report(
            "figures/paper_b_exponent/rope.png",
            caption="../report/paper_b_exponent_rope_figure.rst",
            category="Paper B (ours)",
            labels={"figure": "RoPE keys", "quantity": "beta*(n)"},
        ),
        pdf="figures/paper_b_exponent/rope.pdf",
    log:
        "logs/paper_b_exponent/rope_figure.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_b_exponent:plot_rope",
        caption=(
            f"RoPE keys [choice: base {CFG.value('paper_b_exponent.rope.base'):g}, "
            "theta_l = base^{-2l/d}, query (1,0,1,0,..)/sqrt(d/2), relative positions 0 .. n-1]: "
            "content keys vMF(mu, kappa) with mu uniform per context, key m = R_m x_m. "
            f"beta*(n) at E A_(1) = {CFG.value('paper_b_exponent.level')} [choice] over "
            f"{CFG.value('paper_b_exponent.rope.contexts')} contexts per n (long-n panel: "
            f"{CFG.value('paper_b_exponent.rope_long.contexts')}), +-2 delta-method SE; "
            "dotted: slope 2/(d-1) [paper, i.i.d. keys with a density]. kappa = 0 is uniform "
            "keys in law [derived]; finite kappa: independent keys with a density, same "
            "asymptotic exponent, n-dependent constant [derived]; kappa = inf: one repeated key "
            "on an orbit of dimension r = dim_Q span(theta_l) [derived], slope 2/r once the "
            "orbit fills its closure. Fits: pure power law over the n shown (last panel: the "
            "three largest n)."
        ),
    script:
        ENTRY
