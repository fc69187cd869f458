"""Rule paper_b_phase_summary: thin adapter around attnscale.experiments.paper_b.run_phase_summary."""

from attnscale.experiments.paper_b import run_phase_summary
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_phase_summary(sm.input.csvs, sm.output.csv)
