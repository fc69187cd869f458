"""Paper B phase diagram of the top weight A_(1) (docs/paper-b.md): heat map, critical lines,
subcritical asymptote.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnscale.figures.style import add_caption, apply_style, cell_edges
from attnscale.sphere import theory as st

__all__ = ["plot_phase_diagram"]


def plot_phase_diagram(*, phase: pd.DataFrame, limit: pd.DataFrame, caption: str):
    """A_(1) phase diagram (docs/paper-b.md): heat map, critical lines, subcritical collapse."""
    apply_style()
    D = phase
    Lm = limit.sort_values("gamma")
    d = int(D["d"].iloc[0])
    grid = D[D["kind"] == "grid"]
    lines = D[D["kind"] == "line"]
    fig, axes = plt.subplots(1, 3, figsize=(12.4, 4.3), gridspec_kw={"width_ratios": [1.25, 1, 1]})
    line_gammas, levels = _heat_map(fig, axes[0], grid, lines, Lm, d)
    _critical_lines(axes[1], lines, line_gammas, levels, Lm)
    _subcritical_collapse(axes[2], grid, Lm)
    fig.subplots_adjust(left=0.06, right=0.985, top=0.86, bottom=0.3, wspace=0.32)
    fig.suptitle(
        rf"Paper B, phase diagram of the top weight $A_{{(1)}}$ (uniform keys on $S^{{{d - 1}}}$)",
        y=0.985,
    )
    counts = (
        f"Contexts: {int(D['trials'].iloc[0])} per heat-map cell and per line point; "
        f"{int(Lm['trials'].iloc[0])} limit samples per gamma."
    )
    add_caption(fig, f"{caption} {counts}")
    return fig


def _heat_map(fig, ax, grid, lines, Lm, d):
    """The heat map of mean ``A_(1)`` over ``(n, beta)`` with the lines ``beta = gamma n^alpha``
    and the simulated contours at the Poisson limit's values; returns the lines' gammas and
    those values."""
    alpha = st.alpha_exponent(d)
    ns = np.sort(grid["n"].unique())
    betas = np.sort(grid["beta"].unique())
    Z = grid.pivot_table(index="beta", columns="n", values="top_weight_mean").reindex(
        index=betas, columns=ns
    )
    mesh = ax.pcolormesh(
        cell_edges(ns, True),
        cell_edges(betas, True),
        Z.to_numpy(),
        cmap="viridis",
        vmin=0,
        vmax=1,
        shading="flat",
        rasterized=True,
    )
    nn = np.geomspace(ns.min(), ns.max(), 200)
    line_gammas = np.sort(lines["gamma"].unique())
    levels = []
    for g in line_gammas:
        lv = float(Lm.loc[np.isclose(Lm["gamma"], g), "top_weight_mean"].iloc[0])
        levels.append(lv)
        style = "-" if np.isclose(g, 1.0) else "--"
        ax.plot(nn, g * nn**alpha, style, color="w", lw=1.3 if style == "-" else 1.0)
        ax.text(
            ns.min() * 1.15,
            g * (ns.min() * 1.15) ** alpha * 1.35,
            rf"$\gamma$={g:g}",
            color="w",
            fontsize=6.5,
            ha="left",
            va="bottom",
        )
    ax.contour(ns, betas, Z.to_numpy(), levels=sorted(levels), colors="tab:orange", linewidths=0.9)
    ax.text(
        0.97,
        0.04,
        "Poisson limit $E\\,W_{(1)}$:\n"
        + "\n".join(
            rf"$\gamma$ = {g:g}: {lv:.3f}" for g, lv in zip(line_gammas, levels, strict=True)
        ),
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        color="w",
        fontsize=6.5,
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (keys)")
    ax.set_ylabel(r"$\beta$")
    ax.set_title(
        rf"mean $A_{{(1)}}$, d = {d}; white: $\beta = \gamma n^{{1/2}}$, orange: simulated contours",
        loc="left",
        fontsize=7.5,
    )
    fig.colorbar(mesh, ax=ax, label=r"$E\,A_{(1)}$", pad=0.02)
    return line_gammas, levels


def _critical_lines(ax, lines, line_gammas, levels, Lm) -> None:
    """Along the lines ``beta = gamma n^alpha``: simulation against the Poisson limit."""
    for i, g in enumerate(line_gammas):
        sub = lines[np.isclose(lines["gamma"], g)].sort_values("n")
        c = f"C{i}"
        ax.errorbar(
            sub["n"],
            sub["top_weight_mean"],
            yerr=2 * sub["top_weight_se"],
            fmt="o-",
            ms=3,
            lw=1,
            color=c,
            capsize=1.5,
            label=rf"$\gamma$ = {g:g}",
        )
        lv = levels[i]
        lse = float(Lm.loc[np.isclose(Lm["gamma"], g), "top_weight_se"].iloc[0])
        ax.axhspan(lv - 2 * lse, lv + 2 * lse, color=c, alpha=0.25, lw=0)
        ax.axhline(lv, color=c, ls="--", lw=0.9)
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("n (keys)")
    ax.set_ylabel(r"$E\,A_{(1)}$ at $\beta = \gamma n^{1/2}$ ($\pm$2 SE)")
    ax.set_title("critical lines: simulation vs Poisson limit (dashed)", loc="left")
    ax.legend(loc="upper left", ncol=3, fontsize=6.5)


def _subcritical_collapse(ax, grid, Lm) -> None:
    """The top weight over its subcritical asymptote, per n and in the limit."""
    ns = np.sort(grid["n"].unique())
    sel = ns[ns >= 100][:: max(1, len(ns[ns >= 100]) // 5)]
    cmap = plt.get_cmap("viridis")
    for j, nv in enumerate(sel):
        sub = grid[grid["n"] == nv].sort_values("beta")
        col = cmap(j / max(1, len(sel) - 1) * 0.9)
        r, rse = (
            sub[k] / sub["subcritical_asymptote"] for k in ("top_weight_mean", "top_weight_se")
        )
        ax.fill_between(sub["gamma"], r - 2 * rse, r + 2 * rse, color=col, alpha=0.3, lw=0)
        ax.plot(sub["gamma"], r, "-", color=col, lw=1, label=f"n = {nv:,}")
    r, rse = (Lm[k] / Lm["subcritical_asymptote"] for k in ("top_weight_mean", "top_weight_se"))
    ax.fill_between(Lm["gamma"], r - 2 * rse, r + 2 * rse, color="k", alpha=0.2, lw=0)
    ax.plot(Lm["gamma"], r, "k--", lw=1.3, label=r"Poisson limit (bands: $\pm$2 SE)")
    ax.axhline(1.0, color="tab:red", lw=0.8)
    ax.set_xscale("log")
    ax.set_ylim(0, 2.0)
    ax.set_xlim(Lm["gamma"].min(), Lm["gamma"].max())
    ax.set_xlabel(r"$\gamma = \beta / n^{1/2}$")
    ax.set_ylabel(r"$E\,A_{(1)} \,/\, (\beta^2 / 1.5 n)$")
    ax.set_title(r"subcritical asymptote $\beta^2/(1.5n)$ (red = 1)", loc="left")
    ax.legend(loc="upper right", fontsize=6.3)
