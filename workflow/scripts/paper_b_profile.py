"""Rule paper_b_profile: thin adapter around attnscale.experiments.paper_b.run_profile."""

from attnscale.experiments.paper_b import run_profile
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_profile(
        sm.output.csv,
        n=int(sm.params.n),
        d=int(sm.wildcards.d),
        beta_exponent=float(sm.params.beta_exponent),
        trials=int(sm.params.trials),
        method=str(sm.params.method),
        root_seed=int(sm.params.root_seed),
    )
