"""Figure of the critical-scale regimes (ours, issue 20; ``docs/regimes.md``): simulated and
predicted ``beta*(n)`` for the gap, random-energy, finite-d and near-tie regimes, the power-law
regime of the finite-d series and the near-ties at small ``d``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

from attnscale.figures.style import add_caption, apply_style

__all__ = [
    "COLOURS",
    "TIE_SHADES",
    "FD_SHADES",
    "STYLES",
    "BREAKDOWN_STYLE",
    "MAIN_MIN_D",
    "NAMES",
    "plot_regimes",
]

#: Colour of each regime (near-tie and finite-d series get shades of their own) [choice].
COLOURS = {"gap": "tab:blue", "rem": "tab:red", "finite_d": "tab:green", "ties": "tab:purple"}
TIE_SHADES = ["#6a3d9a", "#9e6bd6", "#c51b7d", "#e7298a", "#7b3294"]
#: Finite-d series, from the largest d down [choice].
FD_SHADES = ["#2ca02c", "#8c6d1f", "#17becf", "#7f7f7f"]

#: Line style (dash pattern, width) of each prediction kind; every kind drawn in one panel has
#: its own pattern [choice].
STYLES = {
    "prediction": ("-", 1.4),
    "leading": ("--", 1.0),
    "penultimate": (":", 1.2),
    "freezing": ("-.", 0.9),
    "first_order": ((0, (4, 1.5, 1, 1.5, 1, 1.5)), 1.1),
    "power_law": ((0, (1, 2.5)), 1.5),
}
#: The vertical line where the first-order (log n) theory of a finite-d series ends [choice].
BREAKDOWN_STYLE = {"color": "0.45", "ls": (0, (6, 3)), "lw": 0.8}

#: Finite-d series with a smaller d than this are shown in the power-law panel only: their
#: beta* would stretch panels (a) and (b) far beyond the other regimes [choice].
MAIN_MIN_D = 8

#: Labels of the regimes in the legend.
NAMES = {
    "gap": "gap (Paper A, Gaussian tokens)",
    "rem": "no gap (REM)",
    "finite_d": "finite d",
}


def _tie_spec(series: str) -> str:
    """A tie series' name without the `` d=<d>`` of a second set: one colour per (kappa, noise)."""
    return series.split(" d=")[0]


def _colours(table: pd.DataFrame) -> dict:
    out = {}
    ties = sorted({_tie_spec(s) for s in table.loc[table["regime"] == "ties", "series"]})
    fds = sorted(table.loc[table["regime"] == "finite_d", "d"].unique(), reverse=True)
    for s in table["series"].unique():
        sub = table.loc[table["series"] == s]
        reg = sub["regime"].iloc[0]
        if reg == "ties":
            out[s] = TIE_SHADES[ties.index(_tie_spec(s)) % len(TIE_SHADES)]
        elif reg == "finite_d":
            out[s] = FD_SHADES[fds.index(sub["d"].iloc[0]) % len(FD_SHADES)]
        else:
            out[s] = COLOURS[reg]
    return out


def _label(regime: str, sub: pd.DataFrame) -> str:
    d, rho = sub["d"].iloc[0], sub["rho"].iloc[0]
    if regime == "ties":
        kappa = float(sub["kappa"].iloc[0])
        noise = float(sub["copy_noise"].iloc[0])
        txt = rf"noisy copies, $\epsilon = {noise:g}$" if noise > 0 else "exact ties"
        return rf"near-ties, $k = n^{{{kappa:g}}}$, {txt}"
    if regime == "finite_d":
        return rf"finite $d = {int(d)}$, $\rho = {float(rho):g}$"
    if regime == "gap":
        return rf"gap: Gaussian tokens $d = {int(d)}$, $\rho = {float(rho):g}$"
    return rf"no gap (REM), $s = {float(sub['s'].iloc[0]):g}$"


def _split(table: pd.DataFrame):
    """The main series (panels a-c), the finite-d series (panel d) and the second set of
    near-ties at another d (panel e, with its query alone)."""
    gap = table[table["series"] == "gap"]
    gap_d = float(gap["d"].iloc[0]) if not gap.empty else np.nan
    other = table["regime"].isin(["gap", "ties"]) & ~np.isclose(table["d"].astype(float), gap_d)
    small = (table["regime"] == "finite_d") & (table["d"].astype(float) < MAIN_MIN_D)
    return table[~other & ~small], table[table["regime"] == "finite_d"], table[other]


