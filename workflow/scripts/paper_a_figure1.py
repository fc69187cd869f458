"""Rule paper_a_figure1: thin adapter around attnscale.figures.paper_a.plot_figure1."""

from attnscale.figures.paper_a import plot_figure1
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_figure1(sm.input.data, sm.output.png, sm.output.pdf, caption=sm.params.caption)
