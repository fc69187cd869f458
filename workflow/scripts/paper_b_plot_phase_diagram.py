"""Rule paper_b_plot_phase_diagram: thin adapter around attnscale.figures.paper_b.plot_phase_diagram."""

from attnscale.figures.paper_b import plot_phase_diagram
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_phase_diagram(
        sm.input.phase, sm.input.limit, sm.output.png, sm.output.pdf, caption=sm.params.caption
    )