def _main_panels(ax, ag, main, colours, handles, labels):
    sims = main[main["kind"] == "simulation"]
    lines = main[(main["kind"] != "simulation") & (main["role"] == "line")]
    shown = {
        "gap": ("prediction", "leading"),
        "ties": ("prediction", "leading"),
        "rem": ("prediction", "leading", "penultimate", "freezing"),
        "finite_d": ("prediction", "first_order", "power_law"),
    }
    for reg in ("gap", "ties", "finite_d", "rem"):
        for series in sorted(main.loc[main["regime"] == reg, "series"].unique()):
            col = colours[series]
            sub = lines[lines["series"] == series]
            for kind in shown[reg]:
                g = sub[sub["kind"] == kind].sort_values("n")
                if g.empty:
                    continue
                n, b = g["n"].to_numpy(float), g["beta"].to_numpy(float)
                ok = np.isfinite(b)
                if kind == "power_law":  # an asymptote in ln n / d: drawn past the breakdown
                    ok &= np.log(n - 1.0) >= float(g["ln_n_breakdown"].iloc[0])
                ls, lw = STYLES[kind]
                alpha = 0.6 if kind == "freezing" else 1.0
                ax.plot(n[ok], b[ok], ls=ls, lw=lw, color=col, alpha=alpha)
                ag.plot(n[ok], b[ok] / np.log(n[ok]), ls=ls, lw=lw, color=col, alpha=alpha)
            if reg == "finite_d" and not sub.empty:
                nb = 1.0 + np.exp(float(sub["ln_n_breakdown"].iloc[0]))
                if sub["n"].min() <= nb <= sub["n"].max():
                    for a in (ax, ag):
                        a.axvline(nb, **BREAKDOWN_STYLE)
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
            handles.append(h)
            labels.append(_label(reg, s))
    ax.set_yscale("log")
    ylo, yhi = ax.get_ylim()
    ticks = [t for t in (2, 3, 4, 6, 10, 15, 20, 30, 40, 60, 100, 150) if ylo <= t <= yhi]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel(r"critical scale $\beta^*(n)$: mean top-group weight $= 1/2$")
    ag.set_ylabel(r"$\beta^*/\ln n$ (flat for a $\log n$ scale)")
    gmax = lines.loc[lines["regime"] != "finite_d", "gamma"].max() if not lines.empty else 2.3
    ag.set_ylim(0.0, 1.3 * min(float(gmax), 3.0) + 0.6)
    ax.set_title(r"(a) $\beta^*(n)$")
    ag.set_title(r"(b) $\beta^*/\ln n$ (finite $d$ leaves the panel: see (d))")


def _z_panel(az, table, other, colours):
    sims = table[table["kind"] == "simulation"]
    names = list(dict.fromkeys(sims["series"]))
    second = set(other["series"])
    for i, series in enumerate(names):
        s = sims[sims["series"] == series]
        jitter = 1.0 + 0.035 * (i - (len(names) - 1) / 2.0)
        az.plot(
            s["n"] * jitter,
            s["z_pred"],
            "s" if series in second else "o",
            ms=3.4,
            color=colours[series],
            mec="k",
            mew=0.4,
            zorder=5,
            ls="",
        )
    az.axhspan(-2, 2, color="0.9", zorder=0)
    az.axhline(0.0, color="k", lw=0.6)
    az.set_ylabel("(simulation $-$ prediction) / SE")
    zmax = max(3.5, float(np.nanmax(np.abs(sims["z_pred"]))) * 1.15) if not sims.empty else 3.5
    az.set_ylim(-zmax, zmax)
    az.set_title("(c) simulation vs exact finite-n prediction, every series")


