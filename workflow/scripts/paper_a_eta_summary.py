"""Rule paper_a_eta_summary: thin adapter around attnscale.experiments.paper_a_eta.run_eta_summary."""

from attnscale.experiments.paper_a_eta import run_eta_summary
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_eta_summary(sm.input.csvs, sm.output.figure2, sm.output.critical)
