"""Paper A figures: Figure 1 (lambda heat maps) and the critical-lambda theory check."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from attnscale.figures.style import add_caption, apply_style, cell_edges
from attnscale.layer import theory

__all__ = ["heatmap_panels", "plot_figure1", "plot_critical_check"]


def heatmap_panels(
    data: pd.DataFrame,
    value: str,
    *,
    label: str,
    title: str,
    caption: str,
    vmin: float = 0.0,
    vmax: float = 1.0,
    cmap: str = "viridis",
    norm=None,
    cbar_ticks=None,
    extend: str = "neither",
    line: pd.DataFrame | None = None,
    eta_line: bool = False,
):
    """One heat map per ``d`` (descending) over rho x gamma, dashed ``gamma = 1/(1 - rho)``,
    one shared colour bar. Shared by Figure 1 (lambda) and Figure 2 (eta).

    ``cbar_ticks`` (optional) sets the colour-bar ticks; ``extend`` (``"neither"``, ``"max"``,
    ...) marks values beyond the colour range on the colour bar. ``line`` (the table of
    :func:`attnscale.experiments.finite_d_theory.figure_line`) adds the finite-d critical line
    ``gamma*(n, d, rho)`` (ours, docs/finite-d.md) to the panels it has rows for (``d >= 3``), and
    with ``eta_line`` eta's finite-d line (its column ``gamma_star_eta``) as well."""
    apply_style()
    drew_fd = drew_eta = False
    ds = sorted(data["d"].unique(), reverse=True)
    fig, axes = plt.subplots(1, len(ds), figsize=(3.3 * len(ds) + 0.8, 3.4), squeeze=False)
    axes = axes[0]
    mesh = None
    for ax, d in zip(axes, ds, strict=True):
        sub = data[data["d"] == d]
        rhos = np.sort(sub["rho"].unique())
        gammas = np.sort(sub["gamma"].unique())
        Z = sub.pivot_table(index="gamma", columns="rho", values=value).reindex(
            index=gammas, columns=rhos
        )
        kw = {"norm": norm} if norm is not None else {"vmin": vmin, "vmax": vmax}
        mesh = ax.pcolormesh(
            cell_edges(rhos, False),
            cell_edges(gammas, True),
            Z.to_numpy(),
            cmap=cmap,
            shading="flat",
            **kw,
        )
        rr = np.linspace(rhos.min(), rhos.max(), 200)
        gc = theory.gamma_c(rr)
        ok = (gc >= gammas.min()) & (gc <= gammas.max())
        ax.plot(rr[ok], gc[ok], "w--", lw=1.4, label=r"$\gamma = 1/(1-\rho)$")
        ax.plot(rr[ok], gc[ok], "k--", lw=0.7, dashes=(3, 3))
        n = int(sub["n"].iloc[0])
        fd = line[line["d"] == d] if line is not None else line
        if fd is not None and len(fd):
            drew_eta = _finite_d_lines(ax, fd, gammas, eta_line) or drew_eta
            drew_fd = True
        ax.set_yscale("log")
        ax.set_xlabel(r"$\rho$ (nominal)")
        ax.set_title(f"d = {d}, n = {n}")
        ticks = [t for t in (0.25, 0.5, 1, 2, 4, 8, 16) if gammas.min() <= t <= gammas.max()]
        ax.set_yticks(ticks)
        ax.set_yticklabels([f"{t:g}" for t in ticks])
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(gammas.min(), gammas.max())
    axes[0].set_ylabel(r"$\gamma$  ($\beta = \gamma \log n$)")
    axes[0].legend(loc="upper left", framealpha=0.8)
    fig.subplots_adjust(left=0.07, right=0.89, bottom=0.27, top=0.86, wspace=0.18)
    cax = fig.add_axes((0.905, 0.27, 0.015, 0.59))
    cbar = fig.colorbar(mesh, cax=cax, label=label, extend=extend)
    if cbar_ticks is not None:
        cbar.set_ticks(cbar_ticks)
    fig.suptitle(title, y=0.99)
    if drew_fd:
        caption += (
            " Solid magenta: finite-d critical line gamma*(n, d, rho), where the mean self-weight"
            " of Gaussian tokens is 1/2 [our derivation, docs/finite-d.md; d >= 3]."
        )
    if drew_eta:
        caption += (
            " Solid amber: eta's finite-d critical line, where its mean field (averaged over"
            " ||z_0||) reaches 1/4 of its limit [our derivation, docs/finite-d.md#mean-field-for-eta]."
        )
    add_caption(fig, caption)
    return fig


