"""Rule paper_b_vector_fields: thin adapter around attnscale.experiments.paper_b.run_vector_fields."""

from attnscale.experiments.paper_b import run_vector_fields
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_vector_fields(
        sm.output.panels,
        sm.output.sweep,
        n=int(sm.params.n),
        beta_exponents=list(sm.params.beta_exponents),
        n_queries=int(sm.params.queries),
        sweep_betas=list(sm.params.sweep_beta),
        root_seed=int(sm.params.root_seed),
    )
