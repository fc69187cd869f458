"""Figures of the transformer family (issue 36; docs/real-transformer.md): every head of a
pretrained model on the phase diagram, its phase curves, s*(n) against the log n rule and the
whole model scaled. Each function takes the summary tables of
:func:`attnscale.experiments.transformer_summary.summaries` and returns a figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnscale.figures.style import add_caption, apply_style

__all__ = ["plot_phase", "plot_curves", "plot_widths", "draw_heads", "draw_scaling", "draw_global"]

#: Where a head without a crossing is drawn (axis fraction above the top of the data) [choice].
NO_CROSSING_Y = 0.04


def _layer_colours(layers):
    cmap = plt.get_cmap("viridis")
    k = max(1, len(layers) - 1)
    return {ly: cmap(0.05 + 0.85 * i / k) for i, ly in enumerate(layers)}


def draw_heads(axes, heads, n_train: int):
    """Every head's trained scale over its critical multiplier, ``1/s*``, by layer, one axis
    per n (``1/s* > 1``: the trained head sits above its critical scale). Heads whose
    ``lambda(s)/lambda(inf)`` never crosses are drawn as open triangles at the top."""
    ns = sorted(heads["n"].unique())
    vals = 1.0 / heads["s_star"].astype(float)
    fin = vals[np.isfinite(vals)]
    lo = max(1e-2, fin.min() / 1.5) if fin.size else 0.05
    hi = min(1e2, fin.max() * 1.5) if fin.size else 20.0
    top = hi * 1.6
    for ax, n in zip(axes, ns, strict=False):
        sub = heads[heads["n"] == n]
        H = int(sub["head"].max()) + 1
        x = sub["layer"] + (sub["head"] - (H - 1) / 2) / (H + 2)
        s = sub["s_star"].astype(float)
        ok = np.isfinite(s)
        inv = 1.0 / s[ok]
        se = sub["s_star_se"].astype(float)[ok] / s[ok] ** 2
        ax.errorbar(
            x[ok], inv, yerr=se, fmt="o", ms=2.5, lw=0.6, color="C0", label=r"$1/s^*$ $\pm$ SE"
        )
        ax.plot(
            x[~ok],
            np.full((~ok).sum(), top),
            "^",
            mfc="none",
            color="C3",
            ms=4,
            label="never crosses",
        )
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_ylim(lo, top * 1.5)
        ax.set_xticks(sorted(sub["layer"].unique()))
        ax.set_xlabel("layer")
        flag = " (beyond fine-tuning)" if n > n_train else ""
        ax.set_title(f"n = {n}{flag}", color="C3" if flag else "k", fontsize=8)
        if ax is not axes[0]:
            ax.tick_params(labelleft=False)
    axes[0].set_ylabel(r"trained scale / critical, $1/s^*$")
    axes[0].legend(loc="lower left", fontsize=6)
    axes[0].text(
        0.02,
        0.97,
        "above the line: past critical\nbelow: not yet critical",
        transform=axes[0].transAxes,
        fontsize=6,
        va="top",
    )


def plot_phase(*, heads, n_ref: int, n_train: int):
    """Top: every head on the phase diagram (:func:`draw_heads`), one panel per n; bottom:
    ``s*(n)/s*(n_ref)`` against the log n rule (:func:`draw_scaling`)."""
    apply_style()
    ns = sorted(heads["n"].unique())
    fig = plt.figure(figsize=(10.0, 7.6))
    gs = fig.add_gridspec(2, len(ns), height_ratios=[1.0, 1.1], hspace=0.35, wspace=0.06)
    top = [fig.add_subplot(gs[0, k]) for k in range(len(ns))]
    for ax in top[1:]:
        ax.sharey(top[0])
    draw_heads(top, heads, n_train)
    draw_scaling(fig.add_subplot(gs[1, :]), heads, n_ref, n_train)
    W = int(heads["windows"].iloc[0])
    add_caption(
        fig,
        f"(top) Every head of all-MiniLM-L6-v2 on Pride and Prejudice, {W} windows "
        "per n ([CLS] + n - 2 word pieces + [SEP]) [choice]. s*: first upward crossing "
        "in ln s of lambda(s)/lambda(inf) through Paper A's critical value 1/(1 + 3 "
        "rho_hat) [choice], lambda of Paper A's layer (V = I) driven by the head's weights "
        "softmax(s q.k/sqrt(d_h)) on the normalised layer inputs; SE: moving-block bootstrap "
        f"over windows; heads jittered within each layer; n > {n_train}: beyond the "
        "model's fine-tuning length. (bottom) If a log n rule (scores multiplied by ln n / "
        f"ln {n_ref}) kept each head at the same place relative to its critical "
        "multiplier, s*(n)/s*(n_ref) would follow the dashed line [derived]; a flat line "
        "means s* does not move with n. Thin: heads crossing at n_ref and n.",
    )
    fig.subplots_adjust(bottom=0.17, top=0.96, left=0.07, right=0.99)
    return fig


#: The top of the y axis of :func:`plot_curves` (its caption says what lies above it).
CURVES_TOP = 1.6


def _clip_note(c) -> str:
    """The caption's sentence on the clipped y axis of :func:`plot_curves` (issue 45): how many
    heads' curves rise above :data:`CURVES_TOP` and the largest ratio, or that none does."""
    top = c.groupby(["layer", "head"])["lambda_ratio"].max()
    above = top[top > CURVES_TOP]
    if above.empty:
        return f" The y axis stops at {CURVES_TOP:g}; no head's ratio is above it."
    return (
        f" The y axis is cut at {CURVES_TOP:g}: {len(above)} of {len(top)} heads' curves rise "
        f"above it (up to {float(above.max()):.3g}), drawn to the cut."
    )


