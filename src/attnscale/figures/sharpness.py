"""Figure (ours): transition sharpness against context length
(docs/long-context.md#transition-sharpness-against-context-length).

One column per ``d``. Rows: the self-weight, lambda and eta (over its ``gamma -> inf`` value)
against ``x = gamma / gamma_c(rho_hat)`` at ``rho = 0.5`` (else the first ``rho``), one colour per
``n``, each with the finite-d theory's curve (dashed), Paper A's ``n -> inf`` step and the
finite-d critical point, and under lambda the tilt's floor at the largest ``n`` (dotted); the
10 %-90 % width of each transition against ``ln n / d`` (both ``rho``) with the finite-d theory's
width and Paper A's finite-n simplex width, which shrinks like ``1 / ln n``; and the centres
against ``ln n / d`` with the finite-d theory's and Paper A's ``x = 1``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FormatStrFormatter, FuncFormatter

from attnscale.figures.style import add_caption, apply_style
from attnscale.layer.observables import REGISTRY, critical_level

__all__ = ["OBS_STYLE", "plot_sharpness", "plot_sharpness_rows", "ROWS"]

#: Colour and label of each observable in the width and centre rows (the registry's).
OBS_STYLE = {
    o.name: (o.colour, o.symbol) for o in sorted(REGISTRY.values(), key=lambda o: o.legend_rank)
}
#: Marker and line style of each rho (first, second) in the width and centre rows.
RHO_STYLE = (("o", "-"), ("s", "--"))


def _n_colours(ns) -> dict:
    cmap = plt.get_cmap("viridis")
    ns = sorted(int(n) for n in ns)
    return {n: cmap(0.9 * k / max(1, len(ns) - 1)) for k, n in enumerate(ns)}


def _limit_step(ax, critical: float) -> None:
    """Paper A's n -> inf limit of a normalised observable: 0 below x = 1, ``critical`` (its critical level) at it, 1 above."""
    ax.plot(
        [0.0, 1.0, 1.0, 10.0],
        [0.0, 0.0, 1.0, 1.0],
        color="k",
        ls="--",
        lw=1.0,
        label=r"$n\to\infty$ [Paper A]",
    )
    ax.plot([1.0], [critical], "o", mfc="white", mec="k", ms=4)


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
        ax.plot(c["x"], c["theory"], "--", color=col, lw=0.9, dashes=(3, 2))
        t = tra[
            (tra["observable"] == obs)
            & np.isclose(tra["rho"], rho)
            & (tra["d"] == d)
            & (tra["n"] == n)
        ]
        if not t.empty:
            r = t.iloc[0]
            ax.plot(  # where the finite-d theory's curve crosses the critical value
                r["centre_finite_d"],
                r["level_centre"],
                marker="v",
                ms=6,
                color=col,
                mec="k",
                mew=0.5,
                zorder=5,
            )
    if REGISTRY[obs].floor and not sub.empty:
        c = sub[sub["n"] == sub["n"].max()].sort_values("x")
        ax.plot(c["x"], c["tilt_floor"], ":", color="k", lw=1.3, label="tilt's floor, largest n")
    critical = critical_level(obs, rho)
    _limit_step(ax, critical)
    ax.set_ylim(-0.03, 1.05)


