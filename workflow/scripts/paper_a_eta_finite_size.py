"""Rule paper_a_finite_size: thin adapter around attnscale.figures.paper_a_eta.plot_finite_size."""

from attnscale.figures.paper_a_eta import plot_finite_size
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_finite_size(sm.input.data, sm.output.png, sm.output.pdf, caption=sm.params.caption)
