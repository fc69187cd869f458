"""Rule paper_a_lambda_summary: thin adapter around attnscale.experiments.paper_a.run_summary."""

from attnscale.experiments.paper_a import run_summary
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_summary(sm.input.csvs, sm.output.figure1, sm.output.critical)
