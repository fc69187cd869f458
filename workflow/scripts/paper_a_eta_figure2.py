"""Rule paper_a_figure2: thin adapter around attnscale.figures.paper_a_eta.plot_figure2."""

from attnscale.figures.paper_a_eta import plot_figure2
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_figure2(sm.input.data, sm.output.png, sm.output.pdf, caption=sm.params.caption)
