"""Rule paper_a_critical_check: thin adapter around attnscale.figures.paper_a.plot_critical_check."""

from attnscale.figures.paper_a import plot_critical_check
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_critical_check(sm.input.data, sm.output.png, sm.output.pdf, caption=sm.params.caption)
