"""Rule paper_b_plot_critical_laws: thin adapter around attnscale.figures.paper_b.plot_critical_laws."""

from attnscale.figures.paper_b import plot_critical_laws
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_critical_laws(
        list(sm.input.ecdf),
        list(sm.input.summary),
        sm.output.png,
        sm.output.pdf,
        caption=sm.params.caption,
    )
