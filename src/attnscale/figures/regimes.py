"""Figure of the critical-scale regimes (ours, issue 20; ``docs/regimes.md``): simulated and
predicted ``beta*(n)`` for the gap, random-energy, finite-d and near-tie regimes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnscale.figures.style import add_caption, apply_style

__all__ = [
    "COLOURS",
    "TIE_SHADES",
    "STYLES",
    "NAMES",
    "plot_regimes",
]

#: Colour of each regime (near-tie series get shades of their own colour) [choice].
COLOURS = {"gap": "tab:blue", "rem": "tab:red", "finite_d": "tab:green", "ties": "tab:purple"}
TIE_SHADES = ["#6a3d9a", "#9e6bd6", "#c51b7d", "#e7298a", "#7b3294"]

#: Line style of each prediction kind [choice].
STYLES = {
    "prediction": ("-", 1.4),
    "leading": ("--", 1.0),
    "penultimate": (":", 1.1),
    "freezing": ("-.", 0.9),
    "power_law": (":", 1.1),
    "asymptote": (":", 0.9),
    "first_order": ("--", 1.0),
}

#: Labels of the regimes in the legend.
NAMES = {
    "gap": "gap (Paper A, Gaussian tokens)",
    "rem": "no gap (REM)",
    "finite_d": "finite d",
}


def _series_colours(table: pd.DataFrame) -> dict:
    out = {}
    ties = sorted(table.loc[table["regime"] == "ties", "series"].unique())
    for s in table["series"].unique():
        reg = table.loc[table["series"] == s, "regime"].iloc[0]
        out[s] = TIE_SHADES[ties.index(s) % len(TIE_SHADES)] if reg == "ties" else COLOURS[reg]
    return out


def _label(series: str, regime: str, sub: pd.DataFrame) -> str:
    if regime == "ties":
        kappa = float(sub["kappa"].iloc[0])
        noise = float(sub["copy_noise"].iloc[0])
        txt = rf"noisy copies, $\epsilon = {noise:g}$" if noise > 0 else "exact ties"
        return rf"near-ties, $k = n^{{{kappa:g}}}$, {txt}"
    if regime == "finite_d":
        return rf"finite $d = {int(sub['d'].iloc[0])}$, $\rho = {float(sub['rho'].iloc[0]):g}$"
    if regime == "gap":
        return rf"gap: Gaussian tokens $d = {int(sub['d'].iloc[0])}$, $\rho = {float(sub['rho'].iloc[0]):g}$"
    return rf"no gap (REM), $s = {float(sub['s'].iloc[0]):g}$"


def plot_regimes(*, table: pd.DataFrame, read_off: pd.DataFrame, caption: str):
    """``beta*(n)`` of every regime: simulation against prediction (ours).

    Panels: (a) ``beta*`` against ``n`` on log axes, the series' prediction (solid), its leading
    order (dashed) and, for the REM, the penultimate Poisson-Dirichlet value (dotted) and the
    freezing point ``sqrt(2 ln n)/s`` (dash-dot); (b) ``beta* / ln n``, flat for a ``log n``
    scale; (c) ``(simulation - prediction) / SE`` with the +-2 band. Simulated points carry 2 SE
    error bars. The practical reading (``read_off``) is printed in panel (b).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`attnscale.experiments.regimes_summary.critical_scale_table` ``table``.
    read_off : pandas.DataFrame
        Its ``read_off`` table.
    caption : str
        Caption text (labels [paper] / [derived] / [choice]).
    """
    apply_style()
    colours = _series_colours(table)
    sims = table[table["kind"] == "simulation"]
    lines = table[(table["kind"] != "simulation") & (table["role"] == "line")]
    fig, axes = plt.subplots(
        1, 3, figsize=(14.0, 6.4), gridspec_kw={"width_ratios": [1.25, 1.25, 0.8]}
    )
    ax, ag, az = axes
    order = ["gap", "ties", "finite_d", "rem"]
    handles, labels = [], []
    for reg in order:
        for series in sorted(table.loc[table["regime"] == reg, "series"].unique()):
            col = colours[series]
            sub = lines[lines["series"] == series]
            for kind, (ls, lw) in STYLES.items():
                g = sub[sub["kind"] == kind].sort_values("n")
                if g.empty or kind == "asymptote" or (reg == "finite_d" and kind == "leading"):
                    continue
                n = g["n"].to_numpy(float)
                b = g["beta"].to_numpy(float)
                ok = np.isfinite(b)
                if reg == "finite_d" and kind == "power_law":
                    ok &= np.log(n) >= float(g["ln_n_breakdown"].iloc[0])
                alpha = 0.55 if kind in ("freezing", "power_law") else 1.0
                ax.plot(n[ok], b[ok], ls=ls, lw=lw, color=col, alpha=alpha)
                ag.plot(n[ok], b[ok] / np.log(n[ok]), ls=ls, lw=lw, color=col, alpha=alpha)
            if reg == "finite_d":  # where the log n (Gaussian row-sum) theory ends
                ln_b = float(sub["ln_n_breakdown"].iloc[0])
                for a in (ax, ag):
                    a.axvline(1.0 + np.exp(ln_b), color=col, ls=(0, (1, 3)), lw=0.9)
            s = sims[sims["series"] == series].sort_values("n")
            if s.empty:
                continue
            n, b, se = (s[c].to_numpy(float) for c in ("n", "beta", "beta_se"))
            kw = {
                "fmt": "o",
                "ms": 3.6,
                "color": col,
                "mec": "k",
                "mew": 0.4,
                "capsize": 2,
                "elinewidth": 0.9,
                "zorder": 5,
            }
            h = ax.errorbar(n, b, yerr=2 * se, **kw)
            ag.errorbar(n, b / np.log(n), yerr=2 * se / np.log(n), **kw)
            jitter = 1.0 + 0.04 * (len(handles) - 3)
            az.errorbar(
                n * jitter,
                s["z_pred"],
                yerr=0.0,
                fmt="o",
                ms=3.6,
                color=col,
                mec="k",
                mew=0.4,
                zorder=5,
            )
            handles.append(h)
            labels.append(_label(series, reg, s))
    # the read-off head of the practical reading
    ro = read_off[read_off["source"] == "theory"]
    rs = read_off[read_off["source"] == "simulation"].sort_values("k")
    if not ro.empty:
        r0 = ro.iloc[0]
        lines_txt = [
            rf"Head $d = {int(r0['d'])}$, $n = {int(r0['n'])}$, $\rho = {r0['rho']:g}$: "
            rf"$\gamma^* = {r0['gamma_star_exact']:.3f}$",
            rf"$\gamma^*$ drops by {r0['shift']:.0%} when the top group holds $k$ tokens",
            r"(the query and $k - 1$ repeats):",
        ]
        for _, r in ro.iterrows():
            what = (
                "exact ties"
                if r["copy_cosine"] >= 1.0
                else rf"copies at cosine {r['copy_cosine']:g}"
            )
            lines_txt.append(rf"   {what}: $k = {r['k_needed']:.2f}$")
        for _, r in rs[rs["k"] > 1].iterrows():
            lines_txt.append(
                rf"   simulated $k = {int(r['k'])}$: drop {r['shift_sim']:.4f} $\pm$ "
                rf"{r['shift_sim_se']:.1e} (theory {r['shift_theory']:.4f})"
            )
        ag.text(
            0.02,
            0.985,
            "\n".join(lines_txt),
            transform=ag.transAxes,
            va="top",
            ha="left",
            fontsize=6.6,
            bbox={
                "boxstyle": "round,pad=0.3",
                "fc": "white",
                "ec": "0.6",
                "lw": 0.6,
                "alpha": 0.92,
            },
            zorder=7,
        )
    for a in (ax, ag, az):
        a.set_xscale("log")
        a.grid(True, which="major", lw=0.3, alpha=0.5)
        a.set_xlabel("context length n")
    ax.set_yscale("log")
    ax.set_ylabel(r"critical scale $\beta^*(n)$: mean top-group weight $= 1/2$")
    ag.set_ylabel(r"$\beta^*/\ln n$ (flat for a $\log n$ scale)")
    gmax = float(np.nanmax(lines["gamma"])) if not lines.empty else 3.0
    ag.set_ylim(0.0, 1.3 * min(gmax, 3.0))
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

    ylo, yhi = ax.get_ylim()
    ticks = [t for t in (2, 3, 4, 6, 10, 15, 20, 30, 40, 60, 100) if ylo <= t <= yhi]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    az.axhspan(-2, 2, color="0.9", zorder=0)
    az.axhline(0.0, color="k", lw=0.6)
    az.set_ylabel("(simulation $-$ prediction) / SE")
    zmax = max(3.5, float(np.nanmax(np.abs(sims["z_pred"]))) * 1.15) if not sims.empty else 3.5
    az.set_ylim(-zmax, zmax)
    ax.set_title(r"(a) $\beta^*(n)$")
    ag.set_title(r"(b) $\beta^*/\ln n$")
    az.set_title("(c) simulation vs prediction")
    style_h = [
        plt.Line2D([], [], color="0.5", marker="o", ls="", mec="k", mew=0.4),
        plt.Line2D([], [], color="k", ls="-", lw=1.4),
        plt.Line2D([], [], color="k", ls="--", lw=1.0),
        plt.Line2D([], [], color=COLOURS["rem"], ls=":", lw=1.1),
        plt.Line2D([], [], color=COLOURS["rem"], ls="-.", lw=0.9, alpha=0.55),
        plt.Line2D([], [], color=COLOURS["finite_d"], ls=":", lw=1.1, alpha=0.55),
        plt.Line2D([], [], color=COLOURS["finite_d"], ls=(0, (1, 3)), lw=0.9),
    ]
    style_l = [
        r"simulation, $\pm 2$ SE",
        "prediction at finite n",
        r"leading order: $\ln\frac{n-k}{k}/(1-\rho)$, $\sqrt{2\ln n}/(\alpha_c s)$",
        r"REM: Poisson-Dirichlet, penultimate $w_n/(\alpha_c s)$",
        r"REM freezing point $\sqrt{2\ln n}/s$",
        r"finite d: first order (dashed), power law $\propto n^{2/(d-1)}$",
        r"finite d: $\ln n = d/(2(1+\rho-\rho^2/2))$, where the $\log n$ scale ends",
    ]
    fig.legend(
        handles + style_h,
        labels + style_l,
        loc="upper center",
        ncol=4,
        fontsize=6.8,
        bbox_to_anchor=(0.5, 0.975),
        frameon=False,
    )
    fig.suptitle(
        r"What sets the order of the critical scale? $\log n$ with a gap, $\sqrt{\log n}$ "
        r"without, $n^{2/(d-1)}$ at $\ln n \gg d$, $(1-\kappa)\,\gamma_c$ with $n^\kappa$ ties (ours)",
        y=0.995,
    )
    width = fig.get_figwidth()
    fig.subplots_adjust(left=0.7 / width, right=1 - 0.2 / width, top=0.80, bottom=0.24, wspace=0.24)
    add_caption(fig, caption)
    return fig
