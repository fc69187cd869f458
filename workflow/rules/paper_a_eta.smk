# Paper A backward pass: tokens (rule paper_a_tokens, shared with Figure 1) -> eta grid ->
# Figure 2; tokens -> theorem table; tokens -> finite-size check. Spec paper-a.md §3-§6.

PA_ETA = PA["eta"]
PA_TT = PA["theorem_table"]
PA_FS = PA["finite_size"]
PA_TT_RHO_STR = [fmt(r) for r in PA_TT["rho"]]
PA_FS_RHO_STR = [fmt(r) for r in PA_FS["rho"]]
for _key, _vals in (
    ("theorem_table.rho", PA_TT_RHO_STR),
    ("finite_size.rho", PA_FS_RHO_STR),
):
    if len(set(_vals)) != len(_vals):
        _fail(f"paper_a.{_key}", "distinct at 4 decimals (they name files)", _vals)

PAPER_A_ETA_TARGETS = [
    "figures/paper_a/figure2_eta.png",
    "figures/paper_a/figure2_eta.pdf",
    "figures/paper_a/theorem_table.png",
    "figures/paper_a/theorem_table.pdf",
    "figures/paper_a/finite_size.png",
    "figures/paper_a/finite_size.pdf",
]

ETA_LIB = lib(
    "jacobian",
    "theory",
    "attention",
    "tokens",
    "io",
    "seeding",
    "validation",
    "experiments.paper_a",
    "experiments.paper_a_eta",
)


# Token draws 0..trials-1 of a job's (n, d, rho), all written by rule paper_a_tokens.
TOKENS_OF_JOB = "results/paper_a/tokens/n{{n}}/d{{d}}/rho{{rho}}/trial{trial}.npz"


rule paper_a_eta:
    """eta over the gamma grid and at gamma_c(rho_hat) for the Figure-2 draws of one (n, d, rho),
    spec §5."""
    input:
        tokens=expand(TOKENS_OF_JOB, trial=range(PA_ETA["trials"])),
        lib=ETA_LIB,
    output:
        csv="results/paper_a/eta/n{n}/d{d}/rho{rho}.csv",
    log:
        "logs/paper_a/eta/n{n}/d{d}/rho{rho}.log",
    benchmark:
        "benchmarks/paper_a/eta/n{n}/d{d}/rho{rho}.tsv"
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 400 + 40 * int(wc.n) ** 2 // 10**6,  # a few n x n arrays
        runtime=15,
    params:
        gammas=PA_GAMMA.tolist(),
        alpha=PA["alpha"],
        method=PA_ETA["method"],
        probes=PA_ETA["probes"],
        probe_kind=PA_ETA["probe_kind"],
        root_seed=ROOT_SEED,
    script:
        "../scripts/paper_a_eta.py"


rule paper_a_eta_summary:
    """Figure-2 data (mean eta per grid cell) and eta at gamma_c per draw."""
    input:
        csvs=expand(
            "results/paper_a/eta/n{n}/d{d}/rho{rho}.csv",
            n=PA["n"],
            d=PA["d"],
            rho=PA_RHO_STR,
        ),
        lib=lib("experiments.paper_a_eta", "experiments.paper_a", "io"),
    output:
        figure2="results/paper_a/figure2_data.csv",
        critical="results/paper_a/eta_critical_data.csv",
    log:
        "logs/paper_a/eta_summary.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    script:
        "../scripts/paper_a_eta_summary.py"


rule paper_a_figure2:
    """Figure 2: eta heat maps over (rho, gamma), one panel per d."""
    input:
        data="results/paper_a/figure2_data.csv",
        lib=lib("figures.paper_a_eta", "figures.paper_a", "plotting"),
    output:
        png=report(
            "figures/paper_a/figure2_eta.png",
            caption="../report/paper_a_figure2.rst",
            category="Paper A",
            labels={"figure": "Figure 2", "quantity": "eta"},
        ),
        pdf="figures/paper_a/figure2_eta.pdf",
    log:
        "logs/paper_a/figure2.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        caption=(
            "Colour: eta / [(1 - 1/d) mean_i 1/||x_i||^2], i.e. eta over the draw's "
            "super-critical limit (Theorem 2.4 at the realised norms), so the plateau 1 - 1/d "
            "reads 1 and the critical limit (1 - 1/d)/(4q) reads 1/4; values above 1.25 in "
            "magenta. "
            f"{PA_ETA['trials']} token draw(s) per cell (Figure 1's tokens), n = {PA['n']}, "
            f"{len(PA_RHO)} x {len(PA_GAMMA)} grid [our choices]; eta by the "
            f"{PA_ETA['method']} rule (exact block formula where it costs <= "
            f"{PA_ETA['probes']} Hutchinson probes, else {PA_ETA['probes']} "
            f"{PA_ETA['probe_kind']} probes). Dashed: gamma = 1/(1 - rho) [paper]."
        ),
    script:
        "../scripts/paper_a_eta_figure2.py"


