"""Plot entry of the simulated scaling rules (ours),
``docs/realistic-attention.md#real-models-scaling-rules-simulated``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd

from attnscale.figures.style import add_caption, apply_style

__all__ = ["plot_rules_simulated"]


def _frame(x) -> pd.DataFrame:
    return pd.concat(x, ignore_index=True) if isinstance(x, list) else x


def plot_rules_simulated(*, data, caption: str):
    """Three panels against the context length n (one line per rule, colours shared):
    (a) the rule's beta at the last position in units of the simplex critical ``gamma_c ln n``,
    with the finite-d critical beta (``docs/finite-d.md``); (b) the mean self-weight ``A_ii`` of
    the last query block, simulated (markers, +- 1 SE over draws), for simplex tokens (dashed)
    and the finite-d ``E[A_ii]`` (dotted);
    (c) lambda inside the last block, likewise. One row of panels per ``rho``.

    Parameters
    ----------
    data : DataFrame
        The figure data, :func:`attnscale.experiments.causal_rules_simulated.rules_simulated_summary`
        (means and standard errors over draws; a plot function reduces nothing).
    caption : str
    """
    apply_style()
    df = _frame(data)
    rhos = sorted(df["rho"].unique())
    names = list(dict.fromkeys(df["rule"]))
    colours = {r: f"C{k}" for k, r in enumerate(names)}
    fig, axes = plt.subplots(len(rhos), 3, figsize=(13.5, 4.3 * len(rhos) + 1.6), squeeze=False)
    for row, rho in zip(axes, rhos, strict=True):
        agg = df[df["rho"] == rho]
        for r in names:
            _rule_lines(row, agg[agg["rule"] == r].sort_values("n"), colours[r], r)
        row[0].axhline(
            1.0,
            color="k",
            ls="--",
            lw=1.4,
            label=r"simplex critical $\beta = \gamma_c(\rho) \ln n$",
        )
        # the finite-d critical beta is the same for every rule: one value per n
        crit = agg.groupby("n")["beta_critical_finite_d_mean"].mean()
        if crit.notna().any():  # finite-d critical beta (nominal rho) in units of gamma_c ln n
            ratio = crit * (1.0 - rho) / np.log(crit.index.to_numpy(dtype=float))
            row[0].plot(
                crit.index,
                ratio,
                "k:",
                lw=1.8,
                label=f"finite-d critical beta (d = {int(agg['d'].iloc[0])})",
            )
        row[0].set_yscale("log")
        row[0].yaxis.set_major_locator(mticker.LogLocator(base=2.0))
        row[0].yaxis.set_major_formatter(mticker.FormatStrFormatter("%g"))
        row[0].yaxis.set_minor_formatter(mticker.NullFormatter())
        row[0].set_ylabel(r"$\beta_n / (\gamma_c \ln n)$ at the last position")
        row[0].set_title(f"rule's scale vs critical lines, rho = {rho:g}")
        row[1].axhline(0.5, color="grey", lw=0.7)
        row[1].set_ylim(-0.02, 1.02)
        row[1].set_ylabel(r"mean $A_{ii}$ of the last block")
        row[1].set_title("self-weight (dashed: simplex at $\\hat\\rho$; dotted: finite-d)")
        row[2].set_yscale("log")
        row[2].set_ylabel(r"$\lambda$ inside the last block")
        row[2].set_title("angle ratio (dashed: simplex tokens at $\\hat\\rho$)")
        for ax in row:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("context length n (keys seen by the last query)")
        row[0].legend(fontsize=6, loc="best")  # moved off the data when saved (place_legends)
    d = int(df["d"].iloc[0])
    block = int(df["block"].iloc[0])
    fig.suptitle(
        f"Real models' scaling rules simulated: causal mask, d_head = {d}, "
        f"last {block} queries (ours)"
    )
    bottom = 1.5 / fig.get_figheight()
    fig.subplots_adjust(
        left=0.06, right=0.98, bottom=bottom + 0.06, top=0.9, wspace=0.28, hspace=0.4
    )
    add_caption(fig, caption)
    return fig


def _rule_lines(row, a: pd.DataFrame, c: str, r: str) -> None:
    """One rule's curves in the three panels ``row`` of one rho."""
    # no error bar (not a nan one) where a single draw has no standard error
    # the self-weight with z_0 as a control variate: same expectation, far smaller SE
    sw_se, lam_se = a["self_weight_cv_se"].fillna(0.0), a["lambda_block_se"].fillna(0.0)
    row[0].plot(a["n"], a["gamma_ratio_mean"], "-o", ms=3, color=c, lw=1.2, label=r)
    row[1].errorbar(
        a["n"],
        a["self_weight_cv_mean"],
        yerr=sw_se,
        fmt="-o",
        ms=3,
        color=c,
        lw=1.2,
        capsize=2,
        label=r,
    )
    row[1].plot(a["n"], a["self_weight_simplex_mean"], "--", color=c, lw=0.9)
    row[1].plot(a["n"], a["self_weight_finite_d_mean"], ":", color=c, lw=1.4)
    row[2].errorbar(
        a["n"],
        a["lambda_block_mean"],
        yerr=lam_se,
        fmt="-o",
        ms=3,
        color=c,
        lw=1.2,
        capsize=2,
    )
    row[2].plot(a["n"], a["lambda_block_simplex_mean"], "--", color=c, lw=0.9)
