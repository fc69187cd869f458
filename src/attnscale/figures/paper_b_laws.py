"""Paper B ordered-weight figures: the subcritical weight profile (docs/paper-b.md) and the
critical laws of A_(1) and of the nearest key (ours).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnscale.figures.style import add_caption, apply_style
from attnscale.sphere import theory as st

__all__ = ["plot_profile", "plot_critical_laws"]


def plot_profile(*, csvs: list, caption: str, x_max: float = 4.0):
    """Subcritical weight profile (docs/paper-b.md): ratio and cumulative mass against ``x = k/m_n``."""
    apply_style()
    frames = list(csvs)
    fig, axes = plt.subplots(2, len(frames), figsize=(4.6 * len(frames), 6.4), squeeze=False)
    for j, df in enumerate(frames):
        d, n = int(df["d"].iloc[0]), int(df["n"].iloc[0])
        beta, m = float(df["beta"].iloc[0]), float(df["m_n"].iloc[0])
        df = df[df["x"] <= x_max]
        x = df["x"].to_numpy()
        i1 = int(np.argmin(np.abs(x - 1.0)))
        ax = axes[0, j]
        ax.fill_between(
            x,
            df["ratio_mean"] - 2 * df["ratio_se"],
            df["ratio_mean"] + 2 * df["ratio_se"],
            color="0.6",
            alpha=0.5,
            lw=0,
        )
        ax.plot(x, df["ratio_mean"], "k-", lw=1.2, label=r"simulation (mean $\pm$2 SE)")
        ax.plot(
            x, df["ratio_limit"], "--", color="tab:red", lw=1.1, label=r"limit $e^{-x^{\alpha}}$"
        )
        ax.plot(
            x,
            df["ratio_finite_beta"],
            ":",
            color="tab:blue",
            lw=1.3,
            label=r"finite $\beta$: $e^{-\beta F^{-1}(k/n)}$",
        )
        ax.plot(
            x,
            df["ratio_finite_beta_shifted"],
            "-.",
            color="tab:green",
            lw=1.0,
            label=r"shifted (ours): $e^{-\beta (F^{-1}(k/n) - F^{-1}(1/n))}$",
        )
        r = df.iloc[i1]
        ax.set_title(
            rf"d = {d}: n = {n}, $\beta = n^{{\alpha/4}}$ = {beta:.3g}, $m_n$ = {m:.1f}, "
            rf"$\alpha$ = {st.alpha_exponent(d):g}",
            loc="left",
        )
        ax.text(
            0.97,
            0.42,
            f"at x = 1: sim {r['ratio_mean']:.3f}\nlimit {r['ratio_limit']:.3f}\n"
            f"finite-β {r['ratio_finite_beta']:.3f}\nshifted {r['ratio_finite_beta_shifted']:.3f}",
            transform=ax.transAxes,
            ha="right",
            va="center",
            fontsize=7,
        )
        ax.set_ylabel(r"mean $A_{(k)} / A_{(1)}$")
        ax.set_ylim(0, 1.02)
        ax.legend(loc="upper right", fontsize=6.3)
        ax = axes[1, j]
        ax.fill_between(
            x,
            df["mass_mean"] - 2 * df["mass_se"],
            df["mass_mean"] + 2 * df["mass_se"],
            color="0.6",
            alpha=0.5,
            lw=0,
        )
        ax.plot(x, df["mass_mean"], "k-", lw=1.2, label="simulation")
        ax.plot(
            x,
            df["mass_limit"],
            "--",
            color="tab:red",
            lw=1.1,
            label=r"limit $P(1/\alpha, x^{\alpha})$",
        )
        ax.plot(x, df["mass_finite_beta"], ":", color="tab:blue", lw=1.3, label=r"finite $\beta$")
        ax.text(
            0.97,
            0.35,
            f"at x = 1: sim {r['mass_mean']:.3f}\nlimit {r['mass_limit']:.3f}\n"
            f"finite-β {r['mass_finite_beta']:.3f}",
            transform=ax.transAxes,
            ha="right",
            va="center",
            fontsize=7,
        )
        ax.set_xlabel(r"$x = k / m_n$")
        ax.set_ylabel(r"mean $\sum_{j \leq k} A_{(j)}$")
        ax.set_ylim(0, 1.02)
        ax.legend(loc="lower right", fontsize=6.5)
        for a in axes[:, j]:
            a.set_xlim(0, x_max)
            a.axvline(1.0, color="0.7", lw=0.6, ls=":")
    fig.suptitle(r"Paper B, subcritical weight profile ($q = e_1$, uniform keys)", y=0.99)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.92, bottom=0.17, hspace=0.3, wspace=0.22)
    counts = "; ".join(f"d = {int(f['d'].iloc[0])}: {int(f['trials'].iloc[0])}" for f in frames)
    add_caption(fig, f"{caption} Contexts per curve: {counts}.")
    return fig


# =========================================================================== 4. critical laws
def plot_critical_laws(*, ecdf: list, summary: list, caption: str):
    """Critical laws (ours): ECDF of A_(1) against the Poisson limit; nearest key against Weibull."""
    apply_style()
    E = pd.concat(ecdf, ignore_index=True)
    Sm = pd.concat(summary, ignore_index=True)
    ds = sorted(E["d"].unique())
    gammas = np.sort(E.loc[E["stat"] == "top_weight", "gamma"].dropna().unique())
    ncol = len(gammas) + 1
    fig, axes = plt.subplots(
        len(ds), ncol, figsize=(3.0 * ncol, 2.9 * len(ds) + 0.9), squeeze=False
    )
    for i, d in enumerate(ds):
        e = E[E["d"] == d]
        s = Sm[Sm["d"] == d]
        ns = np.sort(e.loc[e["source"] == "finite_n", "n"].unique())
        cols = {
            nv: plt.get_cmap("plasma")(0.1 + 0.7 * k / max(1, len(ns) - 1))
            for k, nv in enumerate(ns)
        }
        for j, g in enumerate(gammas):
            _top_weight_panel(axes[i, j], e, s, d, j, g, ns, cols)
        _nearest_panel(axes[i, -1], e, s, d, ns, cols)
    fig.suptitle(
        r"Paper B, critical laws (ours): $A_{(1)}$ at $\beta = \gamma n^{\alpha}$ and the nearest key, uniform keys",
        y=0.995,
    )
    fig.subplots_adjust(left=0.06, right=0.99, top=0.9, bottom=0.2, hspace=0.45, wspace=0.28)
    fin = Sm[Sm["source"] == "finite_n"]
    counts = f"{int(fin['samples'].min())}" + (
        "" if fin["samples"].nunique() == 1 else f" to {int(fin['samples'].max())}"
    )
    n_lim = int(Sm.loc[Sm["source"] == "poisson_limit", "samples"].min())
    add_caption(fig, f"{caption} Contexts per ECDF: {counts}; limit samples per gamma: {n_lim}.")
    return fig


def _top_weight_panel(ax, e, s, d, j, g, ns, cols) -> None:
    """The ECDF of ``A_(1)`` per n against the Poisson limit at one (d, gamma)."""
    tw = e[(e["stat"] == "top_weight") & np.isclose(e["gamma"], g)]
    for nv in ns:
        sub = tw[(tw["source"] == "finite_n") & (tw["n"] == nv)]
        ks = s[(s["stat"] == "top_weight") & (s["n"] == nv) & np.isclose(s["gamma"], g)]
        ax.step(
            sub["x"],
            sub["cdf"],
            where="post",
            color=cols[nv],
            lw=1.1,
            label=f"n = {nv:,} (KS {float(ks['ks_vs_limit'].iloc[0]):.3f})",
        )
    lim = tw[tw["source"] == "poisson_limit"]
    # where a finite-n ECDF falls (pointwise, +-2 SE) if its law is the limit's
    m_f = int(s.loc[(s["source"] == "finite_n") & (s["stat"] == "top_weight"), "samples"].iloc[0])
    m_l = int(s.loc[s["source"] == "poisson_limit", "samples"].iloc[0])
    half = 2 * np.sqrt(lim["cdf"] * (1 - lim["cdf"]) * (1 / m_f + 1 / m_l))
    ax.fill_between(
        lim["x"],
        lim["cdf"] - half,
        lim["cdf"] + half,
        color="0.6",
        alpha=0.35,
        lw=0,
        step="post",
    )
    ax.plot(lim["x"], lim["cdf"], "k--", lw=1.2, label=r"Poisson limit ($\pm$2 SE band)")
    ax.set_xlim(0, float(tw["x"].max()))
    ax.set_ylim(0, 1)
    beta_lab = rf"$\beta = {g:g}\, n^{{{'1' if d == 3 else '1/2'}}}$"
    ax.set_title(f"d = {d}, {beta_lab}", loc="left")
    ax.set_xlabel(r"$A_{(1)}$")
    if j == 0:
        ax.set_ylabel("ECDF")
    ax.legend(loc="best", fontsize=6)


def _nearest_panel(ax, e, s, d, ns, cols) -> None:
    """The scaled nearest key's survival function per n against the Weibull law."""
    nk = e[e["stat"] == "nearest_scaled"]
    for nv in ns:
        sub = nk[(nk["source"] == "finite_n") & (nk["n"] == nv)]
        ex = nk[(nk["source"] == "exact_finite_n") & (nk["n"] == nv)]
        ks = s[(s["stat"] == "nearest_scaled") & (s["n"] == nv)]
        ax.step(
            sub["x"],
            1 - sub["cdf"],
            where="post",
            color=cols[nv],
            lw=1.1,
            label=f"n = {nv:,} (KS {float(ks['ks_vs_limit'].iloc[0]):.3f})",
        )
        ax.plot(ex["x"], 1 - ex["cdf"], ":", color=cols[nv], lw=0.9)
    wl = nk[nk["source"] == "weibull_limit"]
    m_f = int(s.loc[(s["stat"] == "nearest_scaled"), "samples"].iloc[0])
    sf = 1 - wl["cdf"]
    half = 2 * np.sqrt(sf * (1 - sf) / m_f)
    ax.fill_between(wl["x"], np.maximum(sf - half, 1e-4), sf + half, color="0.6", alpha=0.35, lw=0)
    ax.plot(wl["x"], sf, "k--", lw=1.2, label=r"Weibull $e^{-C s^{1/\alpha}}$ ($\pm$2 SE)")
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1.05)
    ax.set_xlim(0, float(wl["x"].max()))
    ax.set_xlabel(r"$s$")
    ax.set_ylabel(r"$P(n^{\alpha} T_{(1)} > s)$")
    ax.set_title(f"d = {d}, nearest key", loc="left")
    ax.plot([], [], ":", color="0.4", label="exact finite n")
    ax.legend(loc="lower left", fontsize=6)
