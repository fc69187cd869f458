"""Rules paper_a_theorem_rows and paper_a_finite_size_rows: thin adapter around
attnscale.experiments.paper_a_eta.run_theory_rows."""

from attnscale.experiments.paper_a_eta import run_theory_rows
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_theory_rows(
        list(sm.input.tokens),
        sm.output.csv,
        gamma_factors=sm.params.gamma_factors,
        alphas=sm.params.alphas,
    )
