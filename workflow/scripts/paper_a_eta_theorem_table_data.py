"""Rule paper_a_theorem_table_data: thin adapter around
attnscale.experiments.paper_a_eta.run_theorem_table."""

from attnscale.experiments.paper_a_eta import run_theorem_table
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_theorem_table(sm.input.csvs, sm.output.csv)
