"""Figures of the critical-exponent experiments (ours): the exponent of ``beta*(n)`` across d for
uniform keys and on great sub-spheres, and ``beta*(n)`` for RoPE-rotated keys
(docs/paper-b-beyond.md#critical-exponent-across-dimensions,
docs/paper-b-beyond.md#keys-on-a-submanifold, docs/paper-b-beyond.md#rope-like-keys).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnscale.figures.style import add_caption, apply_style

__all__ = ["plot_exponent", "plot_rope"]

_MODEL_LABEL = {
    "correction": r"all $n$, with $B/\beta^*$ term",
    "plain": r"all $n$, pure power law",
    "upper": r"upper $n$ only, pure power law",
}


def _fit(fits: pd.DataFrame, model: str, **sel) -> pd.DataFrame:
    m = fits["model"] == model
    for k, v in sel.items():
        m &= fits[k] == v
    return fits[m]


def _fit_text(fits: pd.DataFrame, models=("correction", "plain"), **sel) -> str:
    """``"fit a +- se"`` from the first of ``models`` that exists for the selection, else ``""``."""
    for model in models:
        f = _fit(fits, model, **sel)
        if not f.empty:
            return rf"fit {f['alpha'].iloc[0]:.3f}$\pm${f['se_alpha_scaled'].iloc[0]:.3f}"
    return "too few n to fit"


def plot_exponent(*, points: pd.DataFrame, fits: pd.DataFrame, caption: str):
    """Exponent of ``beta*(n)`` (ours) from the tables of
    :func:`attnscale.experiments.paper_b_exponent_fits.exponent_tables`: (a) fitted minus
    ``2/(d-1)`` for uniform keys, three fit models, +-2 SE; (b) ``beta*(n) / n^{2/(d-1)}`` relative to its largest-n value; (c) keys on
    great sub-spheres ``S^{k-1}`` of ``S^{d-1}``: ``beta*(n)`` with fitted slopes
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions,
    docs/paper-b-beyond.md#keys-on-a-submanifold).
    """
    apply_style()
    fig, axes = plt.subplots(1, 3, figsize=(13.0, 5.0))
    fig.subplots_adjust(left=0.06, right=0.99, top=0.92, bottom=0.24, wspace=0.28)
    _uniform_deviation(axes[0], fits)
    U = _compensated(axes[1], points)
    _subspheres(axes[2], points, fits, U)
    add_caption(fig, caption)
    return fig


def plot_rope(*, points: pd.DataFrame, fits: pd.DataFrame, caption: str):
    """``beta*(n)`` of RoPE-rotated keys (ours): one panel per d with the content concentration
    ``kappa`` as colour and the slope ``2/(d-1)`` for reference; the pure-power-law exponents
    against ``d``; the ratio to the ``kappa = 0`` curve (uniform keys in law); and the repeated
    content key at long ``n`` with the derived orbit slope ``2/r``
    (docs/paper-b-beyond.md#rope-like-keys).
    """
    apply_style()
    R = points[points["family"] == "rope"].copy()
    L = points[points["family"] == "rope_long"].copy()
    R["kpd"] = R["kappa"] / R["d"]
    ds = sorted(R["d"].unique())
    kpds = sorted(R["kpd"].unique())
    pal = {kp: plt.get_cmap("tab10")(i) for i, kp in enumerate(kpds)}
    ncol = max(3, len(ds))
    fig = plt.figure(figsize=(13.0, 8.4))
    gs = fig.add_gridspec(
        2, ncol, left=0.06, right=0.99, top=0.95, bottom=0.16, hspace=0.38, wspace=0.3
    )
    for j, d in enumerate(ds):
        _rope_panel(fig.add_subplot(gs[0, j]), R, d, j, kpds, pal, fits)
    nxt = len(ds)
    _rope_exponents(fig.add_subplot(gs[1, 0]), fits, kpds, pal, ds, nxt)
    _rope_ratio(fig.add_subplot(gs[1, 1]), R, kpds, pal, ds, nxt)
    _rope_long(fig.add_subplot(gs[1, 2:]), L, fits, nxt)
    add_caption(fig, caption, size=6.5)
    return fig


def _uniform_deviation(ax, fits) -> None:
    """(a) deviation of the fitted exponent, uniform keys, three fit models."""
    offs = {"correction": -0.15, "plain": 0.0, "upper": 0.15}
    cols = {"correction": "k", "plain": "tab:orange", "upper": "tab:blue"}
    for model, off in offs.items():
        f = _fit(fits, model, family="uniform").sort_values("d")
        if f.empty:
            continue
        ax.errorbar(
            f["d"] + off,
            f["alpha"] - f["alpha_theory"],
            yerr=2 * f["se_alpha_scaled"],
            fmt="o",
            ms=4,
            capsize=2,
            color=cols[model],
            label=_MODEL_LABEL[model],
        )
    ax.axhline(0.0, color="0.4", lw=0.8)
    ax.set_xlabel("d (uniform keys on $S^{d-1}$)")
    ax.set_ylabel(r"fitted exponent $-\ 2/(d-1)$  ($\pm$2 SE)")
    ax.set_title("(a) exponent of $\\beta^*(n)$, uniform keys (ours)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best")


def _compensated(ax, points) -> pd.DataFrame:
    """(b) compensated beta*, relative to the largest n; returns the uniform-key points."""
    U = points[points["family"] == "uniform"].sort_values(["d", "n"])
    ds = sorted(U["d"].unique())
    pal = plt.get_cmap("viridis")(np.linspace(0.0, 0.9, max(1, len(ds))))
    for c, d in zip(pal[: len(ds)], ds, strict=True):
        g = U[U["d"] == d]
        comp = g["beta_star"] / g["n"] ** g["alpha_theory"]
        ref = comp.iloc[-1]
        ax.errorbar(
            g["n"],
            comp / ref,
            yerr=2 * g["se"] / g["n"] ** g["alpha_theory"] / ref,
            fmt="o-",
            ms=3,
            lw=1,
            capsize=1.5,
            color=c,
            label=f"d = {d}",
        )
    ax.axhline(1.0, color="0.4", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("n (keys)")
    ax.set_ylabel(r"$\beta^*(n)\,/\,n^{2/(d-1)}$, relative to largest $n$")
    ax.set_title("(b) compensated critical scale (ours)")
    if ds:
        ax.legend(ncol=2, loc="best")
    return U


def _subspheres(ax, points, fits, U) -> None:
    """(c) keys on great sub-spheres, with the uniform keys of the ambient d for reference."""
    S = points[points["family"] == "subsphere"]
    ks = sorted(S["k"].unique())
    pal = [plt.get_cmap("tab10")(i) for i in range(len(ks) + 1)]
    for c, k in zip(pal[: len(ks)], ks, strict=True):
        for method, fmt in (("d2q", "-"), ("full", "s")):
            g = S[(S["k"] == k) & (S["method"] == method)].sort_values("n")
            if g.empty:
                continue
            d = int(g["d"].iloc[0])
            lab = (
                f"k = {k} in d = {d}, {'exact D2Q' if method == 'd2q' else 'keys in R^d'}: "
                f"{_fit_text(fits, family='subsphere', k=k, method=method)}, "
                f"2/(k-1) = {2 / (k - 1):.3f}"
            )
            ax.errorbar(
                g["n"],
                g["beta_star"],
                yerr=2 * g["se"],
                fmt=fmt,
                ms=4,
                lw=1.2,
                mfc="none",
                color=c,
                label=lab,
            )
    if not U.empty and not S.empty:
        d_amb = int(S["d"].iloc[0])
        g = U[U["d"] == d_amb]
        if not g.empty:
            ax.errorbar(
                g["n"],
                g["beta_star"],
                yerr=2 * g["se"],
                fmt="--",
                lw=1.2,
                color=pal[-1],
                label=f"uniform on $S^{{{d_amb - 1}}}$: "
                f"{_fit_text(fits, family='uniform', d=d_amb)}, "
                f"2/(d-1) = {2 / (d_amb - 1):.3f}",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (keys)")
    ax.set_ylabel(r"$\beta^*(n)$ ($\pm$2 SE)")
    ax.set_title("(c) keys on a great sub-sphere $S^{k-1}$ (ours)")
    if ks:
        ax.legend(fontsize=5.5, loc="upper left")


def _klabel(kpd) -> str:
    """The legend label of a content concentration ``kappa / d``."""
    if np.isinf(kpd):
        return r"$\kappa=\infty$: one repeated content key"
    if kpd == 0:
        return r"$\kappa=0$: uniform content (= uniform keys in law)"
    return rf"$\kappa={kpd:g}\,d$: vMF content"


def _rope_panel(ax, R, d, j, kpds, pal, fits) -> None:
    """One d: ``beta*(n)`` per content concentration with its slope, and ``2/(d-1)`` dotted."""
    for kpd in kpds:
        g = R[(R["d"] == d) & (R["kpd"] == kpd)].sort_values("n")
        ax.errorbar(
            g["n"],
            g["beta_star"],
            yerr=2 * g["se"],
            fmt="o-",
            ms=3,
            lw=1,
            capsize=1.5,
            color=pal[kpd],
        )
        txt = _fit_text(fits, ("plain",), family="rope", d=d, kappa=float(g["kappa"].iloc[0]))
        ax.text(
            0.97,
            0.04 + 0.08 * kpds.index(kpd),
            txt.replace("fit", "slope"),
            color=pal[kpd],
            transform=ax.transAxes,
            ha="right",
            fontsize=6.5,
        )
    g0 = R[(R["d"] == d) & (R["kpd"] == kpds[0])].sort_values("n")
    nn = np.geomspace(g0["n"].min(), g0["n"].max(), 20)
    ax.plot(nn, g0["beta_star"].iloc[0] * (nn / nn[0]) ** (2.0 / (d - 1)), ":", color="0.3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(f"({chr(97 + j)}) d = {d}, RoPE base {g0['base'].iloc[0]:g} (ours)")
    ax.set_xlabel("n (positions)")
    if j == 0:
        ax.set_ylabel(r"$\beta^*(n)$ ($\pm$2 SE)")


def _rope_exponents(ax, fits, kpds, pal, ds, nxt) -> None:
    """The pure-power-law exponents against d."""
    f = fits[(fits["family"] == "rope") & (fits["model"] == "plain")]
    for kpd in kpds:
        sel = np.isinf(f["kappa"]) if np.isinf(kpd) else np.isclose(f["kappa"], kpd * f["d"])
        g = f[sel].sort_values("d")
        ax.errorbar(
            g["d"],
            g["alpha"],
            yerr=2 * g["se_alpha_scaled"],
            fmt="o-",
            ms=4,
            capsize=2,
            color=pal[kpd],
            label=_klabel(kpd),
        )
    dd = np.linspace(min(ds), max(ds), 100)
    ax.plot(dd, 2.0 / (dd - 1), ":", color="0.3", label=r"$2/(d-1)$")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("d")
    ax.set_ylabel(r"pure-power-law exponent ($\pm$2 SE)")
    ax.set_title(f"({chr(97 + nxt)}) fitted exponent, n range of (a)-(d) (ours)")
    ax.legend(fontsize=6, loc="upper right")


def _rope_ratio(ax, R, kpds, pal, ds, nxt) -> None:
    """The ratio to the ``kappa = 0`` curve."""
    styles = ["-", "--", "-.", ":"]
    for kpd in kpds[1:]:
        for i, d in enumerate(ds):
            g = R[(R["d"] == d) & (R["kpd"] == kpd)].sort_values("n").reset_index(drop=True)
            g0 = R[(R["d"] == d) & (R["kpd"] == kpds[0])].sort_values("n").reset_index(drop=True)
            r = g["beta_star"] / g0["beta_star"]
            se = r * np.hypot(g["se"] / g["beta_star"], g0["se"] / g0["beta_star"])
            ax.errorbar(
                g["n"],
                r,
                yerr=2 * se,
                fmt="o" + styles[i % 4],
                ms=3,
                lw=1,
                capsize=1.5,
                color=pal[kpd],
                label=f"d = {d}" if kpd == kpds[-1] else None,
            )
    ax.axhline(1.0, color="0.4", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("n (positions)")
    ax.set_ylabel(r"$\beta^*(n)\,/\,\beta^*_{\kappa=0}(n)$ ($\pm$2 SE)")
    ax.set_title(f"({chr(98 + nxt)}) relative to uniform keys (ours)")
    if len(kpds) > 1:
        ax.legend(title="line style", fontsize=6, loc="upper right")


def _rope_long(ax, L, fits, nxt) -> None:
    """The repeated content key at long n, with the orbit slope ``2/r`` and ``2/(d-1)``."""
    for i, d in enumerate(sorted(L["d"].unique())):
        g = L[L["d"] == d].sort_values("n")
        c = ("navy", "darkred", "darkgreen", "indigo")[i % 4]
        r_slope = float(g["alpha_orbit"].iloc[0])
        txt = _fit_text(fits, ("top3",), family="rope_long", d=d)
        ax.errorbar(
            g["n"],
            g["beta_star"],
            yerr=2 * g["se"],
            fmt="o-",
            ms=3,
            lw=1,
            capsize=1.5,
            color=c,
            label=f"d = {d}, repeated key; 3 largest n: {txt}",
        )
        if np.isfinite(r_slope):
            nn = np.geomspace(g["n"].iloc[-3], g["n"].iloc[-1], 10)
            ax.plot(
                nn,
                g["beta_star"].iloc[-1] * (nn / nn[-1]) ** r_slope,
                "--",
                color=c,
                lw=1,
                label=f"slope 2/r = {r_slope:g} (orbit dimension r = {2 / r_slope:g})",
            )
        nn = np.geomspace(g["n"].iloc[0], g["n"].iloc[-1], 10)
        ax.plot(
            nn,
            g["beta_star"].iloc[0] * (nn / nn[0]) ** (2.0 / (d - 1)),
            ":",
            color=c,
            lw=1,
            label=f"slope 2/(d-1) = {2 / (d - 1):.3f}",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (positions)")
    ax.set_ylabel(r"$\beta^*(n)$ ($\pm$2 SE)")
    ax.set_title(f"({chr(99 + nxt)}) one repeated content key, long contexts (ours)")
    if not L.empty:
        ax.legend(fontsize=6, loc="upper left")
