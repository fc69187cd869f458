"""Figure (ours): transition sharpness against context length
(docs/long-context.md#transition-sharpness-against-context-length).

One column per ``d``. Rows: lambda and eta (over its ``gamma -> inf`` value) against
``x = gamma / gamma_c(rho_hat)`` at the first ``rho``, one colour per ``n``, with Paper A's
``n -> inf`` step and the finite-d centres; the 10 %-90 % width of each transition against ``n``
(both ``rho``) with Paper A's finite-n simplex width, which shrinks like ``1 / ln n``, and the
finite-d theory's width of the self-weight; and the centres against ``n`` with the finite-d
critical point and Paper A's ``x = 1``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FormatStrFormatter, FuncFormatter

from attnscale.figures.style import add_caption, apply_style
from attnscale.layer import theory

__all__ = ["OBS_STYLE", "plot_sharpness"]

#: Colour and label of each observable in the width and centre rows.
OBS_STYLE = {
    "lambda": ("C0", "lambda"),
    "eta": ("C3", "eta"),
    "self_weight": ("C2", "A_ii"),
}
#: Marker and line style of each rho (first, second) in the width and centre rows.
RHO_STYLE = (("o", "-"), ("s", "--"))


def _n_colours(ns) -> dict:
    cmap = plt.get_cmap("viridis")
    ns = sorted(int(n) for n in ns)
    return {n: cmap(0.9 * k / max(1, len(ns) - 1)) for k, n in enumerate(ns)}


def _limit_step(ax, level: float) -> None:
    """Paper A's n -> inf limit of a normalised observable: 0 below x = 1, ``level`` at it, 1 above."""
    ax.plot(
        [0.0, 1.0, 1.0, 10.0],
        [0.0, 0.0, 1.0, 1.0],
        color="k",
        ls="--",
        lw=1.0,
        label=r"$n\to\infty$ [Paper A]",
    )
    ax.plot([1.0], [level], "o", mfc="white", mec="k", ms=4)


def _curves(ax, cur, tra, obs, ns, colours, rho, d):
    sub = cur[(cur["observable"] == obs) & np.isclose(cur["rho"], rho) & (cur["d"] == d)]
    for n in ns:
        c = sub[sub["n"] == n].sort_values("x")
        if c.empty:
            continue
        col = colours[n]
        ax.plot(c["x"], c["mean"], "-", color=col, lw=1.2, label=f"n = 2^{int(np.log2(n))}")
        ax.fill_between(
            c["x"], c["mean"] - 2 * c["se"], c["mean"] + 2 * c["se"], color=col, alpha=0.25, lw=0
        )
        t = tra[
            (tra["observable"] == obs)
            & np.isclose(tra["rho"], rho)
            & (tra["d"] == d)
            & (tra["n"] == n)
        ]
        if not t.empty:
            r = t.iloc[0]
            ax.plot(
                r["x_star"],
                r["level_centre"],
                marker="v",
                ms=6,
                color=col,
                mec="k",
                mew=0.5,
                zorder=5,
            )
    level = theory.critical_level(obs, rho)
    _limit_step(ax, level)
    ax.set_ylim(-0.03, 1.05)


def _against_n(ax, tra, d, rhos, what):
    """Width (``what="width"``) or centre (``"centre"``) against n, every observable and rho."""
    for j, rho in enumerate(rhos):
        mk, ls = RHO_STYLE[j % len(RHO_STYLE)]
        for obs, (col, lab) in OBS_STYLE.items():
            t = tra[(tra["observable"] == obs) & np.isclose(tra["rho"], rho) & (tra["d"] == d)]
            t = t.sort_values("n")
            if t.empty:
                continue
            ax.errorbar(
                t["n"],
                t[what],
                yerr=2 * t[f"{what}_se"].fillna(0.0),
                fmt=mk + ls,
                color=col,
                ms=3.5,
                lw=1.0,
                capsize=2,
                elinewidth=0.8,
                mfc=col if j == 0 else "white",
                label=f"{lab}, rho = {rho:g}",
            )
            if what == "width" and j == 0:
                ax.plot(
                    t["n"],
                    t["width_simplex"],
                    ":",
                    color=col,
                    lw=1.2,
                    label=f"{lab}, finite-n simplex [Paper A]",
                )
        t = tra[
            (tra["observable"] == "self_weight") & np.isclose(tra["rho"], rho) & (tra["d"] == d)
        ].sort_values("n")
        ref = "width_finite_d" if what == "width" else "x_star"
        ax.plot(
            t["n"],
            t[ref],
            ls,
            color="m",
            lw=1.6,
            alpha=0.7,
            zorder=1,
            label=f"A_ii, finite d, rho = {rho:g} [derived]",
        )
    if what == "centre":
        ax.axhline(1.0, color="k", ls="--", lw=1.0, label=r"$\gamma_c$ [Paper A]")
    ax.set_xscale("log", base=2)
    if what == "width":
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FormatStrFormatter("%.2g"))
        ax.yaxis.set_minor_formatter(FuncFormatter(_minor_label))
        ax.tick_params(axis="y", which="minor", labelsize=7)