def _against(ax, tra, d, rhos, what):
    """Width (``what="width"``) or centre (``"centre"``) against ``ln n / d``, every observable
    and rho, with the finite-d theory's (thick, pale) and, for the width, the simplex's."""
    for j, rho in enumerate(rhos):
        mk, ls = RHO_STYLE[j % len(RHO_STYLE)]
        for obs, (col, lab) in OBS_STYLE.items():
            t = tra[(tra["observable"] == obs) & np.isclose(tra["rho"], rho) & (tra["d"] == d)]
            t = t.sort_values("n")
            if t.empty:
                continue
            u = np.log(t["n"].to_numpy(dtype=float)) / d
            ax.plot(
                u, t[f"{what}_finite_d"], ls, color=col, lw=3.5, alpha=0.3, solid_capstyle="round"
            )
            ax.errorbar(
                u,
                t[what],
                yerr=2 * t[f"{what}_se"].fillna(0.0),
                fmt=mk,
                color=col,
                ms=3.5,
                capsize=2,
                elinewidth=0.8,
                mfc=col if j == 0 else "white",
                label=f"{lab}, rho = {rho:g}",
            )
            if what == "width" and j == 0:
                ax.plot(
                    u,
                    t["width_simplex"],
                    ":",
                    color=col,
                    lw=1.2,
                    label=f"{lab}, finite-n simplex [Paper A]",
                )
    if what == "centre":
        ax.axhline(1.0, color="k", ls="--", lw=1.0, label=r"$\gamma_c$ [Paper A]")
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
    K = len(REGISTRY)
    fig, axes = plt.subplots(K + 2, len(ds), figsize=(4.3 * len(ds), 3.5 * (K + 2)), squeeze=False)
    for j, d in enumerate(ds):
        xs = curves[curves["d"] == d]["x"]
        for i, o in enumerate(REGISTRY.values()):
            a = axes[i, j]
            _curves(a, curves, transitions, o.name, ns, colours, rho0, d)
            a.set_title(f"d = {d}, rho = {rho0:g}: {o.title}")
            a.set_xlim(xs.min(), xs.max())
            a.set_xlabel(r"$x = \gamma / \gamma_c(\hat\rho)$")
        a_w, a_c = axes[K, j], axes[K + 1, j]
        _against(a_w, transitions, d, rhos, "width")
        a_w.set_title(f"d = {d}: 10 %-90 % width in x")
        _against(a_c, transitions, d, rhos, "centre")
        a_c.set_title(f"d = {d}: centre (crossing of the critical value)")
        for a in (a_w, a_c):
            a.set_xlabel(r"$\ln n \,/\, d$")
        a_w.grid(True, which="both", alpha=0.25)
        a_c.grid(True, alpha=0.25)
    for i, o in enumerate(REGISTRY.values()):
        axes[i, 0].set_ylabel(o.axis_label)
    axes[K, 0].set_ylabel("width x90 - x10 (2 SE)")
    axes[K + 1, 0].set_ylabel("centre in x (2 SE)")
    i_floor = next(i for i, o in enumerate(REGISTRY.values()) if o.floor)
    # the curves' legend above the rows, outside every axes (a legend never covers data)
    top_h, top_l = _curve_legend(axes[0, 0], axes[i_floor, 0])
    top_cols = 5 if len(ds) >= 3 else 3
    fig.legend(
        top_h, top_l, loc="upper center", ncol=top_cols, fontsize=7, bbox_to_anchor=(0.5, 0.982)
    )
    top_rows = -(-len(top_l) // top_cols)  # the legend's lines, about 0.13 in each
    # one legend for the width and centre rows, below them
    handles, labels = _against_legend(axes[K, 0], axes[K + 1, 0])
    # four columns fit the width of three panels; two, that of fewer
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=4 if len(ds) >= 3 else 2,
        fontsize=7,
        bbox_to_anchor=(0.5, 0.05),
    )
    fig.suptitle("Transition sharpness against context length (ours)", y=0.995)
    fig.tight_layout(rect=(0, 0.1, 1, 0.975 - (0.13 * top_rows + 0.05) / fig.get_figheight()))
    add_caption(fig, caption)
    return fig


def _curve_legend(ax_weight, ax_lambda):
    """Handles and labels of the curve rows: the n colours and Paper A's step (from the
    self-weight's axes), the finite-d theory, its crossing (triangles) and the tilt's floor."""
    pairs = [
        hl for hl in zip(*ax_weight.get_legend_handles_labels(), strict=True) if "tilt" not in hl[1]
    ]
    handles, labels = [h for h, _ in pairs], [lab for _, lab in pairs]
    handles.append(plt.Line2D([], [], ls="--", color="grey", lw=0.9, dashes=(3, 2)))
    labels.append("finite-d theory [derived]")
    handles.append(plt.Line2D([], [], ls="", marker="v", color="grey", mec="k", mew=0.5))
    labels.append("its crossing of the critical value [derived]")
    for h, lab in zip(*ax_lambda.get_legend_handles_labels(), strict=True):
        if "tilt" in lab:
            handles.append(h)
            labels.append("tilt's floor under lambda, largest n [derived]")
            break
    return handles, labels


