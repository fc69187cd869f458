"""Rule paper_a_lambda: thin adapter around attnscale.experiments.paper_a.run_lambda."""

from attnscale.experiments.paper_a import run_lambda
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_lambda(sm.input.tokens, sm.output.csv, gammas=sm.params.gammas, alpha=sm.params.alpha)
