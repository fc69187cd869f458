"""Rule paper_b_heat_drift_summary: thin adapter around attnscale.experiments.paper_b.run_heat_drift_summary."""

from attnscale.experiments.paper_b import run_heat_drift_summary
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_heat_drift_summary(
        list(sm.input.csvs),
        sm.output.summary,
        sm.output.curve,
        q=list(sm.params.q),
        theory_betas=list(sm.params.theory_betas),
    )
