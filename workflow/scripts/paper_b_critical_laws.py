"""Rule paper_b_critical_laws: thin adapter around attnscale.experiments.paper_b.run_critical_laws."""

from attnscale.experiments.paper_b import run_critical_laws
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_critical_laws(
        sm.output.ecdf,
        sm.output.summary,
        d=int(sm.wildcards.d),
        n_values=list(sm.params.n_values),
        gammas=list(sm.params.gammas),
        trials=int(sm.params.trials),
        limit_trials=int(sm.params.limit_trials),
        method=str(sm.params.method),
        root_seed=int(sm.params.root_seed),
    )
