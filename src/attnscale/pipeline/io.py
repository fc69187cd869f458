"""Atomic, byte-stable output files and their provenance (docs/pipeline.md#reproducibility).

Every writer here writes to a temporary file in the target's directory and renames it into
place (``os.replace`` is atomic on POSIX), so an interrupted job never leaves a half-written file
under its final name. No wall-clock time is recorded anywhere.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np

from attnscale import __version__

__all__ = [
    "atomic_path",
    "params_hash",
    "git_commit",
    "provenance",
    "provenance_columns",
    "set_provenance",
    "provenance_arrays",
    "job_context",
    "job_provenance",
    "with_job_provenance",
    "with_job_provenance_all",
    "recorded_seeds",
    "PROVENANCE_COLUMNS",
    "provenance_of",
    "PROVENANCE_JOINED",
    "joined_text",
    "provenance_aggregations",
    "spawn_key_text",
    "SPAWN_KEY_PATTERN",
    "save_npz",
    "save_csv",
    "save_figure",
    "save_json",
    "read_csvs",
]


@contextlib.contextmanager
def atomic_path(path, suffix: str | None = None):
    """Yield a temporary path next to ``path``; rename it onto ``path`` if the block succeeds.

    The temporary name is deterministic, ``.<name>.partial<suffix>``: if a job is killed
    (SIGKILL leaves no chance to clean up), the rerun of the same job writes the same temporary
    file and renames it, so no stray partial file survives a completed rerun.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sfx = suffix if suffix is not None else "".join(path.suffixes)
    tmp = path.parent / f".{path.name}.partial{sfx}"
    try:
        yield tmp
        _test_pause(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


#: Test hook (tests/test_reliability.py interrupts a write with it): when this variable names a
#: file (``figure1_data.csv``), every atomic write of a file of that name stops after its
#: temporary file is complete and before the rename, creates the file named by
#: ``ATTNSCALE_TEST_WRITE_PAUSE_MARKER`` (holding the process id) and sleeps up to
#: ``ATTNSCALE_TEST_WRITE_PAUSE_SECONDS`` (default 60) so that the test can SIGKILL it there.
#: Unset in every normal run, where it costs one environment lookup per written file.
WRITE_PAUSE_ENV = "ATTNSCALE_TEST_WRITE_PAUSE"


def _test_pause(path: Path, tmp: Path) -> None:
    name = os.environ.get(WRITE_PAUSE_ENV)
    if not name or path.name != name:
        return
    import time

    marker = os.environ.get(WRITE_PAUSE_ENV + "_MARKER")
    if marker:
        Path(marker).write_text(f"{os.getpid()} {Path(tmp).resolve()}\n")
    time.sleep(float(os.environ.get(WRITE_PAUSE_ENV + "_SECONDS", "60")))


def params_hash(params: dict) -> str:
    """Short sha256 of a parameter dict (keys sorted, JSON canonical form)."""
    blob = json.dumps(params, sort_keys=True, default=_json_default).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


@functools.cache
def git_commit() -> str:
    """The HEAD commit of the checkout that holds this package (``-dirty`` appended when tracked
    files differ from it), or ``"unknown"`` outside a git checkout.

    ``ATTNSCALE_GIT_COMMIT`` overrides it (the test suite sets it so that copies of the
    repository with and without ``.git`` give identical bytes).
    """
    env = os.environ.get("ATTNSCALE_GIT_COMMIT")
    if env is not None:
        return env
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=here
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            cwd=here,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def provenance(root_seed: int | None, key, params: dict) -> dict:
    """The provenance record stored with every output (no wall-clock time, ever).

    Keys: ``root_seed`` (decimal string; 128-bit values do not fit int64 columns), ``spawn_key``
    (list of ints), ``params_hash`` (:func:`params_hash`), ``attnscale_version`` and
    ``git_commit`` (:func:`git_commit`).
    """
    return {
        "root_seed": None if root_seed is None else str(int(root_seed)),
        "spawn_key": None if key is None else [int(k) for k in key],
        "params_hash": params_hash(params),
        "attnscale_version": __version__,
        "git_commit": git_commit(),
    }


def provenance_columns(
    root_seed: int | None,
    key,
    params: dict,
    *,
    contexts: int | None = None,
    only: tuple[str, ...] | None = None,
) -> dict:
    """:func:`provenance` as table columns: the one place every table's provenance columns are
    written (docs/pipeline.md#reliability-and-provenance).

    ``spawn_key`` has one format in every table: the integers of a key joined with ``-``
    (``"17-3-0"``); several keys (``key`` a list of keys) joined with ``;``; a key prefix whose
    last id runs over ``contexts`` rows (``contexts`` given) as ``<prefix>-{0..contexts-1}``.
    A table computed without random draws (``root_seed`` and ``key`` both ``None``) has no
    ``root_seed`` or ``spawn_key`` column. ``only`` (names among :data:`PROVENANCE_COLUMNS`)
    keeps those columns alone: for a table whose other provenance columns
    :func:`with_job_provenance` appends (a per-row ``spawn_key`` beside the job's columns).
    """
    p = provenance(root_seed, None, params)
    out = {}
    if root_seed is not None or key is not None:
        out["root_seed"] = p["root_seed"]
        out["spawn_key"] = spawn_key_text(key, contexts)
    out["params_hash"] = p["params_hash"]
    out["attnscale_version"] = p["attnscale_version"]
    out["git_commit"] = p["git_commit"]
    if only is not None:
        unknown = set(only) - set(PROVENANCE_COLUMNS)
        if unknown:
            raise ValueError(f"only: {sorted(unknown)} not among {PROVENANCE_COLUMNS}")
        out = {k: v for k, v in out.items() if k in only}
    return out


def set_provenance(df, root_seed: int | None, key=None, params=None, *, only) -> None:
    """Set the provenance columns ``only`` of :func:`provenance_columns` on the table ``df`` in
    place (new columns go last): for a table an entry function builds column by column
    (docs/pipeline.md#reliability-and-provenance)."""
    for col, value in provenance_columns(root_seed, key, params or {}, only=only).items():
        df[col] = value


#: The provenance columns of a results table, in their order (:func:`provenance_columns`).
PROVENANCE_COLUMNS = ("root_seed", "spawn_key", "params_hash", "attnscale_version", "git_commit")


def provenance_arrays(root_seed: int, key) -> dict:
    """:func:`provenance` of a random draw as ``npz`` entries: the one place a draw file's
    provenance is written (docs/pipeline.md#reliability-and-provenance). ``root_seed``,
    ``attnscale_version`` and ``git_commit`` as strings, ``spawn_key`` as an int64 array; no
    ``params_hash`` (a draw is named by its spawn key alone)."""
    p = provenance(root_seed, key, {})
    out = {k: np.str_(p[k]) for k in PROVENANCE_COLUMNS if k != "params_hash"}
    out["spawn_key"] = np.asarray(p["spawn_key"], dtype=np.int64)
    return out


#: The running job's params and the root seeds its inputs record (set by the adapter around
#: the entry function, :func:`job_context`), for :func:`job_provenance`.
_JOB = contextvars.ContextVar("attnscale_job", default=({}, ()))


@contextlib.contextmanager
def job_context(params: dict, seeds=()):
    """Within this block :func:`job_provenance` describes the job of ``params`` whose inputs
    record ``seeds`` (the adapter runs every entry function in one, docs/pipeline.md#how-a-rule-runs)."""
    token = _JOB.set((dict(params), tuple(seeds)))
    try:
        yield
    finally:
        _JOB.reset(token)


def job_provenance(params: dict | None = None, seeds=None) -> dict:
    """The provenance columns of a table a job computes from other tables or without random draws
    (a summary, a figure's data, a theory table; docs/pipeline.md#reliability-and-provenance), in
    this order: ``params_hash`` (of ``params``), ``attnscale_version``, ``git_commit`` and
    ``root_seed``: ``params``'s ``root_seed``, else the ``seeds`` its inputs record
    (:func:`recorded_seeds`) joined with ``;`` (no column when there is none). ``params`` and
    ``seeds`` default to the running job's (:func:`job_context`; outside a job ``{}`` and none)."""
    job_params, job_seeds = _JOB.get()
    params = job_params if params is None else params
    seeds = job_seeds if seeds is None else seeds
    p = provenance(params.get("root_seed"), None, params)
    out = {k: p[k] for k in ("params_hash", "attnscale_version", "git_commit")}
    seed = p["root_seed"] if p["root_seed"] is not None else ";".join(seeds) or None
    if seed is not None:
        out["root_seed"] = seed
    return out


def with_job_provenance(df):
    """``df`` with the :func:`job_provenance` columns it lacks, appended in that order (a table
    with ``params_hashes``, merged from several jobs, keeps them for ``params_hash``): how an
    entry function gives the provenance of the running job to a table it computes from other
    tables or without random draws (docs/pipeline.md#reliability-and-provenance)."""
    have = set(df.columns) | ({"params_hash"} if "params_hashes" in df.columns else set())
    extra = {k: v for k, v in job_provenance().items() if k not in have}
    return df.assign(**extra) if extra else df


def with_job_provenance_all(result):
    """:func:`with_job_provenance` on a table, or on every table among the values of a dict (the
    other values, such as checkpoint files, unchanged): for entry functions that return several
    outputs (docs/pipeline.md#reliability-and-provenance)."""
    if hasattr(result, "columns") and hasattr(result, "to_csv"):
        return with_job_provenance(result)
    if isinstance(result, dict):
        return {
            k: with_job_provenance(v) if hasattr(v, "columns") and hasattr(v, "to_csv") else v
            for k, v in result.items()
        }
    return result


def recorded_seeds(*inputs) -> list[str]:
    """The root seeds recorded in ``inputs`` (tables' ``root_seed`` columns, npz entries, lists of
    either), sorted, for :func:`job_provenance`."""
    seeds: set[str] = set()

    def visit(obj):
        if isinstance(obj, list | tuple):
            for o in obj:
                visit(o)
        elif hasattr(obj, "columns") and "root_seed" in obj.columns:
            seeds.update(str(v) for v in obj["root_seed"].dropna().unique())
        elif isinstance(obj, dict) and "root_seed" in obj:
            seeds.add(str(obj["root_seed"]))

    visit(list(inputs))
    return sorted(seeds)


#: The name a summary gives a provenance column whose values over several draws it joins.
PROVENANCE_JOINED = {"spawn_key": "spawn_keys", "params_hash": "params_hashes"}


def joined_text(values) -> str:
    """The distinct values of a provenance column, as text, sorted and joined with ``;``."""
    return ";".join(sorted(set(map(str, values))))


def provenance_of(table, joined=()) -> dict:
    """The provenance columns a summary row carries over from the per-draw rows ``table`` it
    reduces: the first row's value of each of :data:`PROVENANCE_COLUMNS` the table has, or, for
    the columns named in ``joined``, all their values (:func:`joined_text`) under the names of
    :data:`PROVENANCE_JOINED` (the one place such a copy is written,
    docs/pipeline.md#reliability-and-provenance)."""
    return {
        PROVENANCE_JOINED.get(c, c) if c in joined else c: (
            joined_text(table[c]) if c in joined else table[c].iloc[0]
        )
        for c in PROVENANCE_COLUMNS
        if c in table.columns
    }


def provenance_aggregations(joined=("spawn_key",)) -> dict:
    """:func:`provenance_of` as named aggregations for ``DataFrame.groupby(...).agg``: each
    provenance column's first value per group (``"first"``: its first non-missing one), the
    columns in ``joined`` all values joined (docs/pipeline.md#reliability-and-provenance)."""
    return {
        PROVENANCE_JOINED.get(c, c) if c in joined else c: (
            c,
            joined_text if c in joined else "first",
        )
        for c in PROVENANCE_COLUMNS
    }


def spawn_key_text(key, contexts: int | None = None) -> str | None:
    """The ``spawn_key`` column's text of ``key`` (see :func:`provenance_columns`): ``None`` for no
    key, ``"a-b-c"`` for one key, ``"a-b-c;a-b-d"`` for a list of keys, and
    ``"a-b-{0..k-1}"`` for a prefix with ``contexts = k``."""
    if key is None:
        return None
    keys = list(key)
    if keys and not isinstance(keys[0], int | np.integer):  # a list of keys
        return ";".join(spawn_key_text(k) for k in keys)
    text = "-".join(str(int(k)) for k in keys)
    return text if contexts is None else f"{text}-{{0..{int(contexts) - 1}}}"


#: The pattern every table's ``spawn_key`` matches (tests/test_table_columns.py).
SPAWN_KEY_PATTERN = r"^\d+(-\d+)*(-\{0\.\.\d+\})?(;\d+(-\d+)*)*$"


def save_npz(path, **arrays) -> None:
    """Atomic ``numpy.savez`` (uncompressed: byte-stable for identical inputs)."""
    with atomic_path(path, suffix=".npz") as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def save_csv(path, df) -> None:
    """Atomic CSV with a fixed float format (17 significant digits: round-trips float64)."""
    with atomic_path(path, suffix=".csv") as tmp:
        df.to_csv(tmp, index=False, float_format="%.17g", lineterminator="\n")


def save_figure(fig, png_path=None, pdf_path=None) -> None:
    """Save a matplotlib figure atomically as PNG and/or PDF with no metadata that varies between
    runs (PNG via Agg carries no timestamp; the PDF's Creator, Producer and CreationDate are
    dropped), then close it. Needs no matplotlib import here: it calls the figure's methods."""
    if png_path is not None:
        with atomic_path(png_path, suffix=".png") as tmp:
            fig.savefig(tmp, format="png", metadata={"Software": None})
    if pdf_path is not None:
        with atomic_path(pdf_path, suffix=".pdf") as tmp:
            fig.savefig(
                tmp,
                format="pdf",
                metadata={"Creator": None, "Producer": None, "CreationDate": None},
            )
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close(fig)


def save_json(path, obj) -> None:
    """Atomic JSON with sorted keys."""
    with atomic_path(path, suffix=".json") as tmp:
        tmp.write_text(json.dumps(obj, sort_keys=True, indent=1, default=_json_default) + "\n")


def read_csvs(paths):
    """Concatenate CSV files in the given order (pandas is imported lazily: token jobs skip it)."""
    import pandas as pd

    frames = [pd.read_csv(p) for p in paths]
    return pd.concat(frames, ignore_index=True)
