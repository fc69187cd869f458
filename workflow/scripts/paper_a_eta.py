"""Rule paper_a_eta: thin adapter around attnscale.experiments.paper_a_eta.run_eta."""

from attnscale.experiments.paper_a_eta import run_eta
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    run_eta(
        list(sm.input.tokens),
        sm.output.csv,
        gammas=sm.params.gammas,
        alpha=sm.params.alpha,
        method=sm.params.method,
        probes=sm.params.probes,
        probe_kind=sm.params.probe_kind,
        root_seed=int(sm.params.root_seed),
    )
