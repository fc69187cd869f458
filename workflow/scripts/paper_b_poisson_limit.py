"""Rule paper_b_poisson_limit: thin adapter around attnscale.experiments.paper_b.run_poisson_limit."""

from attnscale.experiments.paper_b import run_poisson_limit
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_poisson_limit(
        sm.output.csv,
        d=int(sm.wildcards.d),
        gammas=list(sm.params.gammas),
        trials=int(sm.params.trials),
        root_seed=int(sm.params.root_seed),
    )