def _power_panel(ap, fd, colours):
    sims = fd[fd["kind"] == "simulation"]
    lines = fd[(fd["role"] == "line") & (fd["kind"] != "simulation")]
    pts = fd[(fd["role"] == "point") & (fd["kind"] == "power_law")]
    drawn = False
    for series in sorted(
        fd["series"].unique(), key=lambda x: -fd.loc[fd["series"] == x, "d"].iloc[0]
    ):
        sub = lines[lines["series"] == series]
        pw = sub[sub["kind"] == "power_law"].set_index("n")["beta"]
        if pw.empty:
            continue
        d = int(sub["d"].iloc[0])
        col = colours[series]
        for kind in ("prediction", "leading"):
            g = sub[sub["kind"] == kind].set_index("n")["beta"]
            n = g.index.to_numpy(float)
            ls, lw = STYLES[kind]
            ap.plot(
                np.log(n) / d,
                g.to_numpy(float) / pw.reindex(g.index).to_numpy(float),
                ls=ls,
                lw=lw,
                color=col,
            )
        s = sims[sims["series"] == series].sort_values("n")
        p = pts[pts["series"] == series].set_index("n")["beta"].reindex(s["n"]).to_numpy(float)
        ap.errorbar(
            np.log(s["n"].to_numpy(float)) / d,
            s["beta"].to_numpy(float) / p,
            yerr=2 * s["beta_se"].to_numpy(float) / p,
            fmt="o",
            ms=3.6,
            color=col,
            mec="k",
            mew=0.4,
            capsize=2,
            elinewidth=0.9,
            zorder=5,
        )
        drawn = True
    ap.axhline(1.0, color="k", lw=0.8)
    ap.axvline(0.5, **BREAKDOWN_STYLE)
    ap.set_yscale("log")
    ap.set_ylim(0.1, 1.4)
    ticks = [0.1, 0.2, 0.3, 0.5, 0.7, 1.0]
    ap.yaxis.set_major_locator(FixedLocator(ticks))
    ap.yaxis.set_major_formatter(ScalarFormatter())
    ap.yaxis.set_minor_formatter(NullFormatter())
    ap.set_xlabel(r"$\ln n\,/\,d$")
    ap.set_ylabel(r"$\beta^*$ / Paper B's power law $\propto n^{2/(d-1)}$")
    ap.set_title(
        r"(d) finite $d$, $\rho = 0$: from $\gamma_c \ln n$ (dashed) to $n^{2/(d-1)}$ (= 1)"
    )
    ap.grid(True, which="major", lw=0.3, alpha=0.5)
    if not drawn:
        ap.text(0.5, 0.5, "no finite-d series at rho = 0", transform=ap.transAxes, ha="center")


def _ties_panel(at, other, colours):
    sims = other[(other["kind"] == "simulation") & (other["regime"] == "ties")]
    lines = other[(other["role"] == "line") & (other["kind"] != "simulation")]
    if sims.empty:
        at.text(0.5, 0.5, "no near-ties at a second d", transform=at.transAxes, ha="center")
        return
    for series in sorted(sims["series"].unique()):
        s = sims[sims["series"] == series].sort_values("n")
        d = float(s["d"].iloc[0])
        base = lines[
            (lines["regime"] == "gap") & np.isclose(lines["d"], d) & (lines["kind"] == "prediction")
        ].set_index("n")["beta"]
        col = colours[series]
        for kind in ("prediction", "first_order"):
            g = lines[(lines["series"] == series) & (lines["kind"] == kind)].set_index("n")["beta"]
            ratio = g.to_numpy(float) / base.reindex(g.index).to_numpy(float)
            ls, lw = STYLES[kind]
            at.plot(g.index.to_numpy(float), ratio, ls=ls, lw=lw, color=col)
        at.errorbar(
            s["n"],
            s["ratio_to_query"],
            yerr=2 * s["ratio_to_query_se"],
            fmt="o",
            ms=3.6,
            color=col,
            mec="k",
            mew=0.4,
            capsize=2,
            elinewidth=0.9,
            zorder=5,
        )
    d0, rho0 = int(sims["d"].iloc[0]), float(sims["rho"].iloc[0])
    at.set_xscale("log")
    at.set_ylabel(r"$\beta^*_k / \beta^*_1$ (the same rows: paired, $\pm 2$ SE)")
    at.set_title(rf"(e) near-ties at $d = {d0}$, $\rho = {rho0:g}$: exact (solid) vs first order")
    at.set_xlabel("context length n")
    at.grid(True, which="major", lw=0.3, alpha=0.5)


