"""Rule paper_b_plot_heat_drift: thin adapter around attnscale.figures.paper_b.plot_heat_drift."""

from attnscale.figures.paper_b import plot_heat_drift
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_heat_drift(
        sm.input.summary,
        sm.input.curve,
        sm.output.png,
        sm.output.pdf,
        caption=sm.params.caption,
        spec_points=[tuple(p) for p in sm.params.spec_points],
    )
