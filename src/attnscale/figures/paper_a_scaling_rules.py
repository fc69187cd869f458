"""Scaling rules of real models on Paper A's phase diagram (ours; docs/scaling-rules.md)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnscale.figures.style import add_caption, apply_style, cell_edges
from attnscale.layer import theory

__all__ = ["plot_scaling_rules"]


def plot_scaling_rules(*, rules: pd.DataFrame, figure1: pd.DataFrame, caption: str):
    """Left: ``gamma_eff(n) / gamma_c`` under calibration A against n. Right: Figure 1's
    largest-d lambda map with each rule's ``gamma_eff`` at the overlay n as a curve over rho."""
    apply_style()
    fig1 = figure1
    fig, (ax, axm) = plt.subplots(1, 2, figsize=(11.5, 4.4))
    names = list(dict.fromkeys(rules["rule"]))
    colours = {r: f"C{k}" for k, r in enumerate(names)}
    for r in names:
        sub = rules[rules["rule"] == r].sort_values("n")
        ax.plot(sub["n"], sub["gamma_ratio"], color=colours[r], lw=1.3, label=r)
    ax.axhline(1.0, color="k", lw=1, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("context length n (keys per query)")
    ax.set_ylabel(r"$\gamma_{\mathrm{eff}}(n) / \gamma_c$  (calibration A)")
    ax.text(
        0.02,
        0.97,
        "super-critical: attention -> identity",
        transform=ax.transAxes,
        va="top",
        fontsize=7,
    )
    ax.text(0.02, 0.03, "sub-critical: tokens collapse", transform=ax.transAxes, fontsize=7)
    ax.set_title(r"rules with $\beta_n = \gamma_c \ln L \; m(n)$ (critical at L)")
    ax.legend(fontsize=6.5, loc="upper right")

    d = int(fig1["d"].max())
    sub = fig1[fig1["d"] == d]
    rhos = np.sort(sub["rho"].unique())
    gammas = np.sort(sub["gamma"].unique())
    Z = sub.pivot_table(index="gamma", columns="rho", values="lambda_mean").reindex(
        index=gammas, columns=rhos
    )
    mesh = axm.pcolormesh(
        cell_edges(rhos, False),
        cell_edges(gammas, True),
        Z.to_numpy(),
        cmap="Greys_r",
        vmin=0,
        vmax=1,
        shading="flat",
    )
    rr = np.linspace(rhos.min(), rhos.max(), 200)
    axm.plot(rr, theory.gamma_c(rr), color="w", lw=2.6)
    axm.plot(rr, theory.gamma_c(rr), "k--", lw=1.2, label=r"$\gamma_c = 1/(1-\rho)$")
    over = rules[rules["is_overlay_n"]]
    n_over = int(over["n"].iloc[0])
    for r in names:
        ratio = float(over[over["rule"] == r]["gamma_ratio"].iloc[0])
        g = ratio / (1 - rr)
        ok = (g >= gammas.min()) & (g <= gammas.max())
        axm.plot(rr[ok], g[ok], color=colours[r], lw=1.2)
    axm.set_yscale("log")
    axm.set_ylim(gammas.min(), gammas.max())
    axm.set_xlabel(r"$\rho$ (nominal)")
    axm.set_ylabel(r"$\gamma$")
    axm.set_title(
        f"on Figure 1 (d = {d}, n = {int(sub['n'].iloc[0])}): rules at n = {n_over:,} "
        "(colours as left)"
    )
    axm.legend(fontsize=7, loc="upper left")
    fig.colorbar(mesh, ax=axm, label=r"$\lambda$ (Figure 1)")
    fig.suptitle("Attention-logit scaling rules of real models on Paper A's phase diagram (ours)")
    fig.subplots_adjust(left=0.07, right=0.97, bottom=0.25, top=0.86, wspace=0.25)
    add_caption(fig, caption)
    return fig
