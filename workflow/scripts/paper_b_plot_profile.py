"""Rule paper_b_plot_profile: thin adapter around attnscale.figures.paper_b.plot_profile."""

from attnscale.figures.paper_b import plot_profile
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_profile(list(sm.input.csvs), sm.output.png, sm.output.pdf, caption=sm.params.caption)
