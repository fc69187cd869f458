"""Rule benchmark_suite: thin adapter around attnscale.benchmark.run_suite."""

from pathlib import Path

from attnscale.benchmark import run_suite
from attnscale.runtime import job

sm = snakemake  # noqa: F821  (injected by Snakemake)
with job(sm.log[0], sm.threads, sm.rule) as log:
    run_suite(Path(sm.output.csv).parent, log=log, **dict(sm.params.items()))
