"""Plot entry of the causal-mask figure (ours), ``docs/realistic-attention.md#causal-mask``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns

from attnscale.figures.style import add_caption, apply_style, cell_edges
from attnscale.layer.theory import gamma_c

__all__ = ["plot_causal"]

SCALING_LABEL = {
    "global": r"global $\beta = \gamma \ln n$",
    "position": r"per-position $\beta_i = \gamma \ln i$",
}
SCALING_COLOUR = {"global": "C0", "position": "C3"}


def _plain_log(axis) -> None:
    """Plain numbers (0.5, 1, 2, ...) on a log axis instead of powers of ten."""
    axis.set_major_locator(mticker.LogLocator(base=2.0))
    axis.set_major_formatter(mticker.FormatStrFormatter("%g"))
    axis.set_minor_formatter(mticker.NullFormatter())


def _map(ax, grid: pd.DataFrame, scaling: str):
    sub = grid[grid["scaling"] == scaling]
    rhos = np.sort(sub["rho"].unique())
    gammas = np.sort(sub["gamma"].unique())
    Z = sub.pivot(index="gamma", columns="rho", values="lambda_mean")
    Z = Z.reindex(index=gammas, columns=rhos).to_numpy()
    mesh = ax.pcolormesh(
        cell_edges(rhos, False),
        cell_edges(gammas, True),
        Z,
        cmap="viridis",
        vmin=0,
        vmax=1,
        shading="flat",
    )
    rr = np.linspace(rhos.min(), rhos.max(), 200)
    ax.plot(rr, gamma_c(rr), color="w", lw=2.4)
    ax.plot(rr, gamma_c(rr), "k--", lw=1.1, label=r"$\gamma_c = 1/(1-\rho)$")
    ax.set_yscale("log")
    _plain_log(ax.yaxis)
    ax.set_ylim(gammas.min(), gammas.max())
    ax.set_xlabel(r"$\rho$ (nominal)")
    ax.set_ylabel(r"$\gamma$")
    n, d = int(sub["n"].iloc[0]), int(sub["d"].iloc[0])
    ax.set_title(f"causal, {SCALING_LABEL[scaling]}\n(n = {n}, d = {d})")
    ax.legend(loc="upper left", fontsize=7)
    return mesh


def _mean_band(ax, x, mean, se, **kw):
    """A mean curve with a shaded +- one standard error band (no band where se is nan)."""
    (line,) = ax.plot(x, mean, **kw)
    ax.fill_between(x, mean - se, mean + se, color=line.get_color(), alpha=0.2, lw=0)


def plot_causal(*, data, self_weight, caption: str, slice_rho: float = 0.5):
    """Causal-mask figure: (a, b) lambda over (rho, gamma) for the global and the per-position
    scaling; (c) lambda against gamma at ``slice_rho`` with the exact causal simplex curves;
    (d, e) ``A_ii`` against position at ``gamma_c(rho_hat)`` with the simplex prediction;
    (f) ``A_ii`` against position at ``gamma / gamma_c`` = 2/3, 1, 3/2 (both scalings).

    Parameters
    ----------
    data : DataFrame
        ``"lambda_summary"`` table of :func:`attnscale.experiments.causal.causal_summary`
        (means and standard errors over draws).
    self_weight : DataFrame
        Its ``"self_weight_summary"`` table.
    caption : str
    slice_rho : float, optional
        The nominal rho of panels (c) and (f) (nearest grid value).
    """
    apply_style()
    lam, sw = data, self_weight
    grid = lam[lam["kind"] == "grid"]
    fig, axes = plt.subplots(2, 3, figsize=(13.5, 8.6))
    mesh = None
    for ax, s in zip(axes[0, :2], ("global", "position"), strict=True):
        mesh = _map(ax, grid, s)
    fig.colorbar(mesh, ax=axes[0, 1], label=r"$\lambda$ (mean over draws)", fraction=0.06, pad=0.03)
    _lambda_slice(axes[0, 2], lam, grid, slice_rho)
    crit = sw[np.isclose(sw["gamma_factor"], 1.0)]
    rho_colours = {r: f"C{k}" for k, r in enumerate(sorted(crit["rho"].unique()))}
    for ax, s in zip(axes[1, :2], ("global", "position"), strict=True):
        _self_weight_at_critical(ax, crit[crit["scaling"] == s], s, rho_colours)
    _sharpness_per_position(axes[1, 2], sw, slice_rho)
    n_sw, d_sw = int(sw["n"].iloc[0]), int(sw["d"].iloc[0])
    fig.suptitle(
        f"Paper A's layer under a causal mask: global vs per-position log scaling "
        f"(self-weights: n = {n_sw}, d = {d_sw}) (ours)"
    )
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.2, top=0.9, wspace=0.3, hspace=0.42)
    add_caption(fig, caption)
    return fig


def _lambda_slice(ax, lam, grid, slice_rho: float) -> None:
    """(c) lambda against gamma at the grid rho nearest ``slice_rho``, with the simplex curves."""
    rho_s = grid["rho"].unique()[np.argmin(np.abs(grid["rho"].unique() - slice_rho))]
    for s in ("global", "position"):
        sub = grid[(grid["scaling"] == s) & (grid["rho"] == rho_s)].sort_values("gamma")
        ax.errorbar(
            sub["gamma"],
            sub["lambda_mean"],
            yerr=sub["lambda_se"],
            fmt="o",
            ms=3.5,
            color=SCALING_COLOUR[s],
            label=f"simulated, {s}",
        )
        ax.plot(
            sub["gamma"],
            sub["lambda_simplex_causal_mean"],
            "-",
            lw=1.1,
            color=SCALING_COLOUR[s],
            label=f"causal simplex at $\\hat\\rho$, {s}",
        )
        crit = lam[(lam["kind"] == "critical") & (lam["scaling"] == s) & (lam["rho"] == rho_s)]
        ax.plot(
            crit["gamma"], crit["lambda_mean"], "*", ms=9, color=SCALING_COLOUR[s], mec="k", mew=0.5
        )
    bid = grid[(grid["rho"] == rho_s) & (grid["scaling"] == "global")].sort_values("gamma")
    ax.plot(
        bid["gamma"],
        bid["lambda_simplex_bidirectional_mean"],
        "k:",
        lw=1.1,
        label="bidirectional simplex (Paper A)",
    )
    gc = gamma_c(float(bid["rho_hat_mean"].mean()))
    ax.axvline(gc, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    _plain_log(ax.xaxis)
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel(r"$\lambda$")
    ax.set_title(f"lambda at rho = {rho_s:g} (stars: $\\gamma_c(\\hat\\rho)$, dashed line)")
    ax.legend(fontsize=6.5, loc="upper left")


def _self_weight_at_critical(ax, sub, s: str, rho_colours: dict) -> None:
    """(d, e) ``A_ii`` against position at ``gamma_c(rho_hat)`` for scaling ``s``."""
    for r, c in rho_colours.items():
        t = sub[sub["rho"] == r].sort_values("position")
        _mean_band(
            ax,
            t["position"],
            t["self_weight_mean"],
            t["self_weight_se"],
            color=c,
            lw=1.3,
            label=f"{r:g}",
        )
        ax.plot(t["position"], t["self_weight_simplex_mean"], "--", color=c, lw=1.0)
    ax.axhline(0.5, color="grey", lw=0.7)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("query position i (keys seen)")
    ax.set_ylabel(r"$A_{ii}$ (mean over position bin)")
    ax.set_title(
        f"self-weight at $\\gamma_c(\\hat\\rho)$, {SCALING_LABEL[s]}\n"
        "solid: simulated; dashed: $1/(1+(i-1)e^{\\beta_i(\\hat\\rho-1)})$"
    )
    ax.legend(title=r"$\rho$", fontsize=7)


def _sharpness_per_position(ax, sw, slice_rho: float) -> None:
    """(f) ``A_ii`` against position at several ``gamma / gamma_c``, both scalings."""
    rho_w = sw["rho"].unique()[np.argmin(np.abs(sw["rho"].unique() - slice_rho))]
    sub = sw[sw["rho"] == rho_w]
    factors = sorted(sub["gamma_factor"].unique())
    colours = sns.color_palette("magma_r", len(factors))
    for f, c in zip(factors, colours, strict=True):
        for s, ls in (("global", "-"), ("position", "--")):
            t = sub[(sub["gamma_factor"] == f) & (sub["scaling"] == s)].sort_values("position")
            ax.plot(
                t["position"], t["self_weight_mean"], ls, color=c, lw=1.2, label=f"{f:.2g}, {s}"
            )
    ax.axhline(0.5, color="grey", lw=0.7)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("query position i (keys seen)")
    ax.set_ylabel(r"$A_{ii}$ (simulated, mean over draws)")
    ax.set_title(f"sharpness per position, rho = {rho_w:g}")
    ax.legend(title=r"$\gamma/\gamma_c$, scaling", fontsize=6.5, loc="lower left")
