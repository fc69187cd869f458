"""Finite-d figures (ours, issue 9; ``docs/finite-d.md``): where the transition sits at finite
``(n, d)``, and the intermediate phase at low ``d``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.ticker import NullFormatter

from attnscale.figures.style import add_caption, apply_style, cell_edges
from attnscale.layer.theory import gamma_c

__all__ = ["plot_transition", "plot_intermediate"]

#: The head read off in the transition figure (a typical large model's head dimension and a
#: 128k context) [choice].
READ_OFF = {"d": 128, "n": 131072}


def _frame(x) -> pd.DataFrame:
    """One table from a DataFrame or a list of them (one per job)."""
    if isinstance(x, pd.DataFrame):
        return x
    return pd.concat(list(x), ignore_index=True)


def _d_colours(ds) -> dict:
    cmap = plt.get_cmap("viridis")
    ds = sorted(ds)
    return {d: cmap(0.92 * k / max(1, len(ds) - 1)) for k, d in enumerate(ds)}


#: Zoom range of the bottom row of the transition figure, gamma* / gamma_c [choice].
ZOOM = (0.97, 1.6)


def plot_transition(*, data, theory: pd.DataFrame, caption: str, regimes=None):
    """``gamma* = beta*(n, d, rho) / ln n`` against ``n``, one column per ``rho`` (ours).

    Top row: ``gamma*`` on log axes with Paper A's ``gamma_c`` (dashed) and, at ``rho = 0``, the
    power law of the ``ln n >> d`` regime (dotted, drawn where ``ln n >= d / 2`` [choice]: it is
    an asymptote in ``ln n / d``). Bottom row: ``gamma* / gamma_c`` zoomed to :data:`ZOOM`, where
    the typical heads (``d = 32 .. 512``) separate. Simulated points carry 2 SE error bars; the
    read-off head is starred and annotated in both rows.

    Parameters
    ----------
    data : pandas.DataFrame or list of them
        Simulated critical points (:func:`attnscale.experiments.finite_d.transition_points`).
    theory : pandas.DataFrame
        Theory table (:func:`attnscale.experiments.finite_d_theory.transition_theory`): exact
        ``gamma_star`` per ``(d, rho, n)`` and the rho = 0 power law ``beta_power``; rows with
        ``kind == "read_off"`` are annotated.
    caption : str
        Caption text (labels [paper] / [derived] / [choice]).
    regimes : pandas.DataFrame, optional
        Simulated ``beta*`` of the regimes experiment's finite-d series, one query row per
        context to ``n = 1e6`` (:func:`attnscale.experiments.regimes_tokens.token_points`,
        docs/regimes.md#finite-d-where-log-n-ends): drawn as diamonds in the panel of their
        ``rho`` for the ``d`` the theory has.
    """
    apply_style()
    pts = _frame(data)
    reg = _frame(regimes) if regimes is not None else pd.DataFrame(columns=["rho", "d", "n"])
    th = theory
    rhos = sorted(th["rho"].unique())
    colours = _d_colours(th["d"].unique())
    fig, axes = plt.subplots(
        2,
        len(rhos),
        figsize=(5.2 * len(rhos), 7.4),
        squeeze=False,
        sharex=True,
        gridspec_kw={"height_ratios": [1.5, 1.0]},
    )
    for j, rho in enumerate(rhos):
        _transition_column(axes[0, j], axes[1, j], rho, th, pts, reg, colours)
    axes[0, 0].set_ylabel(r"critical $\gamma^* = \beta^*(n, d, \rho)\,/\,\ln n$")
    axes[1, 0].set_ylabel(r"$\gamma^*/\gamma_c$ (zoom)")
    _transition_legend(fig, axes[0, 0], reg, rhos)
    fig.suptitle(
        r"Where is the transition at finite $d$? Critical $\gamma^*(n, d)$ (ours)", y=0.995
    )
    width = fig.get_figwidth()
    top = 0.86 if len(rhos) > 1 else 0.8
    fig.subplots_adjust(
        left=1.1 / width, right=1 - 0.2 / width, top=top, bottom=0.17, wspace=0.18, hspace=0.06
    )
    add_caption(fig, caption)
    return fig


def _transition_column(ax, az, rho, th, pts, reg, colours) -> None:
    """One ``rho`` column of :func:`plot_transition`: ``gamma*`` (top) and its zoom (bottom)."""
    gc = gamma_c(rho)
    grid = th[(th["rho"] == rho) & (th["kind"] == "grid")]
    for d, g in grid.groupby("d", sort=True):
        _transition_series(ax, az, d, g, colours[d], gc, reg, pts, rho)
    ax.axhline(gc, color="k", ls="--", lw=1.0)
    az.axhline(1.0, color="k", ls="--", lw=1.0)
    ro = th[(th["rho"] == rho) & (th["kind"] == "read_off")]
    _read_off(ax, az, ro, gc)
    ax.set_xscale("log")
    ax.set_yscale("log")
    n_all = pd.concat([th["n"], pts["n"]]) if not pts.empty else th["n"]
    if not reg.empty:
        n_all = pd.concat([n_all, reg["n"]])
    ax.set_xlim(0.8 * n_all.min(), 1.25 * n_all.max())
    top = min(grid["gamma_star"].max() * 1.3, 60.0 * gc)
    ax.set_ylim(0.8 * gc, top)
    ticks = [t for t in (1, 1.5, 2, 3, 5, 10, 20, 50, 100) if 0.8 * gc <= t <= top]
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_title(rf"$\rho = {rho:g}$  ($\gamma_c = {gc:g}$)")
    ax.grid(True, which="major", lw=0.3, alpha=0.5)
    az.set_ylim(*ZOOM)
    az.grid(True, which="major", lw=0.3, alpha=0.5)
    az.set_xlabel("context length n")


def _transition_series(ax, az, d, g, col, gc, reg, pts, rho) -> None:
    """One ``d``: the exact ``gamma*`` line, the rho = 0 power law, the regimes' diamonds and the
    simulated points with 2 SE error bars, in both rows."""
    g = g.sort_values("n")
    ax.plot(g["n"], g["gamma_star"], "-", color=col, lw=1.3, label=f"d = {d}")
    az.plot(g["n"], g["gamma_star"] / gc, "-", color=col, lw=1.3)
    ln = np.log(g["n"].to_numpy(dtype=float))
    pw = g["beta_power"].to_numpy(dtype=float) / ln
    keep = np.isfinite(pw) & (ln >= d / 2.0)
    if keep.any():
        ax.plot(g["n"].to_numpy()[keep], pw[keep], ":", color=col, lw=1.2)
    r = reg[np.isclose(reg["rho"].astype(float), rho) & (reg["d"] == d)].sort_values("n")
    if not r.empty:
        for a, scale in ((ax, 1.0), (az, gc)):
            a.errorbar(
                r["n"],
                r["gamma_sim"] / scale,
                yerr=2.0 * r["gamma_sim_se"] / scale,
                fmt="D",
                ms=3.6,
                color=col,
                mfc="white",
                mec=col,
                mew=1.0,
                capsize=2,
                elinewidth=0.8,
                zorder=5,
            )
    s = pts[(pts["rho"] == rho) & (pts["d"] == d)].sort_values("n")
    if not s.empty:
        for a, scale in ((ax, 1.0), (az, gc)):
            a.errorbar(
                s["n"],
                s["gamma_star"] / scale,
                yerr=2.0 * s["gamma_star_se"].fillna(0.0) / scale,
                fmt="o",
                ms=3.5,
                color=col,
                mec="k",
                mew=0.4,
                capsize=2,
                elinewidth=0.8,
                zorder=5,
            )


def _read_off(ax, az, ro, gc) -> None:
    """Star and annotate the read-off heads ``ro`` in both rows."""
    for k, (_, r) in enumerate(ro.iterrows()):
        for a, scale in ((ax, 1.0), (az, gc)):
            a.plot(
                r["n"],
                r["gamma_star"] / scale,
                marker="*",
                ms=13,
                color="crimson",
                mec="k",
                zorder=6,
            )
        ax.annotate(
            f"d = {int(r['d'])}, n = {int(r['n'])}:\n"
            rf"$\gamma^* = {r['gamma_star']:.3f}$, "
            rf"$\gamma^*/\gamma_c = {r['gamma_star'] / gc:.3f}$",
            (r["n"], r["gamma_star"]),
            xytext=(0.97, 0.93 - 0.14 * k),
            textcoords="axes fraction",
            ha="right",
            va="top",
            fontsize=7.5,
            arrowprops={"arrowstyle": "->", "color": "crimson", "lw": 0.8},
            bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "crimson", "lw": 0.6},
        )


def _transition_legend(fig, ax, reg, rhos) -> None:
    """The figure legend of :func:`plot_transition` (handles of ``ax`` and the line kinds)."""
    h, lab = ax.get_legend_handles_labels()
    h += [
        plt.Line2D([], [], color="k", ls="--"),
        plt.Line2D([], [], color="k", ls=":"),
        plt.Line2D([], [], color="grey", marker="o", ls="", mec="k", mew=0.4),
    ]
    if not reg.empty:
        h.append(plt.Line2D([], [], color="grey", marker="D", ls="", mfc="white", mec="grey"))
    lab += [
        r"Paper A: $\gamma_c = 1/(1-\rho)$",
        r"$\rho = 0$ power law $\propto n^{2/(d-1)}$ (where $\ln n \geq d/2$)",
        r"simulation ($\langle A_{ii}\rangle = 1/2$, $\pm 2$ SE)",
    ]
    if not reg.empty:
        top = float(reg["n"].max())
        k = np.log10(top)
        top_txt = f"10^{{{int(round(k))}}}" if abs(k - round(k)) < 1e-9 else f"{top:.0f}"
        lab.append(rf"one query row per context, $n \leq {top_txt}$ (regimes page), $\pm 2$ SE")
    ncol = (len(lab) + 1) // 2 if len(rhos) > 1 else 2
    fig.legend(h, lab, loc="upper center", ncol=ncol, fontsize=7, bbox_to_anchor=(0.5, 0.965))


def plot_intermediate(*, data, caption: str):
    """``N_eff`` and the number of keys holding 90 % of the mass over ``(rho, gamma)``, one
    column per ``d`` (ours): colour on a log scale from 1 to ``n``, dashed ``gamma_c``, solid the
    finite-d critical line ``gamma*`` (where the theory applies, ``d >= 3``), dotted the
    simulated contour ``<A_ii> = 1/2``.

    Parameters
    ----------
    data : pandas.DataFrame or list of them
        :func:`attnscale.experiments.finite_d.intermediate_phase` tables (one per ``d``).
    caption : str
        Caption text.
    """
    apply_style()
    df = _frame(data)
    ds = sorted(df["d"].unique(), reverse=True)
    n = int(df["n"].max())
    rows_q = [
        ("n_eff_mean", r"$N_\mathrm{eff} = 1/\sum_j A_{ij}^2$"),
        ("n_eff_others_mean", r"$N_\mathrm{eff}$ of the other keys"),
        ("k_mass_mean", "keys holding {:.0%} of the mass"),
    ]
    mass = float(df["mass"].iloc[0])
    fig, axes = plt.subplots(3, len(ds), figsize=(3.3 * len(ds) + 0.9, 8.6), squeeze=False)
    norm = LogNorm(vmin=1.0, vmax=n)
    mesh = None
    for j, d in enumerate(ds):
        sub = df[df["d"] == d]
        rhos = np.sort(sub["rho"].unique())
        gammas = np.sort(sub["gamma"].unique())
        for i, (col, _) in enumerate(rows_q):
            ax = axes[i, j]
            Z = sub.pivot_table(index="gamma", columns="rho", values=col).reindex(
                index=gammas, columns=rhos
            )
            mesh = ax.pcolormesh(
                cell_edges(rhos, False),
                cell_edges(gammas, True),
                Z.to_numpy(),
                cmap="magma",
                norm=norm,
                shading="flat",
            )
            A = sub.pivot_table(index="gamma", columns="rho", values="self_weight_mean").reindex(
                index=gammas, columns=rhos
            )
            ax.contour(
                rhos,
                gammas,
                A.to_numpy(),
                levels=[0.5],
                colors="cyan",
                linestyles=":",
                linewidths=1.2,
            )
            gc = sub.groupby("rho")["gamma_c"].first().reindex(rhos)
            ok = gc <= gammas.max()
            ax.plot(rhos[ok], gc[ok], "w--", lw=1.2)
            gs = sub.groupby("rho")["gamma_star"].first().reindex(rhos)
            ok = np.isfinite(gs) & (gs <= gammas.max())
            if ok.any():
                ax.plot(rhos[ok], gs[ok], "-", color="lime", lw=1.2)
            ax.set_yscale("log")
            ticks = [t for t in (0.25, 0.5, 1, 2, 4, 8, 16) if gammas.min() <= t <= gammas.max()]
            ax.set_yticks(ticks)
            ax.set_yticklabels([f"{t:g}" for t in ticks])
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_ylim(gammas.min(), gammas.max())
            if i == 0:
                t = int(sub["trials"].iloc[0])
                m = int(sub["rows"].iloc[0])
                ax.set_title(f"d = {d}, n = {int(sub['n'].iloc[0])} ({t} draws x {m} rows)")
            if i == len(rows_q) - 1:
                ax.set_xlabel(r"$\rho$ (nominal)")
            if j == 0:
                lab = rows_q[i][1].replace("{:.0%}", f"{mass:.0%}")
                ax.set_ylabel(f"{lab}\n" + r"$\gamma$  ($\beta = \gamma \ln n$)")
    handles = [
        plt.Line2D([], [], color="grey", ls="--"),
        plt.Line2D([], [], color="lime"),
        plt.Line2D([], [], color="cyan", ls=":"),
    ]
    labels = [
        r"$\gamma_c = 1/(1-\rho)$ [paper]",
        r"finite-d theory $\gamma^*(n, d, \rho)$ (d $\geq$ 3)",
        r"simulated $\langle A_{ii}\rangle = 1/2$",
    ]
    fig.legend(handles, labels, loc="upper center", ncol=3, bbox_to_anchor=(0.47, 0.97))
    # the two-line y labels need 0.9 inch whatever the width (a narrow figure: few d)
    left = max(0.1, 0.9 / fig.get_figwidth())
    fig.subplots_adjust(left=left, right=0.89, bottom=0.15, top=0.9, wspace=0.18, hspace=0.12)
    cax = fig.add_axes((0.905, 0.15, 0.015, 0.75))
    fig.colorbar(mesh, cax=cax, label="number of keys (log scale, 1 .. n)")
    fig.suptitle("Intermediate phase: how many keys does a query attend to? (ours)", y=0.99)
    add_caption(fig, caption)
    return fig
