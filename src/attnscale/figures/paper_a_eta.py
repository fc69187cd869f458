"""Paper A backward-pass figures: Figure 2 (eta heat maps), the theorem table and the
finite-size check (docs/paper-a.md)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import Normalize

from attnscale.figures.style import add_caption, apply_style

from .paper_a import heatmap_panels

__all__ = ["plot_figure2", "plot_theorem_table", "plot_finite_size"]

#: Upper end of Figure 2's colour scale for eta / plateau (larger values get the "over" colour).
FIG2_VMAX = 1.25

QTY_LABEL = {
    "self_weight": r"$\langle A_{ii}\rangle$",
    "cosine": r"$\langle y_i', y_j'\rangle$",
    "lambda": r"$\lambda$",
    "eta": r"$\eta$",
}


def plot_figure2(*, data: pd.DataFrame, caption: str, line: pd.DataFrame | None = None):
    """Figure 2 of Paper A: eta over (rho, gamma), one panel per d (docs/paper-a.md), with the
    finite-d critical line ``line`` and eta's own finite-d line from the same table
    (:func:`attnscale.figures.paper_a.heatmap_panels`).

    Colour: the trial mean of ``eta / eta_plateau`` where ``eta_plateau = (1 - 1/d) mean_i
    1/||x_i||^2`` is the draw's super-critical limit (Theorem 2.4 at the realised norms), so the
    plateau ``1 - 1/d`` reads 1 in every panel and the critical value ``(1 - 1/d)/(4q)`` reads
    1/4. Values above :data:`FIG2_VMAX` are drawn in the colour-bar's "over" colour.
    """
    caption += _eta_used(data)
    cmap = plt.get_cmap("viridis").with_extremes(over="#ff4fd8")
    return heatmap_panels(
        data,
        "eta_rel_mean",
        label=r"$\eta\,/\,[(1-1/d)\,\langle 1/\|x_i\|^2\rangle]$",
        title=r"Paper A, Figure 2: Jacobian norm $\eta$ of one attention layer ($\alpha = 0$)",
        caption=caption,
        cmap=cmap,
        norm=Normalize(vmin=0.0, vmax=FIG2_VMAX),
        cbar_ticks=[0.0, 0.25, 0.5, 0.75, 1.0, FIG2_VMAX],
        extend="max",
        line=line,
        eta_line=True,
    )


def _eta_used(data: pd.DataFrame) -> str:
    """The caption's sentence of what drew Figure 2, read from its table (so the caption agrees
    with the run, issue 45): the token draws per cell and, per ``d``, eta's method (exact; a
    number of Hutchinson probes; or sampled rows, one tangent probe each,
    docs/long-context.md#the-rows-choice)."""

    def how(m: str, p: int, rows) -> str:
        if m == "exact":
            return "the exact block formula"
        if m == "sampled":
            count = f"{int(rows)} " if rows is not None and np.isfinite(rows) else ""
            return f"{count}sampled query rows, one tangent probe per row"
        return f"{m} ({int(p)} probe{'s' if int(p) != 1 else ''})"

    cols = ["method", "probes"] + (["rows"] if "rows" in data else [])
    used = data.groupby("d", sort=True)[cols].first().sort_index(ascending=False)
    trials = sorted({int(t) for t in data["trials"]}) if "trials" in data else []
    draws = " or ".join(str(t) for t in trials)
    out = f" Token draws per cell: {draws}." if trials else ""
    return (
        out
        + " eta computed by: "
        + "; ".join(
            f"d = {d}: " + how(r["method"], r["probes"], r.get("rows")) for d, r in used.iterrows()
        )
        + "."
    )


def _fmt(x: float, se: float | None = None) -> str:
    if not np.isfinite(x):
        return "-"
    ax = abs(x)
    s = f"{x:.3g}" if (ax >= 100 or (0 < ax < 1e-3)) else f"{x:.4f}"
    if se is not None and np.isfinite(se):
        s += f" ± {se:.1g}" if se < 1e-3 or se >= 1 else f" ± {se:.4f}"
    return s