def plot_curves(*, curves, layers, global_, n: int):
    """``lambda(s)/lambda(inf)`` of every head (thin) and the layer's head mean with its
    bootstrap band, one panel per layer, at window length ``n``; the dashed line is Paper A's
    critical value ``1/(1 + 3 rho_hat)`` of the layer."""
    apply_style()
    c = curves[curves["n"] == n]
    lay = layers[layers["n"] == n]
    L = sorted(c["layer"].unique())
    cols = (len(L) + 1) // 2
    fig = plt.figure(figsize=(9.5, 8.4))
    gs = fig.add_gridspec(3, cols, hspace=0.42, wspace=0.1, height_ratios=[1, 1, 1.1])
    axes = np.array([[fig.add_subplot(gs[r, c]) for c in range(cols)] for r in range(2)])
    for ax in axes.ravel()[1:]:
        ax.sharex(axes[0, 0])
        ax.sharey(axes[0, 0])
    for ax, ly in zip(axes.ravel(), L, strict=False):
        sub = c[c["layer"] == ly]
        for _, g in sub.groupby("head"):
            ax.plot(g["s"], g["lambda_ratio"], "-", lw=0.5, color="0.65")
        m = lay[lay["layer"] == ly].sort_values("s")
        ax.fill_between(
            m["s"],
            m["lambda_ratio"] - m["lambda_ratio_se"],
            m["lambda_ratio"] + m["lambda_ratio_se"],
            color="C0",
            alpha=0.35,
            lw=0,
        )
        ax.plot(m["s"], m["lambda_ratio"], "-", color="C0", lw=1.4, label="head median ± SE")
        ax.axhline(
            float(m["critical_ratio"].iloc[0]),
            color="k",
            ls="--",
            lw=0.8,
            label=r"$1/(1+3\hat\rho)$",
        )
        ax.axvline(1.0, color="C3", lw=0.7, ls=":", label="trained scale s = 1")
        ax.set_xscale("log", base=2)
        ax.set_title(f"layer {ly}")
        ax.set_ylim(-0.05, CURVES_TOP)
    for ax in axes[-1]:
        ax.set_xlabel("score multiplier s (one head)")
    for ax in axes[:, 0]:
        ax.set_ylabel(r"$\lambda(s)/\lambda(\infty)$")
    for ax in axes[:, 1:].ravel():
        ax.tick_params(labelleft=False)
    axes[0, 0].legend(fontsize=6, loc="upper left")
    sub = gs[2, :].subgridspec(1, 2, wspace=0.25)
    bottom = [fig.add_subplot(sub[0, 0]), fig.add_subplot(sub[0, 1])]
    draw_global(bottom, global_)
    W = int(global_["windows"].iloc[0])
    add_caption(
        fig,
        f"(top, n = {n}) Grey: each head; blue: median over the layer's heads [choice] with the "
        "moving-block bootstrap SE over windows (band). lambda(inf): the head's own "
        "argmax map. s -> 0 gives uniform attention (lambda -> 0) [derived]; a ratio "
        "above 1 at finite s means the softmax spreads the pairs more than the argmax map "
        "does (positional heads). (bottom) The forward pass rerun with every layer's scores "
        f"multiplied by s ({W} windows) [choice]: each layer's lambda (dotted: Paper A's "
        "1/(1 + 3 rho_hat) at the layer's rho_hat) and the rho_hat of its inputs; red line: the "
        "trained model." + _clip_note(c),
    )
    fig.subplots_adjust(bottom=0.13, top=0.97, left=0.07, right=0.99)
    return fig


