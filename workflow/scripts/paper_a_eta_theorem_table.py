"""Rule paper_a_theorem_table: thin adapter around attnscale.figures.paper_a_eta.plot_theorem_table."""

from attnscale.figures.paper_a_eta import plot_theorem_table
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_theorem_table(sm.input.data, sm.output.png, sm.output.pdf, caption=sm.params.caption)
