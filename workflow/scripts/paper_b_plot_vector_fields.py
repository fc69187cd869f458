"""Rule paper_b_plot_vector_fields: thin adapter around attnscale.figures.paper_b.plot_vector_fields."""

from attnscale.figures.paper_b import plot_vector_fields
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_vector_fields(
        sm.input.panels, sm.input.sweep, sm.output.png, sm.output.pdf, caption=sm.params.caption
    )
