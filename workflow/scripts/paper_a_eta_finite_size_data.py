"""Rule paper_a_finite_size_data: thin adapter around
attnscale.experiments.paper_a_eta.run_finite_size."""

from attnscale.experiments.paper_a_eta import run_finite_size
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_finite_size(sm.input.csvs, sm.output.csv)