rule paper_a_theorem_rows:
    """Simulation beside theory at gamma = f gamma_c(rho_hat) for the draws of one (n, d, rho)."""
    input:
        tokens=expand(TOKENS_OF_JOB, trial=range(PA_TT["trials"])),
        lib=ETA_LIB,
    output:
        csv="results/paper_a/theorem_table/n{n}/d{d}/rho{rho}.csv",
    log:
        "logs/paper_a/theorem_table/n{n}/d{d}/rho{rho}.log",
    benchmark:
        "benchmarks/paper_a/theorem_table/n{n}/d{d}/rho{rho}.tsv"
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 400 + 40 * int(wc.n) ** 2 // 10**6,  # a few n x n arrays
        runtime=15,
    params:
        gamma_factors=PA_TT["gamma_factors"],
        alphas=PA_TT["alpha"],
    script:
        "../scripts/paper_a_eta_theory_rows.py"


rule paper_a_theorem_table_data:
    """Tidy theorem table: simulation mean +- SE, finite-n simplex value, limit, paired z."""
    input:
        csvs=expand(
            "results/paper_a/theorem_table/n{n}/d{d}/rho{rho}.csv",
            n=PA["n"],
            d=PA["d"],
            rho=PA_TT_RHO_STR,
        ),
        lib=lib("experiments.paper_a_eta", "io"),
    output:
        csv="results/paper_a/theorem_table.csv",
    log:
        "logs/paper_a/theorem_table_data.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/paper_a_eta_theorem_table_data.py"


rule paper_a_theorem_table:
    """The theorem table rendered as a figure."""
    input:
        data="results/paper_a/theorem_table.csv",
        lib=lib("figures.paper_a_eta", "plotting"),
    output:
        png=report(
            "figures/paper_a/theorem_table.png",
            caption="../report/paper_a_theorem_table.rst",
            category="Paper A",
            labels={
                "figure": "theorem table (ours)",
                "quantity": "A_ii, cosine, lambda, eta",
            },
        ),
        pdf="figures/paper_a/theorem_table.pdf",
    log:
        "logs/paper_a/theorem_table.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        caption=(
            f"{PA_TT['trials']} token draws per (d, rho), n = {PA['n']}; gamma = f gamma_c(rho_hat) "
            "per draw. sim: mean +- SE over draws (<A_ii>: mean self-weight; cosine: mean "
            "<y_i', y_j'> over i != j; eta exact). simplex n: exact finite-n simplex value at the "
            "draw's rho_hat, q_hat [our derivation]. limit: n -> inf (Theorems 2.1, 2.4 [paper]; "
            "alpha > 0 and lambda forms [our derivation]). z: paired (sim - simplex n) / SE over "
            "draws; green |z| <= 2, orange otherwise."
        ),
    script:
        "../scripts/paper_a_eta_theorem_table.py"


rule paper_a_finite_size_rows:
    """Critical values at gamma_c(rho_hat) for the draws of one (n, d, rho)."""
    input:
        tokens=expand(TOKENS_OF_JOB, trial=range(PA_FS["trials"])),
        lib=ETA_LIB,
    output:
        csv="results/paper_a/finite_size/n{n}/d{d}/rho{rho}.csv",
    log:
        "logs/paper_a/finite_size/n{n}/d{d}/rho{rho}.log",
    benchmark:
        "benchmarks/paper_a/finite_size/n{n}/d{d}/rho{rho}.tsv"
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 400 + 40 * int(wc.n) ** 2 // 10**6,  # a few n x n arrays
        runtime=15,
    params:
        gamma_factors=[1.0],
        alphas=PA_FS["alpha"],
    script:
        "../scripts/paper_a_eta_theory_rows.py"


rule paper_a_finite_size_data:
    """Tidy finite-size table (the theorem table of the finite-size draws)."""
    input:
        csvs=expand(
            "results/paper_a/finite_size/n{n}/d{d}/rho{rho}.csv",
            n=PA_FS["n"],
            d=PA["d"],
            rho=PA_FS_RHO_STR,
        ),
        lib=lib("experiments.paper_a_eta", "io"),
    output:
        csv="results/paper_a/finite_size_data.csv",
    log:
        "logs/paper_a/finite_size_data.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/paper_a_eta_finite_size_data.py"


rule paper_a_finite_size:
    """Finite-size panel: critical values against n with their limits, per d."""
    input:
        data="results/paper_a/finite_size_data.csv",
        lib=lib("figures.paper_a_eta", "plotting"),
    output:
        png=report(
            "figures/paper_a/finite_size.png",
            caption="../report/paper_a_finite_size.rst",
            category="Paper A",
            labels={
                "figure": "finite-size check (ours)",
                "quantity": "critical values",
            },
        ),
        pdf="figures/paper_a/finite_size.pdf",
    log:
        "logs/paper_a/finite_size.log",
    conda:
        "../../envs/environment.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        caption=(
            f"{PA_FS['trials']} token draws per (n, d, rho) at gamma = gamma_c(rho_hat); points: "
            "mean +- SE over draws; dashed: exact finite-n simplex value at the draws' rho_hat, "
            "q_hat [our derivation]; dotted: n -> inf limit (Theorems 2.1, 2.4 [paper]; A_ii -> "
            "1/2 [paper]; lambda [our derivation]). eta exact (block formula)."
        ),
    script:
        "../scripts/paper_a_eta_finite_size.py"
