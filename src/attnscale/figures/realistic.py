"""Figures of issue 10, items 3 - 5: learned ``Q^T K``, attention sink, depth (all ours).

Theory: ``docs/realistic-attention.md#learned-query-key-matrix``,
``docs/realistic-attention.md#attention-sink``, ``docs/realistic-attention.md#depth``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnscale.figures.style import add_caption, apply_style

__all__ = ["plot_learned_qk", "plot_sink", "plot_depth"]


def _colours(keys, cmap: str = "viridis", lo: float = 0.0, hi: float = 0.9) -> dict:
    """One colour per key from a matplotlib colour map (seaborn is imported only where its
    statistics are used: it costs ~1 CPU-s of imports per plot job)."""
    keys = list(keys)
    cols = plt.get_cmap(cmap)(np.linspace(lo, hi, max(1, len(keys))))
    return dict(zip(keys, cols, strict=True))


def _frame(data) -> pd.DataFrame:
    """One DataFrame from a DataFrame or a list of them (one per trial job)."""
    if isinstance(data, pd.DataFrame):
        return data
    return pd.concat(list(data), ignore_index=True)


def _label(kind: str, value: float) -> str:
    if kind == "identity":
        return "W = I"
    if kind == "perturbed":
        return rf"I + {value:g} G"
    return f"rank {int(value)}"


def plot_learned_qk(*, curves, critical, caption: str):
    """Mean self-weight and lambda against gamma for ``W = I + epsilon G`` and rank-r ``W``,
    with the effective-score simplex analogue (dashed) and the critical points: simulated
    (circle), ``1/(s_self - s_cross)`` (cross) and with the score spread (triangle)
    (``docs/realistic-attention.md#learned-query-key-matrix``).

    ``curves`` and ``critical`` are the tables of :func:`attnscale.experiments.realistic.learned_qk`
    (a DataFrame each, or a list with one per trial); returns the Figure."""
    import seaborn as sns  # mean and SE bands over draws

    curves, critical = _frame(curves), _frame(critical)
    apply_style()
    fig = plt.figure(figsize=(10.5, 6.4))
    gs = fig.add_gridspec(2, 3, width_ratios=[1, 1, 0.8])
    axes = np.array([[fig.add_subplot(gs[r, c]) for c in range(2)] for r in range(2)])
    for c in range(2):
        axes[0, c].sharex(axes[1, c])
        axes[0, c].tick_params(labelbottom=False)
    axc = fig.add_subplot(gs[:, 2])
    grid = curves[curves["gamma_kind"] == "grid"].copy()
    grid["W"] = [_label(k, v) for k, v in zip(grid["kind"], grid["value"], strict=True)]
    crit = critical.copy()
    crit["W"] = [_label(k, v) for k, v in zip(crit["kind"], crit["value"], strict=True)]
    families = [
        ("perturbed", r"(a) $W = I + \epsilon G$, $G$ GOE"),
        ("projected", r"(b) $W = (d/r)\, U U^\top$, rank $r$"),
    ]
    gmax = float(grid["gamma"].max())
    for col, (fam, title) in enumerate(families):
        sub = grid[grid["kind"].isin(["identity", fam])]
        order = list(dict.fromkeys(sub.sort_values(["kind", "value"])["W"]))
        pal = _colours(order)
        for row, (y, yth, ylab) in enumerate(
            [
                ("self_weight", "self_weight_eff", r"mean self-weight $A_{ii}$"),
                ("lambda", "lambda_eff", r"angle ratio $\lambda$"),
            ]
        ):
            ax = axes[row, col]
            sns.lineplot(
                data=sub,
                x="gamma",
                y=y,
                hue="W",
                hue_order=order,
                palette=pal,
                errorbar="se",
                marker="o",
                markersize=3,
                lw=1,
                ax=ax,
                legend=(row == 0),
            )
            mean_th = sub.groupby(["W", "gamma"], sort=False)[yth].mean().reset_index()
            for w in order:
                m = mean_th[mean_th["W"] == w]
                ax.plot(m["gamma"], m[yth], "--", color=pal[w], lw=0.8)
            _log_gamma_axis(ax, sub["gamma"])
            ax.set_ylabel(ylab if col == 0 else "")
            ax.set_ylim(-0.02, 1.02)
            if row == 0:
                ax.set_title(title)
                ax.axhline(0.5, color="0.6", lw=0.5)
                c = crit[crit["W"].isin(order)]
                for w in order:
                    cw = c[c["W"] == w]
                    for colname, mk in (
                        ("gamma_half_sim", "o"),
                        ("gamma_c_eff", "x"),
                        ("gamma_c_fluct", "^"),
                    ):
                        g = cw[colname].to_numpy()
                        g = g[np.isfinite(g) & (g <= gmax)]
                        ax.plot(g, np.full(g.size, 0.5), mk, color=pal[w], ms=6, mfc="none")
                ax.plot([], [], "k--", lw=0.8, label="effective-score simplex")
                ax.plot([], [], "ko", mfc="none", label=r"simulated $\gamma$ at $A_{ii} = 1/2$")
                ax.plot([], [], "kx", label=r"$1/(s_{self} - s_{cross})$")
                ax.plot([], [], "k^", mfc="none", label="with score spread")
                ax.legend(loc="upper left", fontsize=6)
            else:
                ax.set_xlabel(r"$\gamma$  ($\beta = \gamma \ln n$)")
    _critical_panel(axc, crit)
    n, d = int(curves["n"].iloc[0]), int(curves["d"].iloc[0])
    rho = float(curves["rho"].iloc[0])
    fig.suptitle(
        rf"Learned query-key matrix: scores $\beta\langle W y_i, y_j\rangle$, n = {n}, d = {d}, "
        rf"$\rho$ = {rho:g} (ours)",
        y=0.995,
    )
    fig.subplots_adjust(left=0.07, right=0.98, top=0.92, bottom=0.24, hspace=0.1, wspace=0.28)
    add_caption(fig, caption)
    return fig


def _log_gamma_axis(ax, gammas) -> None:
    ax.set_xscale("log")
    lo, hi = float(np.min(gammas)), float(np.max(gammas))
    ticks = [t for t in (0.25, 0.5, 1, 2, 4, 8, 16, 32, 64) if lo <= t <= hi]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())


def _critical_panel(ax, crit: pd.DataFrame) -> None:
    """Per query-key matrix and draw: simulated critical gamma over each prediction (1 = exact).
    No simulated crossing (up to gamma = 64) with no predicted root either counts as agreement
    (star at 1); no crossing against a finite prediction is drawn as an arrow at the right edge."""
    labels = list(dict.fromkeys(crit.sort_values(["kind", "value"])["W"]))
    ypos = {w: k for k, w in enumerate(labels)}
    sim = crit["gamma_half_sim"].to_numpy(dtype=float)
    ratios = []
    for colname in ("gamma_c_eff", "gamma_c_fluct"):
        r = sim / crit[colname].to_numpy(dtype=float)
        ratios.append(r[np.isfinite(r)])
    finite = np.concatenate(ratios + [np.array([1.0])])
    lo, hi = min(0.97, finite.min() - 0.01), max(1.05, finite.max() + 0.02)
    edge = hi + 0.03
    styles = (
        ("gamma_c_eff", "x", "C3", r"$\gamma_{sim} / \gamma_{c,eff}$ (mean scores)", -0.15),
        ("gamma_c_fluct", "^", "C2", r"$\gamma_{sim} / \gamma_{c,\sigma}$ (with spread)", 0.15),
    )
    for colname, mk, color, lab, dy in styles:
        pred = crit[colname].to_numpy(dtype=float)
        y = np.array([ypos[w] for w in crit["W"]]) + dy
        both_none = ~np.isfinite(sim) & ~np.isfinite(pred)
        none_vs_finite = ~np.isfinite(sim) & np.isfinite(pred)
        ok = np.isfinite(sim) & np.isfinite(pred)
        ax.plot(sim[ok] / pred[ok], y[ok], mk, color=color, ms=6, mfc="none", label=lab)
        ax.plot(np.ones(both_none.sum()), y[both_none], "*", color=color, ms=8)
        ax.plot(np.full(none_vs_finite.sum(), edge), y[none_vs_finite], ">", color=color, ms=6)
    ax.plot([], [], "k*", ms=8, label="no transition, none predicted")
    ax.plot([], [], "k>", ms=6, label="no transition, one predicted")
    ax.axvline(1.0, color="0.5", lw=0.7)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.set_ylim(-0.6, len(labels) + 0.9)
    ax.set_xlim(lo, edge + 0.02)
    ax.set_xlabel(r"simulated / predicted critical $\gamma$ (per draw)")
    ax.set_title("(c) how well the critical point is predicted")
    ax.legend(fontsize=6, loc="upper right")


def plot_sink(*, curves, critical, theory, caption: str):
    """(a) mass absorbed by the sink at ``gamma_c(rho_hat)``, (b) the critical gamma against
    the sink score ``kappa c_s`` (simulation, exact simplex-with-sink, with score spread),
    (c) self-weight and sink mass against gamma for the largest ``kappa``
    (``docs/realistic-attention.md#attention-sink``).

    ``critical``: the per-draw table(s) of :func:`attnscale.experiments.realistic.attention_sink`
    (one point per draw); ``curves`` and ``theory``: the figure data of
    :func:`attnscale.experiments.realistic_summaries.sink_figure_data` (means over draws, theory
    lines); returns the Figure."""
    critical = _frame(critical)
    apply_style()
    fig, axes = plt.subplots(1, 3, figsize=(11.5, 3.9))
    n = int(critical["n"].iloc[0])
    kappas = sorted(critical["kappa"].unique())
    pal = {k: f"C{j}" for j, k in enumerate(kappas)}
    rho_hat = float(theory["rho_hat_mean"].iloc[0])
    gc = float(theory["gamma_c"].iloc[0])
    _sink_mass_panel(axes[0], critical, theory, kappas, pal)
    _sink_critical_panel(axes[1], critical, theory, kappas, pal, gc)
    _sink_weights_panel(axes[2], curves, kappas[-1])
    d = int(critical["d"].iloc[0])
    fig.suptitle(
        rf"Attention sink at position 1: cosine $c_s$, key factor $\kappa$; n = {n}, d = {d}, "
        rf"$\hat\rho$ = {rho_hat:.3f} (ours)",
        y=0.995,
    )
    fig.subplots_adjust(left=0.06, right=0.9, top=0.86, bottom=0.36, wspace=0.3)
    add_caption(fig, caption)
    return fig


def _sink_mass_panel(ax, critical, theory, kappas, pal) -> None:
    """(a) mass absorbed by the sink at ``gamma_c(rho_hat)`` against ``c_s``."""
    for k in kappas:
        ck = critical[critical["kappa"] == k]
        ax.plot(
            ck["c_s"],
            ck["sink_mass_at_gc"],
            "o",
            color=pal[k],
            ms=4,
            label=rf"simulation, $\kappa$ = {k:g}",
        )
        th = theory[(theory["line"] == "sink_mass") & (theory["kappa"] == k)]
        ax.plot(th["x"].to_numpy(), th["value"].to_numpy(), "-", color=pal[k], lw=0.9)
    ax.plot([], [], "k-", lw=0.9, label="exact simplex with sink")
    ax.set_yscale("log")
    ax.set_ylim(1e-14, 3)
    ax.set_xlabel(r"sink cosine $c_s$")
    ax.set_ylabel(r"mean sink mass $A_{is}$ at $\gamma_c(\hat\rho)$")
    ax.set_title(r"(a) mass absorbed at $\gamma_c$")
    ax.legend(fontsize=6, loc="upper left")


def _sink_critical_panel(ax, critical, theory, kappas, pal, gc: float) -> None:
    """(b) the critical gamma against the sink score ``kappa c_s``."""
    sims = critical["gamma_half_sim"].to_numpy(dtype=float)
    top = 1.25 * max(gc, float(np.nanmax(np.where(np.isfinite(sims), sims, np.nan))))
    line = theory[theory["line"] == "critical"]
    ks_fine = line["x"].to_numpy()
    sd = float(theory["sd_cross_mean"].iloc[0])
    for k in kappas:
        ck = critical[critical["kappa"] == k].sort_values("c_s")
        x = (ck["kappa"] * ck["c_s"]).to_numpy()
        gs = ck["gamma_half_sim"].to_numpy(dtype=float)
        fin = np.isfinite(gs)
        ax.plot(x[fin], gs[fin], "o", color=pal[k], ms=4, label=rf"simulation, $\kappa$ = {k:g}")
        ax.plot(x[~fin], np.full((~fin).sum(), top), "v", color=pal[k], ms=5, mfc="none")
    # the critical equation depends on kappa c_s only: one theory curve for every kappa
    th = line["value"].to_numpy()
    thf = theory[theory["line"] == "critical_spread"]["value"].to_numpy()
    ax.plot(ks_fine, np.where(th < top, th, np.nan), "k-", lw=0.9, label="exact simplex with sink")
    ax.plot(
        ks_fine,
        np.where(thf < top, thf, np.nan),
        "k:",
        lw=1.1,
        label=rf"with score spread $\sigma$ = {sd:.3f}",
    )
    ax.axvline(1.0, color="0.6", lw=0.6)
    ax.axhline(gc, color="0.5", lw=0.6)
    ax.text(ks_fine[0], gc * 0.995, r"$1/(1-\hat\rho)$", fontsize=6, va="top", color="0.4")
    ax.plot([], [], "kv", mfc="none", label=r"never $A_{ii} = 1/2$ ($\gamma \leq 64$)")
    ax.set_ylim(0.97 * gc, top * 1.04)
    ax.set_xlabel(r"sink score $\kappa c_s$ (self-score 1)")
    ax.set_ylabel(r"critical $\gamma$ (mean $A_{ii} = 1/2$)")
    ax.set_title("(b) critical line")
    ax.legend(fontsize=6, loc="upper left")


def _sink_weights_panel(ax, curves, kbig: float) -> None:
    """(c) self-weight and sink mass against gamma for the largest ``kappa``."""
    sub = curves[curves["kappa"] == kbig]
    cs_show = [c for c in sorted(sub["c_s"].unique()) if c >= 0]
    cp = _colours(cs_show)
    for c in cs_show:
        s = sub[sub["c_s"] == c].sort_values("gamma")
        ax.plot(
            s["gamma"],
            s["self_weight_mean"],
            "o-",
            color=cp[c],
            ms=2.5,
            lw=0.9,
            label=rf"$\kappa c_s$ = {kbig * c:g}",
        )
        ax.plot(s["gamma"], s["sink_mass_mean"], "s:", color=cp[c], ms=2.5, lw=0.9)
    ax.plot([], [], "ko-", ms=2.5, label=r"$A_{ii}$ (mean)")
    ax.plot([], [], "ks:", ms=2.5, label=r"$A_{is}$ (sink)")
    _log_gamma_axis(ax, sub["gamma"])
    ax.set_xlabel(r"$\gamma$  ($\beta = \gamma \ln n$)")
    ax.set_ylabel("attention weight")
    ax.set_title(rf"(c) weights against $\gamma$, $\kappa$ = {kbig:g}")
    ax.legend(fontsize=5.5, loc="center left", ncol=1, bbox_to_anchor=(1.0, 0.5))


def plot_depth(*, data, caption: str):
    """``1 - rho_l`` and the layer's lambda against the layer index for ``gamma = f
    gamma_c(rho_hat_0)``, ``alpha = 0`` and 1, simulation (markers, mean over draws) against the
    iterated finite-n simplex map (lines) (``docs/realistic-attention.md#depth``). ``data``: the
    figure data, :func:`attnscale.experiments.realistic_summaries.depth_summary`."""
    apply_style()
    alphas = sorted(data["alpha"].unique())
    fig, axes = plt.subplots(
        2, len(alphas), figsize=(4.3 * len(alphas), 6.2), squeeze=False, sharex=True
    )
    factors = sorted(data["gamma_factor"].unique())
    pal = _colours(factors, "plasma", 0.1, 0.75)
    floor = 1e-30
    for j, a in enumerate(alphas):
        sub = data[data["alpha"] == a]
        for f in factors:
            s = sub[sub["gamma_factor"] == f].sort_values("layer").reset_index(drop=True)
            lab = rf"$\gamma$ = {f:g} $\gamma_c(\hat\rho_0)$"
            ax = axes[0, j]
            ax.plot(s["layer"], s["delta_mean"], "o", color=pal[f], ms=3, label=lab)
            ax.plot(
                s["layer"], np.maximum(s["delta_simplex_mean"], floor), "-", color=pal[f], lw=0.9
            )
            ax = axes[1, j]
            ok = s["layer"] >= 1
            ax.plot(s["layer"][ok], s["lambda_mean"][ok], "o", color=pal[f], ms=3)
            ax.plot(s["layer"][ok], s["lambda_simplex_mean"][ok], "-", color=pal[f], lw=0.9)
        ax = axes[0, j]
        ax.set_yscale("log")
        ax.set_ylim(floor / 3, 1.5)
        ax.axhspan(floor / 3, 1e-24, color="0.9", lw=0)
        ax.text(0.5, 3e-29, "collapsed (float64 rounding; simulation stops)", fontsize=6)
        ax.set_title(rf"$\alpha$ = {a:g}")
        ax.set_ylabel(r"$1 - \rho_l$ (mean over pairs)")
        ax.legend(fontsize=6, loc="center right")
        ax = axes[1, j]
        ax.plot([], [], "k-", lw=0.9, label="iterated finite-n simplex map")
        ax.plot([], [], "ko", ms=3, label="simulation")
        ax.legend(fontsize=6, loc="center right" if a == 0 else "lower right")
        ax.set_yscale("log")
        ax.set_ylim(1e-6 if a == 0 else 0.1, 1.5)
        ax.set_xlabel("layer $l$")
        ax.set_ylabel(r"angle ratio $\lambda_l$ of layer $l$")
    n, d = int(data["n"].iloc[0]), int(data["d"].iloc[0])
    rho0 = float(data["rho_hat0_mean"].iloc[0])
    fig.suptitle(
        rf"Depth: the layer iterated with the same $\beta$, pre-LN at every layer; n = {n}, "
        rf"d = {d}, $\hat\rho_0$ = {rho0:.3f} (ours)",
        y=0.995,
    )
    fig.subplots_adjust(left=0.1, right=0.98, top=0.92, bottom=0.25, hspace=0.1, wspace=0.25)
    add_caption(fig, caption)
    return fig