def plot_theorem_table(*, data: pd.DataFrame, caption: str):
    """Render the tidy theorem table: one block per ``d``, one line per (rho, alpha, gamma/gamma_c),
    for each quantity the simulation (mean ± SE over draws), the finite-n simplex value, the
    n -> inf limit and the paired z-score. Simulation cells are green when ``|z| <= 2``.

    With finite-d theory columns (:func:`attnscale.experiments.paper_a_theorem.theorem_table`,
    docs/finite-d.md) each quantity also gets the finite-d value and its paired z-score
    ``z fd``, green when the issue-9 criterion ``|sim - theory| <= max(3 SE, 0.002)`` holds."""
    apply_style()
    tab = data
    qtys = [q for q in QTY_LABEL if q in set(tab["quantity"])]
    ds = sorted(tab["d"].unique(), reverse=True)
    keys = ["rho", "alpha", "gamma_factor"]
    has_fd = "finite_d" in tab.columns and bool(np.isfinite(tab["finite_d"]).any())
    header = [r"$\rho$", r"$\alpha$", r"$\gamma/\gamma_c$"]
    for q in qtys:
        header += [f"{QTY_LABEL[q]} sim", "simplex n", "limit", "z"]
        if has_fd:
            header += ["finite d", "z fd"]
    nrows = sum(len(tab[tab["d"] == d].groupby(keys)) for d in ds)
    fig_h = 1.2 + 0.17 * (nrows + 2 * len(ds))
    fig = plt.figure(figsize=(23.0 if has_fd else 17.0, fig_h))
    top = 1.0 - 0.5 / fig_h
    heights = [len(tab[tab["d"] == d].groupby(keys)) + 2 for d in ds]
    unit = (top - 0.9 / fig_h) / sum(heights)
    y = top
    for d in ds:
        sub = tab[tab["d"] == d]
        n = int(sub["n"].iloc[0])
        trials = int(sub["trials"].min())
        h = unit * (len(sub.groupby(keys)) + 1)
        ax = fig.add_axes((0.01, y - h - unit, 0.98, h))
        ax.axis("off")
        ax.set_title(f"d = {d}, n = {n}, {trials} draws", loc="left", fontsize=8, pad=2)
        cells, colours = [], []
        for kv, g in sub.groupby(keys, sort=True):
            row = [f"{kv[0]:g}", f"{kv[1]:g}", f"{kv[2]:g}"]
            col = ["white"] * 3
            for q in qtys:
                r = g[g["quantity"] == q].iloc[0]
                ok = bool(r["within_2se"])
                row += [
                    _fmt(r["sim_mean"], r["sim_se"]),
                    _fmt(r["simplex_n"]),
                    _fmt(r["limit"]),
                    "-" if not np.isfinite(r["z"]) else f"{r['z']:.1f}",
                ]
                col += ["#c8efc8" if ok else "#ffd9b3", "white", "white", "white"]
                if has_fd:
                    fin = np.isfinite(r["finite_d"])
                    row += [
                        _fmt(r["finite_d"]),
                        "-" if not np.isfinite(r["z_fd"]) else f"{r['z_fd']:.1f}",
                    ]
                    acc = "#c8efc8" if bool(r["accept_fd"]) else "#ffd9b3"
                    col += ["white", acc if fin else "white"]
            cells.append(row)
            colours.append(col)
        t = ax.table(
            cellText=cells,
            cellColours=colours,
            colLabels=header,
            loc="upper center",
            cellLoc="center",
            bbox=(0.0, 0.0, 1.0, 1.0),
        )
        t.auto_set_font_size(False)
        t.set_fontsize(6.3)
        y -= h + unit
    if has_fd:
        caption += (
            " Finite d: exact E[A_ii | ||z_0||] and the first-order mean field for cosine and "
            "lambda (alpha = 0) and for eta (every alpha) at each draw's own ||z_0|| [our "
            "derivation, docs/finite-d.md]; z fd green when |sim - finite d| <= max(3 SE, 0.002) "
            "(d >= 3)."
        )
    fig.suptitle(
        "Paper A: theorems vs simulation at gamma = f gamma_c(rho_hat) (near-simplex Gaussian "
        "tokens; theory at each draw's rho_hat, q_hat)",
        y=1.0 - 0.12 / fig_h,
        fontsize=9,
    )
    add_caption(fig, caption, y=0.1 / fig_h)
    return fig


