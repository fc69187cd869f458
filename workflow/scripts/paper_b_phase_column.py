"""Rule paper_b_phase_column: thin adapter around attnscale.experiments.paper_b.run_phase_column."""

from attnscale.experiments.paper_b import run_phase_column
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_phase_column(
        sm.output.csv,
        n=int(sm.wildcards.n),
        d=int(sm.wildcards.d),
        betas=list(sm.params.betas),
        line_gammas=list(sm.params.line_gammas),
        trials=int(sm.params.trials),
        method=str(sm.params.method),
        root_seed=int(sm.params.root_seed),
    )
