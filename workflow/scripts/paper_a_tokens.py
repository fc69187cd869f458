"""Rule paper_a_tokens: thin adapter around attnscale.experiments.paper_a.write_tokens."""

from attnscale.experiments.paper_a import write_tokens
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule):
    write_tokens(
        sm.output.npz,
        n=int(sm.wildcards.n),
        d=int(sm.wildcards.d),
        rho=float(sm.wildcards.rho),
        trial=int(sm.wildcards.trial),
        root_seed=int(sm.params.root_seed),
    )