def _minor_label(v: float, _pos=None) -> str:
    """A minor tick's label on a log axis: 2, 3 and 5 times a power of ten only (a label at 0.9
    or 8 would touch the major label next to it)."""
    if v <= 0:
        return ""
    mantissa = round(v / 10.0 ** np.floor(np.log10(v) + 1e-9), 6)
    return f"{v:.2g}" if mantissa in (2.0, 3.0, 5.0) else ""


def plot_sharpness(*, curves: pd.DataFrame, transitions: pd.DataFrame, caption: str):
    """The sharpness figure (ours; docs/long-context.md#transition-sharpness-against-context-length).

    Parameters
    ----------
    curves : pandas.DataFrame
        Mean curves (:func:`attnscale.experiments.sharpness_summary.curve_summary`).
    transitions : pandas.DataFrame
        Widths and centres (:func:`attnscale.experiments.sharpness_summary.transition_rows`).
    caption : str
        Caption text (labels [paper] / [derived] / [choice]).

    Returns
    -------
    matplotlib.figure.Figure
    """
    apply_style()
    ds = sorted(int(d) for d in transitions["d"].unique())
    rhos = sorted(float(r) for r in transitions["rho"].unique())
    ns = sorted(int(n) for n in transitions["n"].unique())
    colours = _n_colours(ns)
    rho0 = 0.5 if any(np.isclose(rhos, 0.5)) else rhos[0]
    fig, axes = plt.subplots(4, len(ds), figsize=(4.3 * len(ds), 14.0), squeeze=False)
    for j, d in enumerate(ds):
        a_lam, a_eta, a_w, a_c = axes[:, j]
        _curves(a_lam, curves, transitions, "lambda", ns, colours, rho0, d)
        _curves(a_eta, curves, transitions, "eta", ns, colours, rho0, d)
        a_lam.set_title(f"d = {d}, rho = {rho0:g}: lambda")
        a_eta.set_title(f"d = {d}, rho = {rho0:g}: eta / eta(gamma -> inf)")
        xs = curves[curves["d"] == d]["x"]
        for a in (a_lam, a_eta):
            a.set_xlim(xs.min(), xs.max())
            a.set_xlabel(r"$x = \gamma / \gamma_c(\hat\rho)$")
        _against_n(a_w, transitions, d, rhos, "width")
        a_w.set_title(f"d = {d}: 10 %-90 % width in x")
        _against_n(a_c, transitions, d, rhos, "centre")
        a_c.set_title(f"d = {d}: centre (crossing of the critical value)")
        for a in (a_w, a_c):
            a.set_xlabel("n")
        a_w.grid(True, which="both", alpha=0.25)
        a_c.grid(True, alpha=0.25)
    axes[0, 0].set_ylabel("lambda (mean over draws, 2 SE band)")
    axes[1, 0].set_ylabel("eta / eta(gamma -> inf)")
    axes[2, 0].set_ylabel("width x90 - x10 (2 SE)")
    axes[3, 0].set_ylabel("centre in x (2 SE)")
    axes[0, 0].plot([], [], "v", color="grey", mec="k", label="finite-d x* [derived]")
    axes[0, 0].legend(loc="upper left", fontsize=6.5)
    # one legend for the width and centre rows, below them
    handles, labels = axes[2, 0].get_legend_handles_labels()
    h, lab = axes[3, 0].get_legend_handles_labels()
    handles.append(h[lab.index(r"$\gamma_c$ [Paper A]")])
    labels.append("x = 1: Paper A's gamma_c (centre row)")
    labels = [
        v.replace("A_ii, finite d", "A_ii, finite-d theory (width; centre: x*)") for v in labels
    ]
    # four columns fit the width of three panels; two, that of fewer
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=4 if len(ds) >= 3 else 2,
        fontsize=7,
        bbox_to_anchor=(0.5, 0.055),
    )
    fig.suptitle("Transition sharpness against context length (ours)", y=0.995)
    fig.tight_layout(rect=(0, 0.12, 1, 0.99))
    add_caption(fig, caption)
    return fig
