"""The record of one finding, the helpers that read tables for it, and its rendering
(docs/pipeline.md#numbers-in-the-prose).

A *finding* is one number (or a short list, a range, a count, a small table) computed from the
results tables of a run, with what it means, its standard error where it comes from random draws,
what its "+-" means and the tables it was read from. Findings never hold hand-typed results: a
value is either computed here from the tables (and, where a table lacks a quantity, from the
library, which the note then says) or is ``None`` with the reason ("not computed at this
configuration: ...").

Rendering is a pure function of the JSON document (:func:`render_markdown`), so the published page
``docs/findings.md`` can be checked against ``docs/findings.json`` byte for byte.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from attnscale.core import stats

__all__ = [
    "SCHEMA",
    "PM_DRAWS",
    "PM_CONTEXTS",
    "PM_SAMPLES",
    "PM_FIT_SCALED",
    "PM_DELTA",
    "NotAvailable",
    "Finding",
    "sci",
    "format_number",
    "render_value",
    "render_markdown",
    "TABLE_BLOCK",
    "render_table_blocks",
    "frame",
    "near",
    "pick",
    "one",
    "mean_se_count",
    "compute",
    "Declared",
    "declare",
    "evaluate",
]

#: Version of the JSON layout written by :func:`document`.
SCHEMA = 1

#: What "+-" means, in the words the page uses (one place, so the page is consistent).
PM_DRAWS = "one standard error of the mean over {k} independent draws"
PM_CONTEXTS = "one standard error of the mean over {k} independent contexts"
PM_SAMPLES = "one standard error of the mean over {k} independent samples"
PM_FIT_SCALED = (
    "chi^2-scaled fit error: the weighted least-squares standard error times "
    "max(1, sqrt(chi^2 / dof))"
)
PM_DELTA = "one standard error by the delta method over {k} draws"


class NotAvailable(Exception):
    """A finding cannot be computed from the tables of this configuration (a grid point, a
    dimension or a column it needs is absent). The message says what is missing."""


@dataclass
class Finding:
    """One computed finding.

    Attributes
    ----------
    key : str
        Stable identifier, ``<family>.<name>``; the same at every configuration.
    label : str
        What the number is, in one line (plain text; the rendered value follows it).
    value : float, list, dict or None
        A number; a list of numbers (rendered ``a / b / c``); for ``kind="range"`` a pair
        ``[lo, hi]``; for ``kind="count"`` a pair ``[k, m]``; for ``kind="table"`` a list of rows
        (lists of cells). ``None`` when not computed.
    se : float, list or None
        Standard error(s) matching ``value`` (``None`` where the value is exact or has none).
    fmt : str
        Python format spec of one number (``".3f"``, ``".3g"``, ``"d"``); for tables, one spec per
        column in ``columns_fmt``.
    unit : str
        Appended after the value (``"%"``, ``"SE"``); empty for none.
    kind : str
        ``"value"``, ``"range"``, ``"count"`` or ``"table"``.
    source : list of str
        The results tables the value was read from (paths relative to the run's folder).
    pm : str
        What "+-" means (empty if the finding has no "+-").
    note : str
        How it was computed, when not obvious (e.g. "from the library: ..."), or why it is
        ``None``.
    columns : list of str
        Table header (``kind="table"``).
    columns_fmt : list of str
        Format spec per table column (``""`` for text cells).
    """

    key: str
    label: str
    value: object = None
    se: object = None
    fmt: str = ".3g"
    unit: str = ""
    kind: str = "value"
    source: list = field(default_factory=list)
    pm: str = ""
    note: str = ""
    columns: list = field(default_factory=list)
    columns_fmt: list = field(default_factory=list)

    def to_json(self, section: str) -> dict:
        out = {
            "section": section,
            "label": self.label,
            "kind": self.kind,
            "value": _plain(self.value),
            "se": _plain(self.se),
            "unit": self.unit,
            "fmt": self.fmt,
            "source": list(self.source),
            "pm": self.pm,
            "note": self.note,
        }
        se = out["se"]
        no_se = se is None or (isinstance(se, list) and all(x is None for x in se))
        if self.kind != "table" and no_se:
            out["pm"] = ""  # nothing carries a "+-" (e.g. a single draw)
        if self.kind == "table":
            out["columns"] = list(self.columns)
            out["columns_fmt"] = list(self.columns_fmt)
        out["rendered"] = render_value(out)
        return out


def _plain(v):
    """JSON-safe copy: numpy scalars -> Python, NaN/inf -> None, tuples -> lists."""
    if v is None:
        return None
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_plain(x) for x in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    return v


# --------------------------------------------------------------------------- rendering


def sci(x) -> str:
    """A number for a label: integers below 1e5 as they are, larger or fractional values with
    three significant digits and powers of ten written ``1e6``."""
    x = float(x)
    if x == int(x) and abs(x) < 1e5:
        return str(int(x))
    return format_number(x, ".3g")


def format_number(x, fmt: str) -> str:
    """One number as the page shows it: ``fmt`` is a format spec; ``g`` formats write powers of
    ten as ``1.1e5`` (no ``+`` and no leading zeros); ``None`` is ``n/a``."""
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if fmt == "d":
        return str(int(round(x)))
    s = format(x, fmt)
    if "e" in s:
        mant, exp = s.split("e")
        s = f"{mant}e{int(exp)}"
    return s


def render_value(entry: dict) -> str:
    """The text that stands for a finding's value (what a ``<!-- finding:KEY -->`` marker must be
    followed by)."""
    v, se, fmt, unit, kind = (entry[k] for k in ("value", "se", "fmt", "unit", "kind"))
    if kind == "table":
        return "not computed at this configuration" if v is None else f"table of {len(v)} rows"
    if v is None or (isinstance(v, list) and all(x is None for x in v)):
        return "not computed at this configuration"
    tail = f" {unit}" if unit else ""
    if kind == "range":
        return f"{format_number(v[0], fmt)} .. {format_number(v[1], fmt)}{tail}"
    if kind == "count":
        return f"{format_number(v[0], 'd')} of {format_number(v[1], 'd')}"
    if isinstance(v, list):
        ses = se if isinstance(se, list) else [None] * len(v)
        parts = [_pm(x, s, fmt) for x, s in zip(v, ses, strict=True)]
        return " / ".join(parts) + tail
    return _pm(v, se, fmt) + tail


def _pm(x, se, fmt: str) -> str:
    if se is None:
        return format_number(x, fmt)
    return f"{format_number(x, fmt)} ± {format_number(se, _se_fmt(fmt, se))}"


def _se_fmt(fmt: str, se: float | None = None) -> str:
    """Standard errors get the value's decimals (fixed formats) unless they would round to zero
    there, else two significant digits."""
    if fmt.endswith("f"):
        decimals = int(fmt.rstrip("f").split(".")[-1] or 0)
        if se is None or abs(se) >= 0.5 * 10.0**-decimals:
            return fmt.lstrip("+")
    return ".2g"


def _escape(text: str) -> str:
    """Plain text made safe for Markdown (MyST): ``*`` would start emphasis, ``|`` a cell."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("|", "\\|")


