"""Findings of the critical-exponent figures (docs/paper-b-beyond.md#critical-exponent-across-dimensions,
docs/paper-b-beyond.md#keys-on-a-submanifold, docs/paper-b-beyond.md#rope-like-keys): fitted
exponents of beta*(n) for uniform keys, on great sub-spheres and for RoPE-like keys."""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import (
    PM_FIT_SCALED,
    Finding,
    NotAvailable,
    declare,
    evaluate,
    pick,
    sci,
)

__all__ = [
    "FITS",
    "POINTS",
    "PM_POINT",
    "EXPONENT_FINDINGS",
    "exponent_findings",
    "near_n",
]

FITS = "paper_b_exponent/fits.csv"
POINTS = "paper_b_exponent/points.csv"
PM_POINT = "one standard error of beta* by the delta method over the contexts of the point"


def _fit(fits, family, model, **conds) -> pd.DataFrame:
    return pick(fits, family=family, model=model, **conds).sort_values(["d", "k"])


def near_n(series: pd.Series, n: float) -> pd.Series:
    return np.isclose(series.astype(float), float(n))


def _value_se(r, digits=4, extra="") -> str:
    """A fitted exponent as a table cell: ``alpha ± SE`` (chi^2-scaled SE)."""
    return f"{r['alpha']:.{digits}f} ± {r['se_alpha_scaled']:.{digits}f}{extra}"


# --------------------------------------------------------------------------- uniform keys


def _uniform_count(t):
    f = _fit(t["fits"], "uniform", "correction", method="d2q")
    return {
        "label": "uniform keys: fits (with the finite-n term) within 2 chi^2-scaled SE of 2/(d-1)",
        "value": [int(f["within_2se"].sum()), len(f)],
    }


def _uniform_table(t):
    fits = t["fits"]
    records = []
    for d in sorted(pick(fits, family="uniform", method="d2q")["d"].unique()):
        row = [int(d), 2.0 / (d - 1)]
        for model in ("correction", "plain", "upper"):
            try:
                f = pick(fits, family="uniform", method="d2q", d=d, model=model).iloc[0]
                row += [_value_se(f), f["z"]]
            except NotAvailable:
                row += ["n/a", None]
        records.append(row)
    return {"label": "uniform keys: fitted exponent against 2/(d-1)", "value": records}


def _worst(t):
    f = _fit(t["fits"], "uniform", "correction", method="d2q")
    r = f.loc[f["z"].abs().idxmax()]
    return {
        "label": f"uniform keys: largest |z| of the correction fit, at d = {int(r['d'])}: "
        f"z, chi^2, dof",
        "value": [r["z"], r["chi2"], r["dof"]],
        "fmt": ".3g",
    }


def _plain_bias(t):
    f = _fit(t["fits"], "uniform", "plain", method="d2q")
    f = f.assign(bias=f["alpha"] - f["alpha_theory"])
    r = f.loc[f["bias"].idxmax()]
    return {
        "label": f"uniform keys: largest bias of a pure power law over all n, at d = "
        f"{int(r['d'])}: alpha - 2/(d-1) and its z",
        "value": [r["bias"], r["z"]],
    }


def _rise(t):
    p = pick(t["points"], family="uniform", method="d2q")
    d = p["d"].max()
    p = p[p["d"] == d].sort_values("n")
    y = p["beta_star"] / p["n"] ** (2.0 / (d - 1))
    return {
        "label": f"uniform keys, d = {int(d)}: beta*/n^(2/(d-1)) at n = {sci(p['n'].iloc[-1])} "
        f"over its value at n = {sci(p['n'].iloc[0])}, minus 1",
        "value": 100.0 * (y.iloc[-1] / y.iloc[0] - 1.0),
    }


def _prefactor(t):
    p = pick(t["points"], family="uniform", method="d2q")
    records = []
    for d, sub in p.groupby("d", sort=True):
        top = sub.loc[sub["n"].idxmax()]
        records.append((int(d), top["n"], top["beta_star"] / top["n"] ** (2.0 / (d - 1))))
    return {
        "label": f"uniform keys: beta*(n)/n^(2/(d-1)) at n = {sci(records[0][1])}, d = "
        + " / ".join(str(d) for d, _, _ in records),
        "value": [v for _, _, v in records],
    }