def draw_scaling(ax, heads, n_ref: int, n_train: int):
    """``s*(n)/s*(n_ref)`` of every head against n (thin, by layer colour), the layer medians
    and the log n rule ``ln n / ln n_ref``."""
    h = heads[np.isfinite(heads["s_star_over_ref"].astype(float))]
    L = sorted(heads["layer"].unique())
    col = _layer_colours(L)
    for (ly, _hd), g in h.groupby(["layer", "head"]):
        g = g.sort_values("n")
        ax.plot(g["n"], g["s_star_over_ref"], "-", color=col[ly], lw=0.4, alpha=0.5)
    for ly in L:
        g = h[h["layer"] == ly].groupby("n")["s_star_over_ref"].median()
        ax.plot(g.index, g.values, "o-", color=col[ly], lw=1.6, ms=4, label=f"layer {ly} median")
    ns = np.array(sorted(heads["n"].unique()), dtype=float)
    ax.plot(ns, np.log(ns) / np.log(n_ref), "k--", lw=1.4, label=rf"log n rule, ln n / ln {n_ref}")
    ax.axhline(1.0, color="0.5", lw=0.6)
    if ns.max() > n_train:
        ax.axvspan(n_train, ns.max() * 1.15, color="0.92", lw=0)
        ax.text(
            n_train * 1.05,
            0.03,
            "beyond fine-tuning",
            transform=ax.get_xaxis_transform(),
            fontsize=6,
            va="bottom",
        )
    ax.set_xlim(ns.min() / 1.15, ns.max() * 1.15)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("window length n (tokens)")
    ax.set_ylabel(rf"$s^*(n) / s^*({n_ref})$")
    ax.legend(fontsize=6, loc="upper left", ncol=4)


def draw_global(axes, global_):
    """The whole model with every layer's scores multiplied by the same s: each layer's mean
    lambda over heads (with SE; dotted: ``1/(1 + 3 rho_hat)``) and the rho_hat of its inputs."""
    g = global_
    L = sorted(g["layer"].unique())
    col = _layer_colours(L)
    for ly in L:
        s = g[g["layer"] == ly].sort_values("s")
        axes[0].errorbar(
            s["s"],
            s["lambda"],
            yerr=s["lambda_se"],
            fmt="o-",
            ms=3,
            lw=1,
            color=col[ly],
            label=f"layer {ly}",
        )
        axes[0].plot(s["s"], s["critical_lambda"], ":", color=col[ly], lw=0.8)
        axes[1].errorbar(
            s["s"], s["rho_hat"], yerr=s["rho_hat_se"], fmt="o-", ms=3, lw=1, color=col[ly]
        )
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.axvline(1.0, color="C3", lw=0.7, ls=":")
        ax.set_xlabel("multiplier s of every layer's scores")
    axes[0].set_ylabel(r"$\lambda$ (mean over heads)")
    axes[1].set_ylabel(r"$\hat\rho$ of the layer's inputs")
    axes[0].legend(fontsize=6, ncol=2)
    axes[0].set_title(f"whole model scaled, n = {int(g['n'].iloc[0])}", fontsize=8)


