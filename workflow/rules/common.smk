# Shared by all rule files -- the rule defaults (RULE_DEFAULTS), the checked configuration (CFG),
# library inputs derived from the imports of each rule's entry function (lib), the one adapter
# script (ENTRY) and the wildcard constraints. Configuration logic lives in
# src/attnscale/pipeline/config.py, not here.
import math
from pathlib import Path

from attnscale.experiments.transformer import check_inputs as _check_transformer_inputs
from attnscale.layer.observables import grid_observables as _grid_observables
from attnscale.experiments.transformer import default_cache as _transformer_cache
from attnscale.pipeline.config import load as _load_config
from attnscale.pipeline.config import source_label as _source_label
from attnscale.pipeline.deps import lib_files as _lib_files
from attnscale.pipeline.executors import executor_missing as _executor_missing
from attnscale.pipeline.rule_defaults import install as _install_rule_defaults
from attnscale.pipeline import warm as _warm
from snakemake.logging import logger as _logger
from attnscale.pipeline.scheduler_fix import (
    install_or_say_why as _install_scheduler_fix,
)

_install_scheduler_fix()  # one scheduler wake-up per second, not one per finished job

# Defaults of every job, unless its rule states its own -- threads 1 (Snakemake's default; BLAS
# follows it) and these resources (runtime in minutes); so each rule states threads and resources
# only where they differ (docs/pipeline.md#rule-anatomy).
RULE_DEFAULTS = {"mem_mb": 1000, "runtime": 5}
_install_rule_defaults(workflow, RULE_DEFAULTS)

CFG = _load_config(
    config, schema=Path(workflow.basedir) / "workflow/schemas/config.schema.yaml"
)
ROOT_SEED = int(config["seed"])
# the config files this run merged: the findings page's header
CONFIG_SOURCE = _source_label(workflow.configfiles, Path.cwd())
# Paper A's rho grid in pieces of paper_a.rho_per_job values: one lambda/eta job each
RHO_PARTS = CFG.chunks("paper_a.rho", CFG.value("paper_a.rho_per_job"))
# the transformer family's model and text: checked when a job of that family is first scheduled,
# before any job runs, and only then, so that a missing model or text blocks that family alone
# (docs/pipeline.md#optional-pieces); the resolved model (its SHA-256 recorded), the text's
# SHA-256 and length in word pieces
_TRANSFORMER = {}


def transformer_inputs():
    """The checked model and text of the transformer family (check_inputs, cached on disk by the
    files' stamps); the error names what is missing and that only this family needs it.
    """
    if not _TRANSFORMER:
        try:
            _TRANSFORMER.update(
                _check_transformer_inputs(
                    model=CFG.get("transformer.model"),
                    text=CFG.get("transformer.text"),
                    text_part=CFG.get("transformer.text_part"),
                    text_sha256=CFG.get("transformer.text_sha256"),
                    n=CFG.ints("transformer.n"),
                    windows=CFG.value("transformer.windows"),
                    global_n=CFG.value("transformer.global.n"),
                    global_windows=CFG.value("transformer.global.windows"),
                    cache=_transformer_cache(),
                )
            )
        except ValueError as err:  # ModelError, CorpusError
            raise type(err)(f"{err}. {_TRANSFORMER_ONLY}") from None
    return _TRANSFORMER


_TRANSFORMER_ONLY = (
    "Only the transformer family needs it (its rules transformer_*, and rules findings and all "
    "that read its tables); every other target builds without it, e.g. "
    "`snakemake --cores all paper_a_lambda_figure`"
)


def transformer_text(wildcards):
    """Input function of the transformer jobs: the text, once the family's inputs are checked."""
    transformer_inputs()
    return CFG.get("transformer.text")


onstart:
    # after the DAG is built, before the first job (not in a dry run): what the executor needs
    # (Slurm's commands for profiles/slurm; docs/pipeline.md#optional-pieces)
    _plugin = workflow.executor_plugin
    _why = _executor_missing(_plugin.name if _plugin is not None else None)
    if _why is not None:
        raise WorkflowError(_why)
    # warm jobs: one process imports the heavy libraries once and forks each job
    # (docs/pipeline.md#warm-jobs); not with other executors, deployments or platforms
    _no_warm = _warm.wanted(
        _plugin.name if _plugin is not None else None,
        {m.name.lower() for m in workflow.deployment_settings.deployment_method},
        jobs=len(list(workflow.dag.needrun_jobs())),
    )
    if _no_warm:
        _logger.info(
            f"warm jobs off ({_no_warm}): each job imports its libraries itself"
        )
    else:
        _warm.start()
        _logger.info(
            "warm jobs on: each job forks from one process that imported its libraries"
        )


onsuccess:
    _warm.stop()


onerror:
    _warm.stop()


# the observables of the registry on Figure 1's grid, one figure each (rule paper_a_grid_figure)
GRID_OBSERVABLES = [o.name for o in _grid_observables()]
# every rule runs this script, which calls the library function named in params.entry
ENTRY = "../scripts/entry.py"
_SRC = Path(workflow.basedir) / "src"