def plot_finite_size(*, data: pd.DataFrame, caption: str):
    """Critical values (self-weight, cosine, lambda, eta at ``gamma_c(rho_hat)``) against n, one
    column per d: simulation (mean ± SE over draws), finite-n simplex value (dashed), the
    n -> inf limit (dotted) and, where the table has it, the finite-d theory (dash-dot,
    docs/finite-d.md), one colour per nominal rho and alpha."""
    apply_style()
    data = data[np.isclose(data["gamma_factor"], 1.0)]
    qtys = [q for q in QTY_LABEL if q in set(data["quantity"])]
    ds = sorted(data["d"].unique(), reverse=True)
    fig, axes = plt.subplots(
        len(qtys),
        len(ds),
        figsize=(3.4 * len(ds), 2.0 * len(qtys) + 1.0),
        squeeze=False,
        sharex=True,
    )
    series = list(data.groupby(["rho", "alpha"], sort=True).groups)
    for j, d in enumerate(ds):
        for i, q in enumerate(qtys):
            ax = axes[i, j]
            sub = data[(data["d"] == d) & (data["quantity"] == q)]
            for c, (rho, alpha) in enumerate(series):
                s = sub[(sub["rho"] == rho) & (sub["alpha"] == alpha)].sort_values("n")
                if s.empty:
                    continue
                col = f"C{c}"
                lab = rf"$\rho = {rho:g}$" + (
                    rf", $\alpha = {alpha:g}$" if len(set(data["alpha"])) > 1 else ""
                )
                ax.errorbar(
                    s["n"],
                    s["sim_mean"],
                    yerr=s["sim_se"].fillna(0.0),
                    fmt="o-",
                    ms=3,
                    lw=0.9,
                    color=col,
                    capsize=2,
                    label=lab,
                )
                ax.plot(s["n"], s["simplex_n"], "--", color=col, lw=0.9)
                ax.plot(s["n"], s["limit"], ":", color=col, lw=1.2)
                if "finite_d" in s and np.isfinite(s["finite_d"]).any():
                    ax.plot(s["n"], s["finite_d"], "-.", color=col, lw=1.1)
            ax.set_xscale("log", base=2)
            if i == 0:
                ax.set_title(f"d = {d}")
            if j == 0:
                ax.set_ylabel(f"{QTY_LABEL[q]} at " + r"$\gamma_c(\hat\rho)$")
            if i == len(qtys) - 1:
                ax.set_xlabel("n")
    h, lab = axes[0, 0].get_legend_handles_labels()
    h += [plt.Line2D([], [], color="k", ls="--", lw=0.9), plt.Line2D([], [], color="k", ls=":")]
    lab += ["finite-n simplex", r"limit $n \to \infty$"]
    if "finite_d" in data and np.isfinite(data["finite_d"]).any():
        h.append(plt.Line2D([], [], color="k", ls="-.", lw=1.1))
        lab.append("finite-d theory (ours)")
    fig.legend(h, lab, loc="upper center", ncol=len(lab), bbox_to_anchor=(0.5, 0.965), fontsize=7)
    fig.suptitle(
        "Paper A: critical values against n (simulation, finite-n simplex, limit, finite d)",
        y=0.995,
    )
    # the y labels and 3-decimal ticks need 0.75 inch whatever the width (few d: a narrow figure)
    left = max(0.09, 0.75 / fig.get_figwidth())
    fig.subplots_adjust(left=left, right=0.98, top=0.88, bottom=0.13, hspace=0.12, wspace=0.25)
    add_caption(fig, caption)
    return fig
