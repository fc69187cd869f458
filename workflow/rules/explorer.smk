# The phase-diagram explorer of the docs (ours, issue 29; docs/explorer.md): the finite-d
# theory on a grid of nodes, its error at held-out points, and the page's data document. Rule
# files hold rules only: values come from CFG (src/attnscale/pipeline/config.py), each rule names
# its library function in params.entry.


rule explorer_theory_nodes:
    """beta*(n, d, rho) of the finite-d theory at one d-node: every rho-node, rho = 0 and every
    n-node of the d-node's tier (more at small d; docs/explorer.md#the-theory-grid)."""
    input:
        lib=lib("experiments.explorer.grid"),
    output:
        csv="results/explorer/theory/d{d}.csv",
    log:
        "logs/explorer/theory/d{d}.log",
    benchmark:
        "benchmarks/explorer/theory/d{d}.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        runtime=10,
    params:
        entry="experiments.explorer.grid:theory_nodes",
        d=lambda wc: int(wc.d),
        # the degrees of the d-node's tier: the first with d <= tier_d
        rho_degree=lambda wc: CFG.ints("explorer.rho_degree")[
            sum(t < int(wc.d) for t in CFG.ints("explorer.tier_d"))
        ],
        rho_max=CFG.value("explorer.rho_max"),
        n_degree=lambda wc: CFG.ints("explorer.n_degree")[
            sum(t < int(wc.d) for t in CFG.ints("explorer.tier_d"))
        ],
    script:
        ENTRY


rule explorer_heldout:
    """Exact beta* at random and edge points that are not nodes: the grid's measured error
    (docs/explorer.md#accuracy)."""
    input:
        lib=lib("experiments.explorer.grid"),
    output:
        csv="results/explorer/heldout.csv",
    log:
        "logs/explorer/heldout.log",
    benchmark:
        "benchmarks/explorer/heldout.tsv"
    conda:
        "../../envs/environment.yaml"
    resources:
        runtime=10,
    params:
        entry="experiments.explorer.grid:heldout_theory",
        points=CFG.value("explorer.heldout"),
        rho_max=CFG.value("explorer.rho_max"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


rule explorer_data:
    """The explorer page's data: the theory grid with its held-out error, Paper B's power law,
    the scaling rules and the simulated lambda phase diagrams (docs/explorer.md). Publish a
    default run's copy into docs/: python -m attnscale.experiments.explorer publish."""
    input:
        nodes=expand(rules.explorer_theory_nodes.output.csv, d=CFG.ints("explorer.d")),
        heldout=rules.explorer_heldout.output.csv,
        lambda_tables=[
            rules.paper_a_lambda_summary.output.figure1,
            *CFG.get("explorer.extra_lambda_tables"),
        ],
        lib=lib("experiments.explorer.data"),
    output:
        json="results/explorer/data.json",
    log:
        "logs/explorer/data.log",
    benchmark:
        "benchmarks/explorer/data.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.explorer.data:explorer_data",
        lambda_sources=[
            rules.paper_a_lambda_summary.output.figure1,
            *CFG.get("explorer.extra_lambda_tables"),
        ],
        rho_max=CFG.value("explorer.rho_max"),
        root_seed=ROOT_SEED,
    script:
        ENTRY


# Not part of `all` (it needs Chromium and Sphinx): snakemake --cores 1 -f explorer_screenshot
rule explorer_screenshot:
    """The README's screenshot of the explorer, docs/_static/explorer.png, from a build of the
    site from the current sources (docs/explorer.md#the-readmes-screenshot)."""
    input:
        page="docs/explorer.md",
        script="docs/_static/explorer.js",
        style="docs/_static/explorer.css",
        data="docs/explorer-data.json",
        conf="docs/conf.py",
        lib=lib("experiments.explorer.screenshot"),
    output:
        png="docs/_static/explorer.png",
    log:
        "logs/explorer/screenshot.log",
    benchmark:
        "benchmarks/explorer/screenshot.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.explorer.screenshot:explorer_screenshot",
        head="128,131072,0.5,qwen",
    script:
        ENTRY