def lib(*entries):
    """Library files of a rule, i.e. the import closure of each entry's module and of the
    adapter that runs it (attnscale.pipeline.deps; docs/pipeline.md#what-depends-on-what).
    """
    return sorted(
        {f for e in ("pipeline.adapter", *entries) for f in _lib_files(e, src=_SRC)}
    )


def mem_mb_dense(wildcards):
    """Memory (MB) of a Paper A job that holds a few n x n float64 arrays of its {n}: 400 MB for
    the interpreter and libraries plus 40 n^2 bytes (five n x n arrays)."""
    return 400 + 40 * int(wildcards.n) ** 2 // 10**6


def mem_mb_rows(wildcards):
    """Memory (MB) of a Paper A job with all rows (mem_mb_dense) or with paper_a.rows sampled
    rows: 600 MB plus four n x d float64 arrays of its {n} and {d} (draw, tokens, their check).
    """
    if CFG.get("paper_a.rows") == "all":
        return mem_mb_dense(wildcards)
    return 600 + 32 * int(wildcards.n) * int(wildcards.d) // 10**6


def token_draws(trials):
    """Paper A Gaussian draws 0..trials-1 of a job's (n, d) (rule paper_a_tokens)."""
    return expand(
        "results/paper_a/tokens/n{{n}}/d{{d}}/trial{trial}.npz", trial=range(trials)
    )


def long_context_note():
    """Caption sentence of Paper A's rows choice and z_0 mode where they differ from the default
    run's (dense, Gaussian z_0; there: empty, captions unchanged; docs/long-context.md).
    """
    rows, z0 = CFG.get("paper_a.rows"), CFG.get("paper_a.z0")
    parts = []
    if rows != "all":
        parts.append(
            f"lambda and eta from {rows} sampled query rows per draw (unbiased; the SE over "
            "draws includes the row sampling)"
        )
    if z0 == "fixed_norm":
        parts.append("common component z_0 of norm 1 (conditioned on ||z_0||)")
    return f" {'; '.join(parts)} [choice; docs/long-context.md]." if parts else ""


def cached_token_draws(trials):
    """token_draws, or none where the job makes its draws itself: n >= paper_a.regenerate_n
    (docs/long-context.md#draws-that-are-not-cached)."""

    def draws(wildcards):
        if int(wildcards.n) >= CFG.value("paper_a.regenerate_n"):
            return []
        return expand(token_draws(trials), n=wildcards.n, d=wildcards.d)

    return draws


wildcard_constraints:
    n=r"\d+",
    d=r"\d+",
    trial=r"\d+",
    rho=r"0\.\d{4}",
    part=r"\d+",


def config_point(key, wc, fields):
    """The entry of the list of measurement points at config key ``key`` whose ``fields`` are
    the job's wildcards of the same names (sharpness.calibration, paper_a.z0_spread)."""
    want = tuple(int(getattr(wc, f)) for f in fields)
    for p in CFG.get(key):
        if tuple(p[f] for f in fields) == want:
            return p
    raise ValueError(f"no {key} point {dict(wc)}")


def calibration_point(wc):
    """The entry of sharpness.calibration that a calibration job's wildcards name."""
    return config_point("sharpness.calibration", wc, ("d", "n", "draws", "rows"))


#: The calibration tables of the configured points (none in the default run).
CALIBRATION_TABLES = [
    "results/sharpness/calibration/d{d}_n{n}_T{draws}_m{rows}.csv".format(**p)
    for p in CFG.get("sharpness.calibration")
]


def z0_spread_point(wc):
    """The entry of paper_a.z0_spread that a job's wildcards name."""
    return config_point("paper_a.z0_spread", wc, ("n", "d"))


#: The z_0 spread tables of the configured points (none in the default run).
Z0_SPREAD_TABLES = [
    "results/paper_a/z0_spread/n{n}_d{d}.csv".format(**p)
    for p in CFG.get("paper_a.z0_spread")
]


# eta's mean field against the exact eta and the widths on fixed-norm tokens (issue 45)
def eta_check_point(wc):
    """The entry of finite_d.eta_check.points that a job's wildcards name."""
    for p in CFG.get("finite_d.eta_check.points"):
        if p["d"] == int(wc.d) and f"{float(p['rho']):.4f}" == wc.rho:
            return p
    raise ValueError(f"no finite_d.eta_check point {dict(wc)}")


#: The per-point tables of the configured points.
ETA_CHECK_TABLES = [
    "results/finite_d/eta_check/d{}_rho{:.4f}.csv".format(p["d"], float(p["rho"]))
    for p in CFG.get("finite_d.eta_check.points")
]


def fixed_norm_point(wc):
    """The entry of sharpness.fixed_norm that a job's wildcards name (d, n and rho)."""
    want = (int(wc.d), int(wc.n), wc.rho)
    for p in CFG.get("sharpness.fixed_norm"):
        if (p["d"], p["n"], f"{float(p['rho']):.4f}") == want:
            return p
    raise ValueError(f"no sharpness.fixed_norm point {dict(wc)}")


#: The fixed-norm width tables of the configured points.
FIXED_NORM_TABLES = [
    "results/sharpness/fixed_norm/d{}_n{}_rho{:.4f}.csv".format(
        p["d"], p["n"], float(p["rho"])
    )
    for p in CFG.get("sharpness.fixed_norm")
]