# --------------------------------------------------------------------------- sub-spheres


def _subsphere(t):
    records = []
    f = pick(t["fits"], family="subsphere", model="correction")
    for k in sorted(f["k"].unique()):
        row = [int(k), 2.0 / (k - 1)]
        for method in ("d2q", "full"):
            sub = f[(f["k"] == k) & (f["method"] == method)]
            if sub.empty:
                row += ["n/a", None]
            else:
                r = sub.iloc[0]
                row += [_value_se(r, extra=f" (n <= {int(r['n_max'])})"), r["z"]]
        records.append(row)
    d = int(f["d"].iloc[0])
    return {
        "label": f"great sub-spheres S^(k-1) of S^{d - 1}: fitted exponent (correction model) "
        "against 2/(k-1): exact law of the projection, and keys drawn in the ambient space",
        "value": records,
    }


# --------------------------------------------------------------------------- RoPE-like keys


def _kappa(k, d) -> str:
    return "0" if k == 0 else ("inf" if np.isinf(k) else f"{k / d:g}d")


def _rope_table(t):
    f = pick(t["fits"], family="rope", model="plain")
    records = []
    for d in sorted(f["d"].unique()):
        sub = f[f["d"] == d].sort_values("kappa")
        cells = [f"kappa = {_kappa(r['kappa'], d)}: {_value_se(r, 3)}" for _, r in sub.iterrows()]
        records.append([int(d), 2.0 / (d - 1), *cells])
    n = pick(t["points"], family="rope")["n"]
    width = max(len(r) for r in records)
    records = [r + [""] * (width - len(r)) for r in records]
    return {
        "label": f"RoPE-like keys: pure power-law exponent over n = {n.min():.0f} .. "
        f"{n.max():.0f} by content concentration kappa",
        "value": records,
        "columns": ["d", "2/(d-1)", *[f"content {i + 1}" for i in range(width - 2)]],
        "columns_fmt": ["d", ".3f", *[""] * (width - 2)],
    }


def _rope_long(t):
    r = pick(t["fits"], family="rope_long", model="top3").iloc[0]
    return {
        "label": f"repeated content key, d = {int(r['d'])}: exponent of beta*(n) over the "
        f"three largest n ({sci(r['n_min'])} .. {sci(r['n_max'])})",
        "value": r["alpha"],
        "se": r["se_alpha_scaled"],
    }


def _rope_long_beta(t):
    points = t["points"]
    p = pick(points, family="rope_long").sort_values("n").iloc[-1]
    u = pick(points, family="uniform", method="d2q", d=p["d"], n=p["n"]).iloc[0]
    return {
        "label": f"d = {int(p['d'])}, n = {sci(p['n'])}: beta* of the repeated key / of "
        "uniform keys",
        "value": [p["beta_star"], u["beta_star"]],
        "se": [p["se"], u["se"]],
    }


def _rope_ratios(t, kind):
    """``{end: (n, lowest, highest)}`` over d of beta* of the ``kind`` content (``"repeated"``
    or ``"vmf"``) over that of uniform content, at the smallest (``"min"``) and largest n."""
    p = pick(t["points"], family="rope")
    out = {}
    for end in ("min", "max"):
        n = getattr(p["n"], end)()
        ratios = []
        for d in sorted(p["d"].unique()):
            q = p[(p["d"] == d) & near_n(p["n"], n)]
            base = q[q["kappa"] == 0]["beta_star"]
            other = (
                q[np.isinf(q["kappa"])]
                if kind == "repeated"
                else q[(q["kappa"] > 0) & np.isfinite(q["kappa"])]
            )
            if base.empty or other.empty:
                raise NotAvailable(f"no kappa = 0 / {kind} point at d = {d}")
            ratios.append(float(other["beta_star"].iloc[0] / base.iloc[0]))
        out[end] = (n, min(ratios), max(ratios))
    return out


