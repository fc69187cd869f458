"""The one adapter between Snakemake and the library (docs/pipeline.md#how-a-rule-runs).

Every rule runs ``workflow/scripts/entry.py``, which calls :func:`run_rule`. The rule names a
library *entry function* in ``params: entry="module:function"`` (module relative to
``attnscale``). :func:`run_rule`

1. opens the job's log and limits BLAS threads to the rule's ``threads`` (:func:`attnscale.pipeline.runtime.job`),
   and makes the configuration key ``backend`` the job's default kernel backend
   (:func:`attnscale.backend.use`, ``docs/gpu.md#choosing-the-backend``);
2. loads every named input except ``lib`` (:func:`load_file`): ``.csv`` -> :class:`pandas.DataFrame`,
   ``.npz`` -> ``dict`` of arrays, ``.json`` -> object, any other file -> its path; a list of
   files -> a list of those;
3. calls the entry function with keyword arguments: the loaded inputs and every param except
   ``entry`` (wildcards are not passed: a rule that needs one passes it as a param);
4. refuses a results table without its provenance columns (:func:`check_provenance`: the entry
   function writes them, with :mod:`attnscale.pipeline.io`'s helpers) and writes what
   the function returns (:func:`write_outputs`): a :class:`pandas.DataFrame` as CSV,
   a ``dict`` of arrays as npz, a matplotlib figure to the rule's ``.png`` and ``.pdf`` outputs
   (``bytes`` for an image output: an image made without matplotlib, written as it is),
   anything else JSON-serialisable as JSON; with several non-figure outputs the function returns
   a ``dict`` keyed by output name (a figure under a figure output's name, other than the first
   figure, goes to that output alone: one rule can save a figure and its parts). Every file is written atomically (:mod:`attnscale.pipeline.io`).

Entry functions therefore never touch files: tests call them directly on arrays and tables.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

__all__ = ["entry_function", "load_file", "load_input", "write_outputs", "call", "run_rule"]

FIGURE_EXTS = (".png", ".pdf")


def entry_function(entry: str):
    """The function named by ``"module:function"`` (module relative to ``attnscale``)."""
    module, sep, name = entry.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"entry must be 'module:function', got {entry!r}")
    if not module.startswith("attnscale"):
        module = f"attnscale.{module}"
    fn = getattr(importlib.import_module(module), name, None)
    if not callable(fn):
        raise ValueError(f"entry {entry!r}: {module} has no function {name!r}")
    return fn


def load_file(path):
    """Load one input file by its extension (see the module doc)."""
    p = Path(path)
    if p.suffix == ".csv":
        import pandas as pd

        return pd.read_csv(p)
    if p.suffix == ".npz":
        import numpy as np

        with np.load(p) as z:
            return {k: z[k] for k in z.files}
    if p.suffix == ".json":
        import json

        return json.loads(p.read_text())
    return str(p)


def load_input(value):
    """A named input: one file (``str``) is loaded; a list of files becomes a list."""
    if isinstance(value, (str, Path)):
        return load_file(value)
    return [load_file(v) for v in value]


def _is_figure(obj) -> bool:
    return type(obj).__name__ in ("Figure", "SubFigure") and hasattr(obj, "savefig")


def write_one(path: str, obj) -> None:
    """Write one output object to ``path`` atomically, by the path's extension."""
    from attnscale.pipeline import io

    ext = Path(path).suffix
    if ext == ".csv":
        io.save_csv(path, obj)
    elif ext == ".npz":
        io.save_npz(path, **obj)
    elif ext == ".json":
        io.save_json(path, obj)
    elif isinstance(obj, bytes):  # a binary file made by the library (a checkpoint's weights)
        with io.atomic_path(path, suffix=ext) as tmp:
            Path(tmp).write_bytes(obj)
    elif ext == ".md":
        with io.atomic_path(path, suffix=".md") as tmp:
            Path(tmp).write_text(obj)
    else:
        raise ValueError(f"no writer for output {path!r} (type {type(obj).__name__})")


def write_outputs(result, outputs: dict[str, str]) -> None:
    """Write an entry function's return value to the rule's named outputs (see the module doc)."""
    from attnscale.pipeline import io
    from attnscale.pipeline.io import save_figure

    figs = {k: v for k, v in outputs.items() if Path(v).suffix in FIGURE_EXTS}
    data = {k: v for k, v in outputs.items() if k not in figs}
    if isinstance(result, dict) and result and set(result) <= set(outputs):
        parts = dict(result)
    elif len(data) == 1:
        parts = {next(iter(data)): result}
    elif not data and _is_figure(result):
        parts = {}
    else:
        raise ValueError(
            f"cannot map a {type(result).__name__} onto outputs {sorted(outputs)}: return a "
            "dict keyed by output name"
        )
    for name in [k for k in figs if isinstance(parts.get(k), bytes)]:  # an image as it is
        with io.atomic_path(figs.pop(name), suffix=Path(outputs[name]).suffix) as tmp:
            Path(tmp).write_bytes(parts[name])
    fig = result if _is_figure(result) else next((v for v in parts.values() if _is_figure(v)), None)
    for name, path in data.items():
        if name not in parts:
            raise ValueError(f"the entry function returned nothing for output {name!r}")
        write_one(path, parts[name])
    if figs:
        if fig is None:
            raise ValueError(f"outputs {sorted(figs)} need a matplotlib Figure")
        # a figure returned under a figure output's name, other than the first, is saved there
        own = {
            k: parts[k] for k in figs if k in parts and _is_figure(parts[k]) and parts[k] is not fig
        }
        for name, other in own.items():
            path = figs[name]
            save_figure(
                other,
                path if path.endswith(".png") else None,
                path if path.endswith(".pdf") else None,
            )
        rest = [p for k, p in figs.items() if k not in own]
        png = next((p for p in rest if p.endswith(".png")), None)
        pdf = next((p for p in rest if p.endswith(".pdf")), None)
        save_figure(fig, png, pdf)