def _tex_n(n: float) -> str:
    """``10^{k}`` for a power of ten, else three significant digits."""
    k = np.log10(n)
    return f"10^{{{int(round(k))}}}" if abs(k - round(k)) < 1e-9 else f"{n:.3g}"


def _text_panel(axt, read_off, exponent):
    axt.axis("off")
    out = []
    ro = read_off[read_off["source"] == "theory"]
    rs = read_off[read_off["source"] == "simulation"].sort_values("k")
    if not ro.empty:
        r0 = ro.iloc[0]
        out += [
            rf"Practical reading: head $d = {int(r0['d'])}$, $n = {int(r0['n'])}$, "
            rf"$\rho = {r0['rho']:g}$,",
            rf"$\gamma^* = {r0['gamma_star_exact']:.3f}$; it drops by {r0['shift']:.0%} when "
            r"the top group",
            r"holds $k$ tokens (the query and $k - 1$ repeats):",
        ]
        for _, r in ro.iterrows():
            what = (
                "exact ties"
                if r["copy_cosine"] >= 1.0
                else f"copies at cosine {r['copy_cosine']:g}"
            )
            out.append(rf"   {what}: $k = {r['k_needed']:.2f}$")
        for _, r in rs[rs["k"] > 1].iterrows():
            out.append(
                rf"   simulated $k = {int(r['k'])}$: drop {r['shift_sim']:.5f} $\pm$ "
                rf"{r['shift_sim_se']:.1e},"
            )
            out.append(
                rf"      exact theory {r['shift_exact']:.5f}, first order "
                rf"{r['shift_theory']:.5f}"
            )
        out.append("")
    if exponent is not None and not exponent.empty:
        e0 = exponent.iloc[0]
        out.append(
            r"Local exponent $d\ln\beta^*/d\ln n$ over "
            rf"$n = {_tex_n(e0['n_lo'])}$ .. ${_tex_n(e0['n_hi'])}$,"
        )
        out.append(r"simulated / exact / Paper B's $2/(d-1)$:")
        for _, e in exponent.sort_values("d").iterrows():
            out.append(
                rf"   $d = {int(e['d'])}$ ($\ln n/d \leq {e['ln_n_over_d_hi']:.2f}$): "
                rf"{e['exponent_sim']:.3f} $\pm$ {e['exponent_sim_se']:.3f} / "
                rf"{e['exponent_pred']:.3f} / {e['exponent_power_law']:.3f}"
            )
    axt.text(
        0.0,
        1.0,
        "\n".join(out),
        transform=axt.transAxes,
        va="top",
        ha="left",
        fontsize=7.2,
        linespacing=1.35,
        bbox={"boxstyle": "round,pad=0.4", "fc": "white", "ec": "0.6", "lw": 0.6},
    )
    axt.set_title("(f) read off", loc="left")


