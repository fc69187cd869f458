"""Rule paper_a_scaling_rules_data: thin adapter around attnscale.experiments.paper_a_rules."""

from attnscale.experiments.paper_a_rules import run_scaling_rules
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_scaling_rules(sm.output.csv, ns=sm.params.ns, overlay_n=sm.params.overlay_n)
