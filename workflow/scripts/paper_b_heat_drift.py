"""Rule paper_b_heat_drift: thin adapter around attnscale.experiments.paper_b.run_heat_drift."""

from attnscale.experiments.paper_b import run_heat_drift
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_heat_drift(
        sm.output.csv,
        beta=float(sm.params.beta),
        n=int(sm.params.n),
        q=list(sm.params.q),
        target_se=float(sm.params.target_se),
        min_contexts=int(sm.params.min_contexts),
        max_contexts=int(sm.params.max_contexts),
        cut=float(sm.params.cut),
        root_seed=int(sm.params.root_seed),
    )
