"""Comparison of a smoke run's figure-data tables with the committed golden tables, shared by
``tests/test_workflow.py::test_golden_tables`` and ``tools/golden_across_cpus.py``
(docs/pipeline.md#golden-tables-across-cpus).

Same seeds and code on another CPU change a value only through floating-point rounding: OpenBLAS
picks its kernels by CPU (AVX2 "Haswell", AVX-512 "SkylakeX", ...) and so does numpy for its
SIMD loops, and different kernels sum in a different order. Each column is compared with a
tolerance that follows from how it is computed, listed in :data:`GOLDEN_COLUMNS`:

* ``EPS = 1e-9`` is the relative error allowed to every *primary* value: a simulated value (one
  draw), a theory value, a configuration value, and their means over draws and maxima. Primary
  columns are compared at ``rtol = EPS`` (``atol = 1e-12`` near zero): kernels differ in the last
  bits, amplified in the softmax and the angle ratios to at most 2.8e-12 relative in the
  measurements of the docs (a factor of 360 below ``EPS``).
* A *derived* column (an SE, a difference of near-equal values, a z-score, a boolean that
  thresholds one, a Kolmogorov-Smirnov statistic and its p-value) gets the largest change that
  per-draw errors of relative size ``EPS`` can cause, bounded from the reference row itself (the
  derivation is in :func:`tolerance`). Its condition number (value over the spread it is made of)
  can be 1e4 or more, so one rtol for all columns cannot work: issue 22, where ``z = 11265`` of a
  paired difference whose two draws agree to 1e-4 moved by 9e-9 relative between the Haswell and
  SkylakeX kernels.
* Integer columns (counts, sizes) and configuration flags are equal; text columns are equal.

Every numeric column of every golden file must be in the table
(``tests/test_workflow.py::test_every_golden_column_is_classified``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from attnscale.experiments.paper_a_theorem import FINITE_D_ABS_TOL
from attnscale.layer.observables import grid_observables

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests/golden"

EPS = 1e-9  # rtol of primary columns = relative error of one draw's value, for derived columns
ATOL = 1e-12  # primary values at or near zero

# Kinds of column (``of``: the columns, or pandas expressions of them, that the tolerance uses)
EXACT = "exact"  # integer count/size or configuration flag: equal
PRIMARY = "primary"  # simulated/theory/configuration value, mean or max over draws: rtol = EPS
SE = "se"  # SE of the mean of k primary draws; of = (mean, k)
DIFF = "diff"  # sum of terms of either sign (cancellation); of = the terms
PAIRED_MEAN = "paired_mean"  # mean of k paired differences a_i - b_i; of = PAIRED below
PAIRED_SE = "paired_se"  # their SE; of = PAIRED
PAIRED_Z = "paired_z"  # their mean / SE; of = PAIRED
FLAG = "flag"  # |z| <= threshold; of = (z,)
ACCEPT = "accept"  # |m| <= max(3 se, threshold); of = (m, se)
KS = "ks"  # Kolmogorov-Smirnov distance; of = (d,); where = rows of a one-sample test
KS_P = "ks_p"  # its p-value; of = (statistic, sample size); where = rows of a one-sample test


@dataclass(frozen=True)
class Col:
    kind: str
    of: tuple[str, ...] = ()
    threshold: float | None = None
    where: str | None = None


X, P = Col(EXACT), Col(PRIMARY)


def se(mean: str, k: str) -> Col:
    return Col(SE, (mean, k))


def paired(kind: str, a: str, a_se: str, mean: str, se: str, k: str = "trials") -> Col:
    """Differences ``a_i - b_i`` over ``k`` draws: ``a`` and ``a_se`` the mean and SE of the
    ``a_i``, ``mean`` and ``se`` those of the differences."""
    return Col(kind, (a, a_se, mean, se, k))


def flag(z: str, threshold: float) -> Col:
    return Col(FLAG, (z,), threshold)


ONE_SAMPLE = "stat == 'nearest_scaled'"  # critical laws: one-sample KS rows (others: two-sample)
_D = ("diff_mean", "diff_se")
_FD = ("diff_fd_mean", "diff_fd_se")
_NORMS = ("sim_mean - simplex_n_norms", "(sim_mean - simplex_n_norms) / z_norms")

THEOREM = {  # theorem_table.csv and finite_size_data.csv (experiments/paper_a_theorem.theorem_table)
    "d": X,
    "n": X,
    "trials": X,
    "rho": P,
    "alpha": P,
    "gamma_factor": P,
    "rho_hat_mean": P,
    "q_hat_mean": P,
    "gamma_mean": P,
    "sim_mean": P,
    "sim_se": se("sim_mean", "trials"),
    "simplex_n": P,
    "limit": P,
    "simplex_n_norms": P,
    "finite_d": P,
    # sim_i - simplex_n_i, its z and |z| <= 2
    "diff_mean": paired(PAIRED_MEAN, "sim_mean", "sim_se", *_D),
    "diff_se": paired(PAIRED_SE, "sim_mean", "sim_se", *_D),
    "z": paired(PAIRED_Z, "sim_mean", "sim_se", *_D),
    "within_2se": flag("z", 2.0),
    # eta: sim_i - simplex_n_norms_i (mean and SE not stored: from the means and z_norms)
    "z_norms": paired(PAIRED_Z, "sim_mean", "sim_se", *_NORMS),
    # sim_i - finite_d_i
    "diff_fd_mean": paired(PAIRED_MEAN, "sim_mean", "sim_se", *_FD),
    "diff_fd_se": paired(PAIRED_SE, "sim_mean", "sim_se", *_FD),
    "z_fd": paired(PAIRED_Z, "sim_mean", "sim_se", *_FD),
    "within_2se_fd": flag("z_fd", 2.0),
    "within_3se_fd": flag("z_fd", 3.0),
    "accept_fd": Col(ACCEPT, _FD, FINITE_D_ABS_TOL),
}

CRITICAL_LAWS = {  # critical_laws/d*_summary.csv (experiments/paper_b_laws.critical_laws)
    "d": X,
    "n": X,
    "samples": X,
    "gamma": P,
    "beta": P,
    "mean": P,
    "se": se("mean", "samples"),
    # SE over limit_trials >= samples draws: samples gives the larger (safe) bound
    "limit_mean": P,
    "limit_se": se("limit_mean", "samples"),
    "ks_vs_limit": Col(KS, ("d",), where=ONE_SAMPLE),
    "ks_pvalue": Col(KS_P, ("ks_vs_limit", "samples"), where=ONE_SAMPLE),
    "ks_vs_exact": Col(KS, ("d",), where=ONE_SAMPLE),
    "ks_exact_pvalue": Col(KS_P, ("ks_vs_exact", "samples"), where=ONE_SAMPLE),
}

PROFILE = {  # profile_d*.csv (experiments/paper_b_laws.weight_profile)
    "d": X,
    "n": X,
    "trials": X,
    "k": X,
    "beta": P,
    "m_n": P,
    "x": P,
    "ratio_mean": P,
    "ratio_se": se("ratio_mean", "trials"),
    "ratio_limit": P,
    "ratio_finite_beta": P,
    "ratio_finite_beta_shifted": P,
    "mass_mean": P,
    "mass_se": se("mass_mean", "trials"),
    "mass_limit": P,
    "mass_finite_beta": P,
}

#: golden file -> {numeric column -> Col}. Text columns (labels, hashes, seeds) must be equal.
GOLDEN_COLUMNS: dict[str, dict[str, Col]] = {
    "results/paper_a/figure1_data.csv": {
        "d": X,
        "n": X,
        "trials": X,
        "alpha": P,
        "rho": P,
        "gamma": P,
        "gamma_c_nominal": P,
        "lambda_mean": P,
        "lambda_se": se("lambda_mean", "trials"),
        "rho_hat_mean": P,
        "rho_hat_se": se("rho_hat_mean", "trials"),
        "lambda_simplex_n_mean": P,
        "lambda_simplex_n_se": se("lambda_simplex_n_mean", "trials"),
        # the observables of the registry on Figure 1's grid (docs/pipeline.md#the-observable-registry)
        **{
            f"{c}_{s}": P if s == "mean" else se(f"{c}_mean", "trials")
            for o in grid_observables()
            for c in (o.name, f"{o.name}_simplex_n")
            for s in ("mean", "se")
        },
    },
    "results/paper_a/lambda_critical_data.csv": {
        "d": X,
        "n": X,
        "trial": X,
        "alpha": P,
        "rho": P,
        "rho_hat": P,
        "q_hat": P,
        "gamma": P,
        "beta": P,
        "lambda": P,
        "lambda_simplex_n": P,
        "lambda_limit": P,
        "diff_vs_simplex_n": Col(DIFF, ("lambda", "lambda_simplex_n")),
        **{
            c: P
            for o in grid_observables()
            for c in (o.name, f"{o.name}_simplex_n", f"{o.name}_limit")
        },
    },
    "results/paper_a/figure2_data.csv": {
        "d": X,
        "n": X,
        "trials": X,
        "probes": X,
        "alpha": P,
        "rho": P,
        "gamma": P,
        "gamma_c_nominal": P,
        "eta_mean": P,
        "eta_se": se("eta_mean", "trials"),
        "eta_rel_mean": P,
        "eta_rel_se": se("eta_rel_mean", "trials"),
        "eta_plateau_mean": P,
        "eta_plateau_se": se("eta_plateau_mean", "trials"),
        "rho_hat_mean": P,
        "rho_hat_se": se("rho_hat_mean", "trials"),
        "eta_simplex_n_norms_mean": P,
        "eta_simplex_n_norms_se": se("eta_simplex_n_norms_mean", "trials"),
    },
    "results/paper_a/theorem_table.csv": THEOREM,
    "results/paper_a/finite_size_data.csv": THEOREM,
    "results/paper_a/scaling_rules.csv": {  # closed forms of the configuration
        "L": X,
        "n": X,
        "is_overlay_n": X,
        "m": P,
        "gamma_ratio": P,
        "rho": P,
        "gamma_eff": P,
    },
    "results/paper_b/phase_diagram.csv": {
        "d": X,
        "n": X,
        "trials": X,
        "beta": P,
        "gamma": P,
        "top_weight_mean": P,
        "top_weight_se": se("top_weight_mean", "trials"),
        "m_n": P,
        "subcritical_asymptote": P,
    },
    "results/paper_b/poisson_limit_d5.csv": {
        "d": X,
        "trials": X,
        "gamma": P,
        "c": P,
        "top_weight_mean": P,
        "top_weight_se": se("top_weight_mean", "trials"),
        "inv_top_weight_mean": P,
        "inv_top_weight_se": se("inv_top_weight_mean", "trials"),
        "inv_top_weight_closed_form": P,
        "subcritical_asymptote": P,
    },
    "results/paper_b/profile_d5.csv": PROFILE,
    "results/paper_b/profile_d3.csv": PROFILE,
    "results/paper_b/vector_fields_sweep.csv": {  # rms and mean cosine over one context's grid
        "n": X,
        "context": X,
        "is_panel": X,
        "beta_drift_transition": X,
        "beta_critical": X,
        "beta": P,
        "rms_disp": P,
        "rms_dev_from_drift": P,
        "rms_dev_from_mean_field": P,
        "mean_cos_disp_drift": P,
        "rms_drift_theory": P,
        "rms_noise_theory": P,
        "rms_nearest_theory": P,
    },
    "results/paper_b/critical_laws/d3_summary.csv": CRITICAL_LAWS,
    "results/paper_b/critical_laws/d5_summary.csv": CRITICAL_LAWS,
    "results/paper_b/heat_drift_summary.csv": {
        "n": X,
        "contexts": X,
        "beta": P,
        "ratio_mean": P,
        "ratio_se": se("ratio_mean", "contexts"),
        "perp_mean": P,
        "perp_se": se("perp_mean", "contexts"),
        "normal_mean": P,
        "normal_se": se("normal_mean", "contexts"),
        "ratio_quadrature": P,
        "normal_quadrature": P,
        "max_neglected_mass_bound": P,
    },
    "results/paper_b/heat_drift_theory.csv": {
        "beta": P,
        "ratio_quadrature": P,
        "normal_quadrature": P,
        # beta (ratio - 1): the ratio tends to 1 (condition ratio / |ratio - 1|, 300 at beta 1000)
        "correction_quadrature": Col(DIFF, ("beta * ratio_quadrature", "beta")),
    },
}


def golden_files() -> list[str]:
    """The files listed in tests/golden/files.txt."""
    lines = (GOLDEN / "files.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def numeric_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]


def _val(ref: pd.DataFrame, expr: str) -> np.ndarray:
    """A column of ``ref`` or a pandas expression of its columns."""
    out = ref[expr] if expr in ref.columns else ref.eval(expr, engine="python")
    return out.to_numpy(dtype=float)


def tolerance(ref: pd.DataFrame, cols: dict[str, Col], name: str) -> np.ndarray:
    """Largest ``|got - ref|`` allowed per row of the numeric column ``name`` (NaN where the
    reference is NaN: then both must be NaN).

    Model: every per-draw primary value ``x_i`` may carry a relative error ``EPS`` (and aggregation
    by numpy adds only rounding, ~1e-16 relative, covered by the same ``EPS``). With
    ``rms(x) = sqrt(mean^2 + (k - 1) se^2)`` (exact, for k draws with SE ``se``, ddof = 1):

    * SE: ``std`` is a seminorm, ``|std(x + e) - std(x)| <= |e|_2 / sqrt(k - 1)``, and
      ``|e|_2 <= EPS |x|_2 = EPS sqrt(k) rms(x)``, so ``|d se| <= EPS rms(x) / sqrt(k - 1)``
      ``= EPS sqrt(mean^2 / (k - 1) + se^2)``.
    * DIFF ``t_1 + t_2 + ...``: ``EPS * sum |t_j|``.
    * Paired differences ``d_i = a_i - b_i``: ``|e_i| <= EPS (|a_i| + |b_i|)`` and
      ``rms(b) <= rms(a) + rms(d)`` (triangle inequality), so with
      ``A = EPS (2 rms(a) + rms(d))`` the mean moves by at most ``A`` (mean |e| <= rms e) and
      the SE by at most ``B = A / sqrt(k - 1)``. Then ``z = m / se`` moves by at most
      ``(A + |z| B) / (se - B)`` (exact, for ``B < se``; otherwise z is not determined).
    * One-sample KS distance ``D = sup |F_k - F|``: ``F(x (1 + e)) - F(x)`` is at most
      ``EPS sup_x x f(x)``, and ``sup_x x f(x) = (d - 1) / (2 e)`` for the Weibull limit of the
      nearest key (shape ``1 / alpha = (d - 1) / 2``); the exact finite-n law is within 1 %
      of it at the goldens' sizes, so ``EPS (d - 1) / 2`` holds with a margin of e / 1.01.
      Two-sample distances are multiples of ``1 / (k_1 k_2)`` and change only if the order of
      two pooled draws does (not seen): equal to rtol ``EPS``.
    * Its p-value ``kstwo.sf(D, k)`` is monotone in ``D``: the tolerance is how far it moves over
      ``D +- tol(D)`` (plus ``EPS`` relative); two-sample p-values: rtol ``EPS``.
    """
    c = cols[name]
    x = _val(ref, name)
    if c.kind == EXACT:
        return np.where(np.isnan(x), np.nan, 0.0)
    if c.kind == PRIMARY:
        return EPS * np.abs(x) + ATOL
    if c.kind == SE:
        m, k = (_val(ref, e) for e in c.of)
        return EPS * np.sqrt(m**2 / (k - 1) + x**2)
    if c.kind == DIFF:
        return EPS * sum(np.abs(_val(ref, t)) for t in c.of)
    if c.kind in (PAIRED_MEAN, PAIRED_SE, PAIRED_Z):
        a, a_se, m, s, k = (_val(ref, e) for e in c.of)
        rms_a = np.sqrt(a**2 + (k - 1) * a_se**2)
        rms_d = np.sqrt(m**2 + (k - 1) * s**2)
        big_a = EPS * (2 * rms_a + rms_d)
        big_b = big_a / np.sqrt(k - 1)
        if c.kind == PAIRED_MEAN:
            return big_a
        if c.kind == PAIRED_SE:
            return big_b
        with np.errstate(divide="ignore", invalid="ignore"):
            tol = (big_a + np.abs(x) * big_b) / (np.abs(s) - big_b)
        return np.where(np.isnan(x), np.nan, np.where(big_b < np.abs(s), tol, np.inf))
    if c.kind == KS:
        one = ref.eval(c.where, engine="python").to_numpy(dtype=bool)
        d = _val(ref, c.of[0])
        return np.where(np.isnan(x), np.nan, np.where(one, EPS * (d - 1) / 2, EPS * np.abs(x)))
    if c.kind == KS_P:
        one = ref.eval(c.where, engine="python").to_numpy(dtype=bool)
        stat, k = _val(ref, c.of[0]), _val(ref, c.of[1])
        t = tolerance(ref, cols, c.of[0])
        ok = one & np.isfinite(stat)
        band = np.zeros_like(x)
        kk = k[ok].astype(int)
        band[ok] = np.maximum(
            np.abs(stats.kstwo.sf(stat[ok] - t[ok], kk) - x[ok]),
            np.abs(stats.kstwo.sf(stat[ok] + t[ok], kk) - x[ok]),
        )
        return np.where(np.isnan(x), np.nan, band + EPS * np.abs(x))
    raise ValueError(f"{name}: kind {c.kind!r} has no numeric tolerance")


def may_differ(ref: pd.DataFrame, cols: dict[str, Col], name: str) -> np.ndarray:
    """Rows where the boolean column ``name`` may differ from the reference: its test statistic
    lies within its own tolerance of the threshold."""
    c = cols[name]
    if c.kind == FLAG:
        z = _val(ref, c.of[0])
        margin = np.abs(np.abs(z) - c.threshold)
        room = tolerance(ref, cols, c.of[0])
    elif c.kind == ACCEPT:
        m, s = (_val(ref, e) for e in c.of)
        margin = np.abs(np.abs(m) - np.maximum(3.0 * s, c.threshold))
        room = tolerance(ref, cols, c.of[0]) + 3.0 * tolerance(ref, cols, c.of[1])
    else:
        return np.zeros(len(ref), dtype=bool)
    with np.errstate(invalid="ignore"):
        return margin <= room  # NaN (no statistic): False, must be equal


@dataclass
class ColumnResult:
    """One column of one file: ``ratio`` is the largest observed ``|got - ref| / allowed``
    (0: equal; inf: differs where it must not), ``rel`` the largest ``|got - ref| / |ref|``."""

    file: str
    column: str
    kind: str
    ratio: float
    rel: float = 0.0
    rows: list[int] = field(default_factory=list)  # rows over the tolerance
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.ratio <= 1.0

    def __str__(self) -> str:
        return (
            f"{self.file}: {self.column} ({self.kind}) observed/allowed {self.ratio:.3g}, "
            f"max rel diff {self.rel:.3g}, rows over {self.rows[:10]} {self.note}"
        )


def compare_table(got: pd.DataFrame, ref: pd.DataFrame, rel: str) -> list[ColumnResult]:
    """Compare one table with its golden copy, column by column (see the module docstring).
    Raises AssertionError on different columns, lengths or an unclassified numeric column."""
    assert list(got.columns) == list(ref.columns), f"{rel}: columns differ"
    assert len(got) == len(ref), f"{rel}: {len(got)} rows, golden {len(ref)}"
    cols = GOLDEN_COLUMNS[rel]
    out = []
    for name in ref.columns:
        if name not in numeric_columns(ref):
            same = got[name].astype(str).tolist() == ref[name].astype(str).tolist()
            out.append(ColumnResult(rel, name, "text", 0.0 if same else np.inf))
            continue
        assert name in cols, f"{rel}: numeric column {name} is not in GOLDEN_COLUMNS"
        kind = cols[name].kind
        if kind in (FLAG, ACCEPT) or pd.api.types.is_bool_dtype(ref[name]):
            g, r = got[name].to_numpy(), ref[name].to_numpy()
            flips = np.flatnonzero(g != r)
            free = may_differ(ref, cols, name)
            bad = [int(i) for i in flips if not free[i]]
            note = f"({int(free.sum())} rows near the threshold, {len(flips)} differ)"
            out.append(
                ColumnResult(
                    rel,
                    name,
                    kind,
                    np.inf if bad else 0.0,
                    float(len(flips) > 0),
                    bad,
                    note if free.any() else "",
                )
            )
            continue
        g, r = got[name].to_numpy(dtype=float), ref[name].to_numpy(dtype=float)
        tol = tolerance(ref, cols, name)
        both_nan = np.isnan(g) & np.isnan(r)
        diff = np.where(both_nan, 0.0, np.abs(g - r))  # one NaN: diff NaN, treated as over
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(diff == 0, 0.0, diff / tol)
            relative = np.where(diff == 0, 0.0, diff / np.abs(r))
        ratio = np.where(np.isnan(ratio), np.inf, ratio)
        relative = np.where(np.isnan(relative), np.inf, relative)
        rows = [int(i) for i in np.flatnonzero(ratio > 1.0)]
        out.append(
            ColumnResult(
                rel,
                name,
                kind,
                float(ratio.max(initial=0.0)),
                float(relative.max(initial=0.0)),
                rows,
            )
        )
    return out


def compare_tree(tree: Path, files: list[str] | None = None) -> list[ColumnResult]:
    """:func:`compare_table` for every golden file of the finished smoke tree ``tree``."""
    out = []
    for rel in files or golden_files():
        out += compare_table(pd.read_csv(Path(tree) / rel), pd.read_csv(GOLDEN / rel), rel)
    return out
