"""Figures of the training family (issue 44; docs/training.md): trained models with and without
the log n rule, tested beyond their training length. Each function takes the summary tables of
:mod:`attnscale.experiments.training` and returns a figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from attnscale.figures.style import add_caption, apply_style

__all__ = ["COLOURS", "LABELS", "plot_retrieval", "plot_lm", "plot_probes", "band"]

#: One colour and label per variant, the same in every figure of the family.
COLOURS = {"plain": "C0", "rule": "C3", "learned": "C2", "test_rule": "C1"}
LABELS = {
    "plain": r"plain $1/\sqrt{d_h}$",
    "rule": r"rule $\ln n/\ln n_{train}$",
    "learned": r"learned $s_h \ln n$",
    "test_rule": "rule at test only",
}


def band(ax, x, y, se, variant, **kw):
    """A variant's mean curve with its one-SE band over seeds."""
    c = COLOURS[variant]
    ax.plot(x, y, "o-", ms=2.5, lw=1.0, color=c, label=LABELS[variant], **kw)
    se = np.nan_to_num(np.asarray(se, float))
    ax.fill_between(x, y - se, y + se, color=c, alpha=0.2, lw=0)


def plot_retrieval(*, summary, theory, curves):
    """Left: accuracy; middle: weight on the right key (retrieval head), both against
    n / n_train, with the theory's iid prediction dashed; right: training curves."""
    apply_style()
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.4), constrained_layout=True)
    for v in COLOURS:
        s = summary[summary["variant"] == v].sort_values("n")
        t = theory[theory["variant"] == v].sort_values("n")
        if s.empty:
            continue
        x = s["n_over_n_train"].to_numpy()
        band(axes[0], x, s["accuracy"].to_numpy(), s["accuracy_se"], v)
        band(axes[1], x, s["weight_right"].to_numpy(), s["weight_right_se"], v)
        axes[0].plot(x, t["accuracy_iid"], "--", lw=0.8, color=COLOURS[v])
        axes[1].plot(x, t["weight_iid"], "--", lw=0.8, color=COLOURS[v])
    for ax, lab in zip(axes[:2], ("accuracy", "weight on the right key"), strict=True):
        ax.set_xscale("log", base=2)
        ax.axvline(1.0, color="k", lw=0.6, ls=":")
        ax.set_xlabel(r"$n / n_{train}$")
        ax.set_ylabel(lab)
        ax.set_ylim(0, 1.02)
    axes[1].plot([], [], "k--", lw=0.8, label="theory (iid scores)")
    axes[1].legend(fontsize=6, loc="lower left")
    for (v, _seed), g in curves.groupby(["variant", "seed"], sort=True):
        axes[2].plot(g["step"], g["loss"], lw=0.7, color=COLOURS[v], alpha=0.8)
    axes[2].set_yscale("log")
    axes[2].set_xlabel("step")
    axes[2].set_ylabel("training loss")
    axes[2].set_title("training curves (every seed)", fontsize=8)
    n_train = int(summary["n_train"].iloc[0])
    k = int(summary["seeds"].min())
    add_caption(
        fig,
        f"Retrieval model trained at n up to n_train = {n_train}; mean over {k} seeds, band: "
        "one SE over seeds; dashed: the theory from the trained scores at n_train [derived].",
    )
    return fig


def plot_lm(*, summary, curves):
    """Left: held-out loss per position band against position / training context (band
    centres, geometric), per variant with one-SE bands; right: training curves."""
    apply_style()
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.4), constrained_layout=True)
    for v in COLOURS:
        s = summary[summary["variant"] == v].sort_values("lo")
        if s.empty:
            continue
        x = s["position_over_context"].to_numpy()
        band(axes[0], x, s["loss"].to_numpy(), s["loss_se"], v)
    axes[0].set_xscale("log", base=2)
    axes[0].axvline(1.0, color="k", lw=0.6, ls=":")
    axes[0].set_xlabel("query position / training context")
    axes[0].set_ylabel("held-out loss (nats per character)")
    axes[0].legend(fontsize=6)
    for (v, _seed), g in curves.groupby(["variant", "seed"], sort=True):
        axes[1].plot(g["step"], g["loss"], lw=0.7, color=COLOURS[v], alpha=0.8)
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("training loss")
    axes[1].set_title("training curves (every seed)", fontsize=8)
    T = int(summary["context"].iloc[0])
    k = int(summary["seeds"].min())
    add_caption(
        fig,
        f"Character-level decoder, no positional encoding, trained at context {T}; "
        f"mean over {k} seeds per position band, band: one SE over seeds.",
    )
    return fig


def plot_probes(*, summary):
    """The trained language model's heads on the phase diagram: per variant, the median over
    heads and seeds of s*(n) / s*(n_train) against n / n_train (quartiles shaded), under the
    normalised lambda (left) and Paper A's lambda (middle); right: the median s* itself
    (normalised) against n / n_train, 1 being the trained scale
    (docs/training.md#the-trained-heads-on-the-phase-diagram)."""
    apply_style()
    fig, axes = plt.subplots(1, 3, figsize=(10.0, 3.4), constrained_layout=True)
    T = int(summary["n_train"].iloc[0])
    for v in COLOURS:
        s = summary[summary["variant"] == v].sort_values("band")
        if s.empty:
            continue
        x = s["n_mid"].to_numpy() / T
        for ax, name in zip(axes[:2], ("normalised", "paper_a"), strict=True):
            y = s[f"ratio_{name}_median"].to_numpy()
            ax.plot(x, y, "o-", ms=2.5, lw=1.0, color=COLOURS[v], label=LABELS[v])
            lo, hi = s[f"ratio_{name}_q25"].to_numpy(), s[f"ratio_{name}_q75"].to_numpy()
            ax.fill_between(x, lo, hi, color=COLOURS[v], alpha=0.15, lw=0)
        axes[2].plot(x, s["s_star_normalised"], "o-", ms=2.5, lw=1.0, color=COLOURS[v])
    titles = ("normalised $\\lambda/\\lambda(\\infty)$", "Paper A's $\\lambda$", "")
    for ax, t in zip(axes, titles, strict=True):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.axvline(1.0, color="k", lw=0.6, ls=":")
        ax.axhline(1.0, color="k", lw=0.6, ls=":")
        ax.set_xlabel("keys seen n / n_train")
        if t:
            ax.set_title(t, fontsize=8)
            ax.set_ylabel("s*(n) / s*(n_train), median over heads")
    axes[2].set_ylabel("median s*(n) (normalised)")
    axes[2].set_title("1 = the trained scale", fontsize=8)
    axes[0].legend(fontsize=6)
    k = int(summary["seeds"].min())
    add_caption(
        fig,
        f"Heads of the character-level decoder (trained at n_train = {T}), {k} seeds per "
        "variant, every layer and head; per position band of the query. s*: first crossing "
        "of lambda(s) through 1/(1 + 3 rho_hat); shaded: quartiles over heads and seeds; "
        "heads that never cross left out.",
    )
    return fig
