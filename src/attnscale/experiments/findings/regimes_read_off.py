"""Findings of the practical reading of the regimes figure for one head (docs/regimes.md#practical-reading):
gamma* of the head, the tokens in the top group that lower it by the configured drop, and the
simulated drops against the first-order group formula and the exact finite-d theory of ``k``
copies. Called by :func:`attnscale.experiments.findings.regimes.regimes_findings`."""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.experiments.findings.record import (
    Finding,
    NotAvailable,
    declare,
    evaluate,
    frame,
    pick,
)

__all__ = ["READ_OFF", "PM_PAIRED", "READ_OFF_FINDINGS", "read_off_findings"]

READ_OFF = "regimes/read_off.csv"

PM_PAIRED = (
    "one standard error by the paired delta method over the same {k} query rows for every k "
    "(per-row influence values)"
)


def _theory_rows(R):
    """The theory rows by decreasing copy cosine and the head of a label about them."""
    t = pick(R, source="theory").sort_values("copy_cosine", ascending=False)
    r = t.iloc[0]
    return t, f"d = {int(r['d'])}, n = {int(r['n'])}, rho = {float(r['rho']):g}"


def _gamma_star(R):
    t, head = _theory_rows(R)
    return {
        "label": f"{head}: exact finite-d gamma* of the head without copies",
        "value": t["gamma_star_exact"].iloc[0],
    }


def _exact_copies(R):
    """The theory row of exact copies (cosine 1) and the head of a label."""
    t, head = _theory_rows(R)
    return pick(t, copy_cosine=1.0).iloc[0], head


def _k_exact(R):
    r, head = _exact_copies(R)
    return {
        "label": f"{head}: tokens in the top group (query and exact copies) that lower gamma* "
        f"by {100.0 * float(r['shift']):g} % (first-order group formula)",
        "value": r["k_needed"],
    }


def _drop_integer_k(R):
    r, head = _exact_copies(R)
    lo, hi = int(np.floor(r["k_needed"])), int(r["k_ceil"])
    return {
        "label": f"{head}: drop of gamma* with k = {lo} and k = {hi} exact tokens in the top "
        "group (first-order group formula)",
        "value": [100.0 * r["shift_at_floor"], 100.0 * r["shift_at_ceil"]],
    }


def _k_copies(R):
    t, head = _theory_rows(R)
    c = t[t["copy_cosine"].astype(float) < 1.0]
    if c.empty:
        raise NotAvailable("no copy cosine below 1")
    shift = 100.0 * float(c["shift"].iloc[0])
    return {
        "label": f"{head}: tokens in the top group (query and copies at cosine "
        + " / ".join(f"{x:g}" for x in c["copy_cosine"])
        + f" with it) that lower gamma* by {shift:g} %",
        "value": c["k_needed"].tolist(),
    }


def _simulated(R, col):
    """The simulated rows with copies (``k > 1``) by ``k``, which must hold ``col``; the head of
    a label about them; what their "+-" means."""
    s = pick(R, source="simulation")
    s = s[s["k"].astype(float) > 1].sort_values("k")
    if s.empty:
        raise NotAvailable("no simulated copies")
    if col not in s.columns:
        raise NotAvailable(f"no column {col!r}")
    ks = " and ".join(f"k = {int(k)}" for k in s["k"])
    head = f"d = {int(s['d'].iloc[0])}, n = {int(s['n'].iloc[0])}: relative drop of beta* with {ks}"
    return s, head, PM_PAIRED.format(k=int(s["contexts"].iloc[0]))


def _drop_sim(R):
    s, head, pm = _simulated(R, "shift_sim")
    return {
        "label": head + ", simulated",
        "value": s["shift_sim"].tolist(),
        "se": s["shift_sim_se"].tolist(),
        "pm": pm,
    }


def _drop(R, col, what):
    s, head, _ = _simulated(R, col)
    return {"label": head + what, "value": s[col].tolist()}


def _drop_excess(R, col, what):
    s, head, pm = _simulated(R, col)
    return {
        "label": head + what,
        "value": (s[col] - s["shift_sim"]).tolist(),
        "se": s["shift_sim_se"].tolist(),
        "pm": pm,
    }


def _declare(key, label, fn, fmt, **meta):
    return declare(f"regimes.read_off.{key}", label, fn, fmt=fmt, source=[READ_OFF], **meta)


#: The findings of the practical reading, declared (functions of ``read_off.csv``).
READ_OFF_FINDINGS = [
    _declare("gamma_star", "read-off gamma*", _gamma_star, ".4f"),
    _declare("k_exact", "k for exact copies", _k_exact, ".3g"),
    _declare("drop_integer_k", "drop at integer k", _drop_integer_k, ".1f", unit="%"),
    _declare("k_copies", "k for copies", _k_copies, ".3g"),
    _declare("drop_sim", "simulated drop", _drop_sim, ".6f"),
    _declare(
        "drop_formula",
        "formula drop",
        partial(_drop, col="shift_theory", what=", first-order group formula"),
        ".6f",
    ),
    _declare(
        "formula_excess",
        "formula minus simulation",
        partial(_drop_excess, col="shift_theory", what=": formula minus simulation"),
        ".2g",
    ),
    _declare(
        "drop_exact",
        "exact drop",
        partial(_drop, col="shift_exact", what=", exact finite-d theory of k copies"),
        ".6f",
    ),
    _declare(
        "exact_minus_sim",
        "exact minus simulation",
        partial(_drop_excess, col="shift_exact", what=": exact theory minus simulation"),
        ".2g",
    ),
]


def read_off_findings(*, read_off) -> list[Finding]:
    """The practical reading for one head (docs/regimes.md#practical-reading): the declarations
    :data:`READ_OFF_FINDINGS` computed from ``results/regimes/read_off.csv`` (theory rows,
    ``source = "theory"``, one per copy cosine; simulated rows, ``source = "simulation"``, one
    per ``k``)."""
    return evaluate(READ_OFF_FINDINGS, frame(read_off))