def _rope_vmf(t, end):
    n, lo, hi = _rope_ratios(t, "vmf")[end]
    return {
        "label": f"concentrated content (kappa = 4d): beta* over the uniform-content beta*, "
        f"minus 1, range over d, at n = {n:.0f}",
        "value": [100.0 * (lo - 1.0), 100.0 * (hi - 1.0)],
    }


def _rope_repeated(t):
    n, lo, hi = _rope_ratios(t, "repeated")["min"]
    return {
        "label": f"repeated content key: beta* over the uniform-content beta* at n = "
        f"{n:.0f}, range over d",
        "value": [lo, hi],
        "kind": "range",
    }


#: The findings of the critical-exponent figures, declared (functions of the tables
#: ``{"fits": fits.csv, "points": points.csv}``).
EXPONENT_FINDINGS = [
    declare(
        "exponent.uniform_within_2se",
        "uniform keys within 2 SE",
        _uniform_count,
        kind="count",
        source=[FITS],
    ),
    declare(
        "exponent.uniform_table",
        "uniform keys, fitted exponents",
        _uniform_table,
        kind="table",
        source=[FITS],
        pm=PM_FIT_SCALED,
        columns=[
            "d",
            "2/(d-1)",
            "correction fit",
            "z",
            "plain (all n)",
            "z",
            "upper (large n)",
            "z",
        ],
        columns_fmt=["d", ".4f", "", ".2f", "", ".2f", "", ".2f"],
    ),
    declare(
        "exponent.uniform_worst",
        "largest |z|",
        _worst,
        source=[FITS],
        note="z uses the chi^2-scaled SE",
    ),
    declare("exponent.plain_bias", "pure power-law bias", _plain_bias, fmt=".3g", source=[FITS]),
    declare("exponent.uniform_rise", "finite-n rise", _rise, fmt=".0f", unit="%", source=[POINTS]),
    declare(
        "exponent.prefactor_at_largest_n",
        "prefactor at the largest n",
        _prefactor,
        fmt=".3g",
        source=[POINTS],
    ),
    declare(
        "exponent.subsphere_table",
        "sub-spheres",
        _subsphere,
        kind="table",
        source=[FITS],
        pm=PM_FIT_SCALED,
        columns=["k", "2/(k-1)", "exact law", "z", "keys in R^d", "z"],
        columns_fmt=["d", ".3f", "", ".2f", "", ".2f"],
    ),
    declare(
        "exponent.rope_table",
        "RoPE exponents",
        _rope_table,
        kind="table",
        source=[FITS, POINTS],
        pm=PM_FIT_SCALED,
    ),
    declare(
        "exponent.rope_long_top3",
        "repeated key exponent",
        _rope_long,
        fmt=".2f",
        pm=PM_FIT_SCALED,
        source=[FITS],
    ),
    declare(
        "exponent.rope_long_beta",
        "repeated key beta*",
        _rope_long_beta,
        fmt=".3g",
        pm=PM_POINT,
        source=[POINTS],
    ),
    *(
        declare(
            f"exponent.rope_vmf_excess_n{end}",
            f"vMF content at the {what} n",
            partial(_rope_vmf, end=end),
            kind="range",
            fmt="+.0f",
            unit="%",
            source=[POINTS],
        )
        for end, what in (("min", "smallest"), ("max", "largest"))
    ),
    declare(
        "exponent.rope_repeated_ratio",
        "repeated-key ratio",
        _rope_repeated,
        fmt=".2f",
        source=[POINTS],
    ),
]


def exponent_findings(*, fits: pd.DataFrame, points: pd.DataFrame) -> list[Finding]:
    """Uniform keys (d = 3 .. 10), great sub-spheres S^{k-1} of S^{d-1} and RoPE-like keys: the
    declarations :data:`EXPONENT_FINDINGS`."""
    return evaluate(EXPONENT_FINDINGS, {"fits": fits, "points": points})