def _finite_d_lines(ax, fd: pd.DataFrame, gammas, eta_line: bool) -> bool:
    """The finite-d critical line of ``fd`` (and with ``eta_line`` eta's line) within the gamma
    range; returns whether it drew eta's line."""
    rf, gs = fd["rho"].to_numpy(), fd["gamma_star"].to_numpy()
    ok = (gs >= gammas.min()) & (gs <= gammas.max())
    ax.plot(
        rf[ok],
        gs[ok],
        "-",
        color="#ff4fd8",
        lw=1.1,
        label=r"finite $d$: $\gamma^*(n, d, \rho)$ (ours)",
    )
    if eta_line and "gamma_star_eta" in fd:
        ge = fd["gamma_star_eta"].to_numpy()
        ok = (ge >= gammas.min()) & (ge <= gammas.max())
        ax.plot(
            rf[ok],
            ge[ok],
            "-",
            color="#ffb000",
            lw=1.1,
            label=r"finite $d$: $\eta$ at 1/4 of its limit (ours)",
        )
        return True
    return False


def plot_figure1(*, data: pd.DataFrame, caption: str, line: pd.DataFrame | None = None):
    """Figure 1 of Paper A: mean lambda over trials (docs/paper-a.md#gaussian-near-simplex-tokens),
    with the finite-d critical line ``line`` (:func:`heatmap_panels`)."""
    return heatmap_panels(
        data,
        "lambda_mean",
        label=r"angle ratio $\lambda$",
        title=r"Paper A, Figure 1: angle ratio $\lambda$ after one attention layer ($\alpha = 0$)",
        caption=caption,
        line=line,
    )


def plot_critical_check(*, data: pd.DataFrame, caption: str):
    """lambda at gamma_c(rho_hat) against rho_hat per d, with 1/(1+3 rho) and the finite-n
    simplex curve (docs/paper-a.md)."""
    apply_style()
    ds = sorted(data["d"].unique(), reverse=True)
    fig, axes = plt.subplots(
        2,
        len(ds),
        figsize=(3.3 * len(ds), 4.6),
        squeeze=False,
        sharex=True,
        gridspec_kw={"height_ratios": [3, 1.3]},
    )
    for k, d in enumerate(ds):
        ax, axr = axes[0, k], axes[1, k]
        sub = data[data["d"] == d]
        n = int(sub["n"].iloc[0])
        lo, hi = max(1e-3, sub["rho_hat"].min()), min(0.999, sub["rho_hat"].max())
        rr = np.linspace(min(lo, 0.05), max(hi, 0.9), 200)
        ax.plot(
            rr, [theory.critical_lambda(r) for r in rr], "k-", lw=1, label=r"limit $1/(1+3\rho)$"
        )
        ax.plot(
            rr,
            [theory.simplex_lambda(n, r, theory.gamma_c(r) * np.log(n)) for r in rr],
            "C1--",
            lw=1,
            label=f"finite-n simplex (n = {n})",
        )
        ax.plot(
            sub["rho_hat"],
            sub["lambda"],
            "o",
            ms=2.5,
            alpha=0.6,
            color="C0",
            label=r"simulation (one point per draw, at $\hat\rho$)",
        )
        axr.axhline(0, color="k", lw=0.6)
        axr.plot(sub["rho_hat"], sub["diff_vs_simplex_n"], "o", ms=2.5, alpha=0.6, color="C0")
        ax.set_title(f"d = {d}, n = {n}")
        axr.set_xlabel(r"realised mean cosine $\hat\rho$")
        ax.set_ylim(0, 1.05)
    axes[0, 0].set_ylabel(r"$\lambda$ at $\gamma_c(\hat\rho)$")
    axes[1, 0].set_ylabel("sim - simplex")
    axes[0, 0].legend(loc="upper right")
    fig.suptitle(r"Paper A theory check: critical $\lambda$ against $1/(1+3\rho)$ (ours)", y=0.99)
    add_caption(fig, caption)
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.2, top=0.9, wspace=0.25, hspace=0.08)
    return fig