def plot_widths(*, widths, n_train: int):
    """Left: each layer's median transition width in ``ln s`` (levels 25 % and 75 %) (± SE) against n, with the
    finite-d mean field's width in ``ln beta`` at the model width (dashed) and the head dimension
    (dotted) and the simplex's (grey); middle and right: the measured width over the mean
    field's and over the simplex's (docs/real-transformer.md#the-width-against-the-theory)."""
    apply_style()
    w = pd.concat(list(widths), ignore_index=True) if isinstance(widths, list) else widths
    L = sorted(w["layer"].unique())
    col = _layer_colours(L)
    fig, axes = plt.subplots(1, 3, figsize=(10.0, 3.9))
    dm = w[w["dimension"] == "d_model"]
    dh = w[w["dimension"] == "d_head"]
    for ly in L:
        a = dm[dm["layer"] == ly].sort_values("n")
        b = dh[dh["layer"] == ly].sort_values("n")
        fin = np.isfinite(a["width"])
        axes[0].errorbar(
            a["n"][fin],
            a["width"][fin],
            yerr=a["width_se"][fin],
            fmt="o-",
            ms=3,
            lw=1.2,
            color=col[ly],
            label=f"layer {ly}",
        )
        axes[0].plot(a["n"], a["width_mean_field"], "x--", color=col[ly], lw=0.8, ms=4)
        axes[0].plot(b["n"], b["width_mean_field"], "+:", color=col[ly], lw=0.8, ms=5)
        axes[0].plot(a["n"], a["width_simplex"], "_-", color="0.6", lw=0.6, ms=6)
        axes[1].plot(a["n"], a["over_mean_field"], "o-", color=col[ly], ms=3, lw=1.2)
        axes[1].plot(b["n"], b["over_mean_field"], "s:", color=col[ly], ms=2.5, lw=0.8)
        axes[2].plot(a["n"], a["over_simplex"], "o-", color=col[ly], ms=3, lw=1.2)
    d_model, d_head = int(dm["d"].iloc[0]), int(dh["d"].iloc[0])
    axes[0].set_ylabel("width, ln s (head) or ln beta (theory)")
    axes[1].set_ylabel("measured / finite-d mean field")
    axes[2].set_ylabel("measured / finite-n simplex")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("window length n (tokens)")
        ns = np.array(sorted(w["n"].unique()), dtype=float)
        if ns.max() > n_train:
            ax.axvspan(n_train, ns.max() * 1.15, color="0.92", lw=0)
        ax.set_xlim(ns.min() / 1.15, ns.max() * 1.15)
    for ax in axes[1:]:
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_ylim(bottom=0)
    vals = np.r_[
        dm["width"] + dm["width_se"].fillna(0), dm["width_mean_field"], dh["width_mean_field"]
    ]
    top = float(np.max(vals[np.isfinite(vals)])) if np.isfinite(vals).any() else 1.0
    axes[0].set_ylim(0, 1.4 * top)  # room for the legend above the data
    axes[0].legend(fontsize=6, ncol=3, loc="upper left")
    add_caption(
        fig,
        "Width of a transition: ln s_0.75 - ln s_0.25 of lambda(s)/lambda(inf) for a head (the "
        "median over the layer's heads, a head whose curve does not reach 75 % on the grid "
        "counted as wider; SE: moving-block bootstrap over windows), ln beta_0.75 - ln "
        "beta_0.25 of lambda for the theory at the layer's rho_hat and n [choice: levels]; "
        f"missing: the mean field's floor is above 25 %. Left, lines: finite-d mean field at d = {d_model} (dashed) and d = {d_head} "
        f"(dotted), finite-n simplex (grey); middle: circles at d = {d_model}, squares at "
        f"d = {d_head}. Multiplying the scores by s multiplies beta by s, so "
        "the two widths are in the same variable [derived]. Shaded: beyond the fine-tuning "
        "length.",
    )
    fig.subplots_adjust(bottom=0.3, top=0.97, left=0.07, right=0.99, wspace=0.3)
    return fig