def _table_markdown(entry: dict) -> list[str]:
    cols, fmts = entry["columns"], entry["columns_fmt"]
    out = ["| " + " | ".join(_escape(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in entry["value"] or []:
        cells = [
            _escape(str(c)) if f == "" or isinstance(c, str) else format_number(c, f)
            for c, f in zip(row, fmts, strict=True)
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def render_markdown(doc: dict) -> str:
    """The findings page (``results/findings.md``, published as ``docs/findings.md``) from the JSON
    document of :func:`document`; a pure function of ``doc``."""
    src = doc["source"]
    lines = [
        "# Findings",
        "",
        "<!-- Generated by attnscale.experiments.findings from findings.json; do not edit. -->",
        "",
        "What the simulations say, every number computed from the results tables of one run by",
        "`attnscale.experiments.findings` (rule `findings`). Nothing on this page is typed by hand.",
        "",
        f"* **Run:** configuration `{src['configuration']}`; tables made at commit "
        f"`{', '.join(src['git_commit']) or 'unknown'}` (attnscale {src['attnscale_version']}), "
        f"root seed `{src['root_seed']}`.",
        "* **Regenerate:** `snakemake --cores all findings` writes `results/findings.md` and "
        "`results/findings.json`; `python -m attnscale.experiments.findings publish` copies them "
        "to `docs/` (`tests/test_findings.py` checks that this page is the rendering of "
        "`docs/findings.json`).",
        "* **Keys:** each finding ends with its key; prose elsewhere quotes a value as "
        "`<!-- finding:KEY -->value` ([the rule](pipeline.md#numbers-in-the-prose)).",
        "* **±:** what it means is stated with each finding; most are one standard error of a "
        "mean over independent draws ([statistics](pipeline.md#statistics)).",
        "",
    ]
    for sec in doc["sections"]:
        lines += [f"## {_escape(sec['title'])}", ""]
        refs = []
        if sec.get("figure"):
            refs.append(f"figure `{sec['figure']}`")
        if sec.get("doc"):
            refs.append(f"theory: [{sec['doc']}]({sec['doc']})")
        if refs:
            lines += ["(" + "; ".join(refs) + ")", ""]
        for key in sec["keys"]:
            e = doc["findings"][key]
            meta = [f"`{key}`"]
            if e["pm"]:
                meta.append(f"±: {e['pm']}")
            meta.append("from " + ", ".join(f"`{s}`" for s in e["source"]))
            if e["note"]:
                meta.append(_escape(e["note"]))
            if e["kind"] == "table" and e["value"] is not None:
                lines += [f"* {_escape(e['label'])} ({'; '.join(meta)}):", ""]
                lines += ["  " + t for t in _table_markdown(e)]
                lines += [""]
            else:
                lines += [
                    f"* {_escape(e['label'])}: **{_escape(e['rendered'])}** ({'; '.join(meta)})"
                ]
        lines += [""]
    return "\n".join(lines).rstrip("\n") + "\n"


#: A generated table in a page: the rendering of a table finding between two comments, each on
#: a line of its own (docs/pipeline.md#numbers-in-the-prose). Group 1 is the key as written:
#: ``KEY`` (the default run's findings) or ``NAME:KEY`` (those of the run of ``config/NAME.yaml``).
TABLE_BLOCK = re.compile(
    r"^<!-- finding-table:((?:[a-z0-9][a-z0-9\-]*:)?[A-Za-z0-9_.\-]+) -->\n(.*?)"
    r"^<!-- /finding-table -->$",
    re.S | re.M,
)


def render_table_blocks(text: str, doc: dict, name: str = "") -> str:
    """``text`` with every generated table of configuration ``name`` (``""``: the default run)
    replaced by the rendering of its finding in ``doc`` (the same Markdown table as on the
    findings page); a pure function, so a test can check that a page holds exactly the rendering.
    Blocks of other configurations are left alone. An unknown key or a finding that is not a
    table is a ``KeyError``/``ValueError`` naming it."""

    def one(m):
        full = m.group(1)
        block_name, _, key = full.rpartition(":")
        if block_name != name:
            return m.group(0)
        if key not in doc["findings"]:
            raise KeyError(f"generated table of an unknown finding {key!r}")
        e = doc["findings"][key]
        if e["kind"] != "table":
            raise ValueError(f"finding {key!r} is not a table")
        body = "\n".join(_table_markdown(e)) if e["value"] is not None else e["rendered"]
        return f"<!-- finding-table:{full} -->\n{body}\n<!-- /finding-table -->"

    return TABLE_BLOCK.sub(one, text)


# --------------------------------------------------------------------------- reading tables


def frame(x) -> pd.DataFrame:
    """An input table, or a list of tables (concatenated); an empty list is :class:`NotAvailable`."""
    if isinstance(x, pd.DataFrame):
        return x
    if not x:
        raise NotAvailable("no table")
    return pd.concat(list(x), ignore_index=True)


def near(series: pd.Series, value: float, rtol: float = 1e-6) -> pd.Series:
    """Rows whose ``series`` equals ``value`` up to ``rtol`` (grid values pass through text)."""
    return np.isclose(series.astype(float), float(value), rtol=rtol, atol=1e-12)


def pick(df: pd.DataFrame, **conds) -> pd.DataFrame:
    """Rows of ``df`` matching every ``column=value`` (floats compared with :func:`near`);
    :class:`NotAvailable` (naming the condition) when none match or a column is missing."""
    mask = np.ones(len(df), dtype=bool)
    for col, val in conds.items():
        if col not in df.columns:
            raise NotAvailable(f"no column {col!r}")
        if isinstance(val, str):
            mask &= (df[col] == val).to_numpy()
        else:
            mask &= np.asarray(near(df[col], val))
    out = df[mask]
    if out.empty:
        what = ", ".join(f"{k} = {v}" for k, v in conds.items())
        raise NotAvailable(f"no rows with {what}")
    return out


def one(df: pd.DataFrame, col: str, **conds) -> float:
    """The single value of ``col`` in the rows matching ``conds`` (their mean if the rows repeat
    one value, e.g. a per-draw constant)."""
    sub = pick(df, **conds)
    vals = sub[col].astype(float).to_numpy()
    if not np.allclose(vals, vals[0], rtol=1e-9, equal_nan=True):
        raise ValueError(f"{col} is not unique for {conds}: {vals[:5]}")
    return float(vals[0])


def mean_se_count(values) -> tuple[float, float | None, int]:
    """Mean, standard error (:func:`attnscale.core.stats.mean_se`: ``ddof = 1``; ``None`` for one
    value) and count of ``values``, in the form a finding holds (docs/pipeline.md#statistics)."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        raise NotAvailable("no values")
    mean, se = stats.mean_se(v)
    return float(mean), (float(se) if v.size > 1 else None), int(v.size)


def compute(key: str, label: str, fn, **meta) -> Finding:
    """``Finding(key, label, **fn())`` with ``meta`` as defaults; if ``fn`` raises
    :class:`NotAvailable` the value is ``None`` and the note says why."""
    try:
        got = fn()
    except NotAvailable as why:
        note = f"not computed at this configuration: {why}"
        return Finding(key=key, **{"label": label, **meta, "value": None, "se": None, "note": note})
    return Finding(key=key, **{"label": label, **meta, **got})


@dataclass(frozen=True)
class Declared:
    """One finding declared (docs/pipeline.md#numbers-in-the-prose): its key, label, the function
    of the family's tables that computes it (``fn(tables) -> dict``, as :func:`compute`'s, a few
    dozen lines at most) and the metadata (format, kind, source tables, what "+-" means)."""

    key: str
    label: str
    fn: object
    meta: dict = field(default_factory=dict)


def declare(key: str, label: str, fn, **meta) -> Declared:
    """A :class:`Declared` finding."""
    return Declared(key, label, fn, meta)


def evaluate(declared, tables) -> list[Finding]:
    """Every declared finding computed from ``tables`` (:func:`compute`), in order."""
    return [compute(d.key, d.label, lambda d=d: d.fn(tables), **d.meta) for d in declared]


#: ``mean_se`` was :func:`mean_se_count`'s name; :func:`attnscale.core.stats.mean_se` is the statistic.