def _against_legend(ax_width, ax_centre):
    """Handles and labels of the width and centre rows."""
    handles, labels = ax_width.get_legend_handles_labels()
    h, lab = ax_centre.get_legend_handles_labels()
    handles.append(h[lab.index(r"$\gamma_c$ [Paper A]")])
    labels.append("x = 1: Paper A's gamma_c (centre row)")
    handles.append(plt.Line2D([], [], color="grey", lw=3.5, alpha=0.3))
    labels.append("finite-d theory, same colour [derived]")
    return handles, labels


#: The rows of the sharpness figure, in order: output name of the row's own image, observable
#: (a curve row) or ``"width"`` / ``"centre"``, and the y label.
ROWS = (
    *((f"row_{o.name}", o.name, o.axis_label) for o in REGISTRY.values()),
    ("row_width", "width", "width x90 - x10 (2 SE)"),
    ("row_centre", "centre", "centre in x (2 SE)"),
)


def _row_figure(row: int, curves, transitions, caption: str):
    """Row ``row`` of the sharpness figure (:data:`ROWS`) as a figure of its own, one panel per
    ``d``, sized to be read at a page's width, its legend below the panels."""
    _, what, ylabel = ROWS[row]
    ds = sorted(int(d) for d in transitions["d"].unique())
    rhos = sorted(float(r) for r in transitions["rho"].unique())
    ns = sorted(int(n) for n in transitions["n"].unique())
    rho0 = 0.5 if any(np.isclose(rhos, 0.5)) else rhos[0]
    height, legend_in = 3.0, 0.9 if what in ("width", "centre") else 0.7
    fig, axes = plt.subplots(
        1, len(ds), figsize=(3.4 * len(ds), height + legend_in + 0.3), squeeze=False
    )
    for j, d in enumerate(ds):
        a = axes[0, j]
        if what in ("width", "centre"):
            _against(a, transitions, d, rhos, what)
            a.set_title(f"d = {d}")
            a.set_xlabel(r"$\ln n \,/\, d$")
            a.grid(True, which="both" if what == "width" else "major", alpha=0.25)
        else:
            _curves(a, curves, transitions, what, ns, _n_colours(ns), rho0, d)
            a.set_title(f"d = {d}, rho = {rho0:g}")
            xs = curves[curves["d"] == d]["x"]
            a.set_xlim(xs.min(), xs.max())
            a.set_xlabel(r"$x = \gamma / \gamma_c(\hat\rho)$")
    axes[0, 0].set_ylabel(ylabel)
    if what in ("width", "centre"):
        handles, labels = axes[0, 0].get_legend_handles_labels()
        handles.append(plt.Line2D([], [], color="grey", lw=3.5, alpha=0.3))
        labels.append("finite-d theory, same colour [derived]")
    else:
        handles, labels = _curve_legend(axes[0, 0], axes[0, 0])
    fig.legend(handles, labels, loc="lower center", ncol=3 if len(ds) >= 3 else 2, fontsize=7)
    names = {
        **{o.name: o.title for o in REGISTRY.values()},
        "width": "the 10 %-90 % width in x",
        "centre": "the centre in x",
    }
    fig.suptitle(f"Transition sharpness against context length (ours): {names[what]}")
    fig.tight_layout(rect=(0, legend_in / (height + legend_in + 0.3), 1, 1))
    add_caption(fig, caption)
    return fig


def plot_sharpness_rows(*, curves: pd.DataFrame, transitions: pd.DataFrame, caption: str):
    """The sharpness figure (:func:`plot_sharpness`, output ``png``) and each of its rows as an
    image of its own (outputs named in :data:`ROWS`), each readable at a page's width
    (docs/long-context.md#transition-sharpness-against-context-length).

    Returns
    -------
    dict
        ``{"png": full figure, "row_self_weight": ..., ..., "row_centre": ...}``.
    """
    out = {"png": plot_sharpness(curves=curves, transitions=transitions, caption=caption)}
    for k, (name, _, _) in enumerate(ROWS):
        out[name] = _row_figure(k, curves, transitions, caption)
    return out
