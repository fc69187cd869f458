"""Rule paper_a_scaling_rules: thin adapter around attnscale.figures.paper_a_rules."""

from attnscale.figures.paper_a_rules import plot_scaling_rules
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    plot_scaling_rules(
        sm.input.rules, sm.input.figure1, sm.output.png, sm.output.pdf, caption=sm.params.caption
    )