def plot_regimes(*, table: pd.DataFrame, read_off: pd.DataFrame, caption: str, exponent=None):
    """``beta*(n)`` of every regime: simulation against prediction (ours).

    Panels: (a) ``beta*`` against ``n`` on log axes, each series' exact finite-n prediction
    (solid), its leading order (dashed) and, for the REM, the penultimate Poisson-Dirichlet value
    (dotted) and the freezing point ``sqrt(2 ln n)/s`` (dash-dot), for finite ``d`` the
    first-order theory drawn to its breakdown (dash-dot-dot; grey dashed vertical: the
    breakdown) and Paper B's power law (loosely dotted, beyond the breakdown); (b)
    ``beta* / ln n``, flat for a ``log n`` scale; (c) ``(simulation - prediction) / SE`` of every
    simulated point with the +-2 band; (d) the finite-d series over Paper B's power law against
    ``ln n / d`` with Paper A's ``log n`` law (dashed); (e) the near-ties at a second ``d``:
    ``beta*_k / beta*_1`` paired on the same rows, exact theory (solid) against the first-order
    group formula; (f) the practical reading and the local exponents. Simulated points carry
    2 SE error bars.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`attnscale.experiments.regimes_summary.critical_scale_table` ``table``.
    read_off : pandas.DataFrame
        Its ``read_off`` table.
    caption : str
        Caption text (labels [paper] / [derived] / [choice]).
    exponent : pandas.DataFrame, optional
        Its ``exponent`` table (:func:`attnscale.experiments.regimes_summary.local_exponent_table`).
    """
    apply_style()
    colours = _colours(table)
    main, fd, other = _split(table)
    fig, axes = plt.subplots(
        2, 3, figsize=(15.0, 10.6), gridspec_kw={"width_ratios": [1.2, 1.2, 1.0]}
    )
    (ax, ag, az), (ap, at, axt) = axes
    handles, labels = [], []
    _main_panels(ax, ag, main, colours, handles, labels)
    small = fd[(fd["kind"] == "simulation") & (fd["d"].astype(float) < MAIN_MIN_D)]
    for series in sorted(small["series"].unique()):
        s = small[small["series"] == series]
        handles.append(
            plt.Line2D([], [], color=colours[series], marker="o", ms=4.5, ls="", mec="k", mew=0.4)
        )
        labels.append(_label("finite_d", s) + " (panel d)")
    ties2 = other[(other["kind"] == "simulation") & (other["regime"] == "ties")]
    if not ties2.empty:
        handles.append(plt.Line2D([], [], color="0.5", marker="s", ms=4.5, ls="", mec="k", mew=0.4))
        labels.append(
            rf"the query alone and the near-ties at $d = {int(ties2['d'].iloc[0])}$ "
            "(panel e; squares in c)"
        )
    _z_panel(az, table, other, colours)
    _power_panel(ap, fd, colours)
    _ties_panel(at, other, colours)
    _text_panel(axt, read_off, exponent)
    for a in (ax, ag, az):
        a.set_xscale("log")
        a.grid(True, which="major", lw=0.3, alpha=0.5)
        a.set_xlabel("context length n")
    style_h, style_l = _style_legend()
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
        r"without, $n^{2/(d-1)}$ once $\ln n \gg d$, $(1-\kappa)\,\gamma_c$ with $n^\kappa$ ties "
        r"(ours)",
        y=0.995,
    )
    width = fig.get_figwidth()
    fig.subplots_adjust(
        left=0.7 / width, right=1 - 0.2 / width, top=0.855, bottom=0.13, wspace=0.26, hspace=0.3
    )
    add_caption(fig, caption)
    return fig


def _style_legend() -> tuple[list, list]:
    """The legend entries of the line styles (simulation, predictions, theories, breakdown)."""
    rem = COLOURS["rem"]
    style_h = [
        plt.Line2D([], [], color="0.5", marker="o", ms=4.5, ls="", mec="k", mew=0.4),
        plt.Line2D([], [], color="k", ls=STYLES["prediction"][0], lw=STYLES["prediction"][1]),
        plt.Line2D([], [], color="k", ls=STYLES["leading"][0], lw=STYLES["leading"][1]),
        plt.Line2D([], [], color=rem, ls=STYLES["penultimate"][0], lw=STYLES["penultimate"][1]),
        plt.Line2D(
            [], [], color=rem, ls=STYLES["freezing"][0], lw=STYLES["freezing"][1], alpha=0.6
        ),
        plt.Line2D([], [], color="k", ls=STYLES["first_order"][0], lw=STYLES["first_order"][1]),
        plt.Line2D([], [], color="k", ls=STYLES["power_law"][0], lw=STYLES["power_law"][1]),
        plt.Line2D([], [], **BREAKDOWN_STYLE),
    ]
    style_l = [
        r"simulation, $\pm 2$ SE",
        "exact prediction at finite n",
        r"leading order: $\ln\frac{n-k}{k}/(1-\rho)$ (Paper A's at $k = 1$), "
        r"$\sqrt{2\ln n}/(\alpha_c s)$",
        r"REM: Poisson-Dirichlet, penultimate $w_n/(\alpha_c s)$",
        r"REM: freezing point $\sqrt{2\ln n}/s$",
        r"first order in $1/d$ (finite $d$: ends at its breakdown; near-ties)",
        r"finite $d$: Paper B's power law $\propto n^{2/(d-1)}$",
        r"$\ln(n-1) = d/(2(1+\rho-\rho^2/2))$: the first-order ($\log n$) theory ends",
    ]
    return style_h, style_l
