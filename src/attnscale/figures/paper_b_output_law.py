"""Paper B critical output law figure (ours): the law of ``|n^{1/(d-1)} P_q(ATT_n(q) - q)|`` at
``beta = gamma n^alpha`` against its marked-Poisson limit (docs/paper-b-beyond.md#critical-output-law).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import NullFormatter

from attnscale.figures.style import add_caption, apply_style

__all__ = ["plot_output_law"]


def _n_label(n: int) -> str:
    return rf"$10^{{{int(round(np.log10(n)))}}}$" if np.log10(n) % 1 == 0 else f"{n:,}"


def plot_output_law(*, ecdf: list, summary: list, caption: str):
    """Entry of rule ``paper_b_output_law_figure`` (docs/paper-b-beyond.md#experiment-and-finding).

    Rows d; columns: ECDF of ``|L_n|`` per gamma (seaborn), KS distance against n with its
    noise level, and ``E |L_n|^2`` over the Mecke value of ``E |L|^2`` (+-2 SE)."""
    apply_style()
    E = pd.concat(ecdf, ignore_index=True)
    S = pd.concat(summary, ignore_index=True)
    ds = sorted(S["d"].unique())
    gammas = np.sort(S["gamma"].unique())
    ns = np.sort(S.loc[S["source"] == "finite_n", "n"].unique())
    pal = dict(zip(ns, sns.color_palette("viridis_r", len(ns)), strict=True))
    ncol = len(gammas) + 2
    fig, axes = plt.subplots(
        len(ds), ncol, figsize=(3.0 * ncol, 2.9 * len(ds) + 1.0), squeeze=False
    )
    n_right = ns.max() * 4.0  # x position of the limit's own repeat in the KS / moment panels
    for i, d in enumerate(ds):
        e, s = E[E["d"] == d], S[S["d"] == d]
        for j, g in enumerate(gammas):
            _ecdf_panel(axes[i, j], e, s, d, j, g, ns, pal)
        _ks_panel(axes[i, -2], s, d, gammas, n_right)
        _moment_panel(axes[i, -1], s, d, gammas, n_right)
    fig.suptitle(
        r"Paper B, critical output law (ours): $n^{1/(d-1)} P_q(\mathrm{ATT}_n(q) - q)$ against "
        r"the marked-Poisson limit $\sum_i W_i z_i$, uniform keys",
        y=0.995,
    )
    fig.subplots_adjust(left=0.05, right=0.99, top=0.9, bottom=0.22, hspace=0.5, wspace=0.34)
    fin = S[S["source"] == "finite_n"]
    counts = (
        f"Samples: {int(fin['samples'].min())} contexts per (d, gamma, n); "
        f"{int(S.loc[S['source'] == 'limit', 'samples'].min())} limit samples per (d, gamma)."
    )
    add_caption(fig, f"{caption} {counts}")
    return fig


def _ecdf_panel(ax, e, s, d, j, g, ns, pal) -> None:
    """The ECDF of ``|L_n|`` per n against the limit at one (d, gamma), KS distances in the legend."""
    sub = e[np.isclose(e["gamma"], g)]
    fin = sub[sub["source"] == "finite_n"]
    sns.ecdfplot(data=fin, x="norm", hue="n", palette=pal, lw=1.1, ax=ax, legend=False)
    sns.ecdfplot(data=sub[sub["source"] == "limit"], x="norm", color="k", ls="--", lw=1.3, ax=ax)
    ks = s[np.isclose(s["gamma"], g) & (s["source"] == "finite_n")].set_index("n")
    for nv in ns:
        ax.plot(
            [],
            [],
            color=pal[nv],
            label=f"n = {_n_label(nv)} (KS {ks.loc[nv, 'ks_vs_limit']:.3f})",
        )
    ax.plot([], [], "k--", label="marked-Poisson limit")
    ax.set_xlim(0, float(sub["norm"].quantile(0.995)))
    ax.set_xlabel(r"$|L_n| = n^{1/(d-1)}\,|P_q(\mathrm{ATT}_n(q) - q)|$")
    ax.set_ylabel("ECDF" if j == 0 else "")
    ax.set_title(rf"d = {d}, $\beta = {g:g}\,n^{{2/(d-1)}}$", loc="left")
    ax.legend(loc="lower right", fontsize=5.8)


def _ks_panel(ax, s, d, gammas, n_right) -> None:
    """KS distance against n, with the noise level of the two-sample KS at these sizes."""
    r0 = s.iloc[0]
    ax.axhspan(0, r0["ks_null_q95"], color="0.85", lw=0, label="95% noise level (Kolmogorov law)")
    ax.axhline(r0["ks_null_mean"], color="0.5", ls="--", lw=0.9, label="mean noise level")
    for k, g in enumerate(gammas):
        sg = s[np.isclose(s["gamma"], g)]
        fin = sg[sg["source"] == "finite_n"].sort_values("n")
        rep = sg[sg["source"] == "limit_repeat"]
        ax.plot(
            fin["n"],
            fin["ks_vs_limit"],
            "o-",
            color=f"C{k}",
            ms=3.5,
            lw=1,
            label=rf"$\gamma$ = {g:g}",
        )
        ax.plot(
            np.full(len(rep), n_right), rep["ks_vs_limit"], "s", color=f"C{k}", mfc="none", ms=5
        )
    ax.plot([], [], "s", color="0.3", mfc="none", label="limit vs limit (right)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("n (keys)")
    ax.set_ylabel("KS distance to the limit")
    ax.set_title(f"d = {d}: KS against n", loc="left")
    ax.legend(loc="upper right", fontsize=5.8)


def _moment_panel(ax, s, d, gammas, n_right) -> None:
    """The second moment over the Mecke value (+-2 SE), the limit simulation on the right."""
    for k, g in enumerate(gammas):
        sg = s[np.isclose(s["gamma"], g)]
        fin = sg[sg["source"] == "finite_n"].sort_values("n")
        lim = sg[sg["source"] == "limit"]
        m = float(sg["m2_mecke"].iloc[0])
        ax.errorbar(
            fin["n"] * (1 + 0.08 * (k - 1)),
            fin["m2_mean"] / m,
            yerr=2 * fin["m2_se"] / m,
            fmt="o-",
            color=f"C{k}",
            ms=3.5,
            lw=1,
            capsize=1.5,
            label=rf"$\gamma$ = {g:g}: $E|L|^2$ = {m:.4g}",
        )
        ax.errorbar(
            n_right * (1 + 0.08 * (k - 1)),
            lim["m2_mean"] / m,
            yerr=2 * lim["m2_se"] / m,
            fmt="s",
            mfc="none",
            color=f"C{k}",
            ms=5,
            capsize=1.5,
        )
    ax.axhline(1.0, color="k", ls="--", lw=0.9)
    ax.plot([], [], "s", color="0.3", mfc="none", label="limit simulation (right)")
    ax.set_xscale("log")
    ax.set_xlabel("n (keys)")
    ax.set_ylabel(r"$E|L_n|^2$ / Mecke value ($\pm$2 SE)")
    ax.set_title(f"d = {d}: second moment", loc="left")
    ax.legend(loc="best", fontsize=5.8)