def check_provenance(df, params: dict, seeds: list[str], *, rule: str, output: str | None = None):
    """``df`` if it carries the provenance columns every results table has
    (docs/pipeline.md#reliability-and-provenance): a parameter hash (``params_hash``, or
    ``params_hashes`` for a table merged from several jobs), ``attnscale_version``,
    ``git_commit`` and, where the job comes from random draws (a ``root_seed`` param, or inputs
    that record one), ``root_seed``.

    Raises
    ------
    ValueError
        A column is missing; the message names the rule, the output (``output``, the name of a
        table among several) and the columns. The entry
        function writes them with :func:`attnscale.pipeline.io.provenance_columns` (tables of
        draws) or :func:`attnscale.pipeline.io.job_provenance` (tables computed from tables or
        without draws: the job's params and its inputs' seeds, which the adapter makes known
        with :func:`attnscale.pipeline.io.job_context`).
    """
    cols = set(df.columns)
    missing = [] if {"params_hash", "params_hashes"} & cols else ["params_hash"]
    missing += [c for c in ("attnscale_version", "git_commit") if c not in cols]
    if (params.get("root_seed") is not None or seeds) and "root_seed" not in cols:
        missing.append("root_seed")
    if missing:
        raise ValueError(
            f"rule {rule!r}: its table{'' if output is None else f' {output!r}'} has no "
            f"provenance columns {missing}; "
            "its entry function writes them (attnscale.pipeline.io.provenance_columns or "
            "job_provenance; docs/pipeline.md#reliability-and-provenance)"
        )
    return df


def call(entry: str, inputs: dict, params: dict, rule: str | None = None):
    """Call an entry function with loaded ``inputs`` and ``params`` as keyword arguments,
    checking first that the names match its signature (a clear error names what is missing),
    and the provenance columns of the tables it returns (:func:`check_provenance`; ``rule``
    names the rule in its message, default the entry)."""
    fn = entry_function(entry)
    kwargs = {k: load_input(v) for k, v in inputs.items() if k != "lib"}
    from attnscale.pipeline.io import job_context, recorded_seeds

    seeds = recorded_seeds(*kwargs.values())
    overlap = set(kwargs) & set(params)
    if overlap:
        raise ValueError(f"entry {entry!r}: names used as both input and param: {sorted(overlap)}")
    kwargs.update(params)
    sig = inspect.signature(fn)
    try:
        sig.bind(**kwargs)
    except TypeError as err:
        raise TypeError(f"entry {entry!r} called with {sorted(kwargs)}: {err}") from None
    with job_context(params, seeds):
        result = fn(**kwargs)

        def check(df, name):
            return check_provenance(df, params, seeds, rule=rule or entry, output=name)

        if _is_table(result):
            return check(result, None)
        if isinstance(result, dict):
            return {k: check(v, k) if _is_table(v) else v for k, v in result.items()}
        return result


def _is_table(obj) -> bool:
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "to_csv")


def run_rule(sm) -> None:
    """Run one Snakemake job (``sm`` is the ``snakemake`` object of a script)."""
    from attnscale.pipeline.runtime import job

    params = dict(sm.params.items())
    entry = params.pop("entry", None)
    if entry is None:
        raise ValueError(f"rule {sm.rule}: params has no 'entry'")
    from attnscale.backend import use

    cfg = getattr(sm, "config", None) or {}
    with (
        job(sm.log[0] if sm.log else None, sm.threads, sm.rule) as log,
        use(cfg.get("backend", "numpy"), cfg.get("backend_memory_gb")),  # docs/gpu.md
    ):
        result = call(entry, dict(sm.input.items()), params, sm.rule)
        write_outputs(result, dict(sm.output.items()))
        if cfg.get("backend") == "jax":
            _log_jax_device(log)


def _log_jax_device(log) -> None:
    """Say in the job's log where its JAX kernels ran (``backend: jax on <device>``), or that it
    ran none: a job that calls no JAX kernel (token draws, summaries, figures) never imports JAX,
    which saves its import time, over a second a job on a 2-core machine (docs/gpu.md)."""
    import sys

    from attnscale.backend import require_jax

    if "jax" in sys.modules:
        log.info("backend: jax on %s", require_jax().devices()[0])
    else:
        log.info("backend: jax (this job ran no JAX kernel; JAX was not imported)")


#: ``resolve`` and ``load`` were these functions' names; :func:`attnscale.backend.resolve` resolves a
#: backend and :func:`attnscale.pipeline.config.load` a configuration (docs/glossary.md).
