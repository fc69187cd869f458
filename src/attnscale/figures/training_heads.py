"""Figure of the trained retrieval layer's heads on the phase diagram (issue 44;
docs/training.md#the-retrieval-heads-on-the-phase-diagram): s*(n)/s*(n_train) per variant under
both definitions of lambda, the effective-score critical multiplier gamma_c_eff ln n, and the
trained scale against the critical one at n_train for the retrieval and the language models.
Reads the tables of ``training_retrieval_probes_summary``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from attnscale.figures.style import add_caption, apply_style
from attnscale.figures.training import COLOURS, LABELS, band

__all__ = ["PANELS", "plot_heads"]

#: The three ratio panels: column of the summary and title.
PANELS = (
    ("ratio_normalised", r"$s^*(n)/s^*(n_{train})$, normalised $\lambda$"),
    ("ratio_paper_a", r"$s^*(n)/s^*(n_{train})$, Paper A's $\lambda$"),
    ("ratio_eff", r"$\gamma_{c,eff}\ln n$ over its value at $n_{train}$"),
)


def _ratios(axes, summary):
    """One panel per ratio: every variant's retrieval head, mean over seeds with its SE band;
    dotted: the ratio of a head whose critical scale grows like ln n under the plain factor."""
    T = int(summary["n_train"].iloc[0])
    for ax, (col, title) in zip(axes, PANELS, strict=True):
        for v in COLOURS:
            s = summary[summary["variant"] == v].sort_values("n")
            if s.empty:
                continue
            x, y = s["n_over_n_train"].to_numpy(), s[col].to_numpy()
            se = np.nan_to_num(s[f"{col}_se"].to_numpy(float))
            band(ax, x, y, 0.0 * se, v)
            # the SE band on the log axis, its lower edge kept above a quarter of the mean
            lo, hi = np.maximum(y - se, y / 4), y + se
            ax.fill_between(x, lo, hi, color=COLOURS[v], alpha=0.2, lw=0)
        x = np.sort(summary["n"].unique())
        ax.plot(
            x / T, np.log(x - 1) / np.log(T - 1), "k:", lw=0.8, label=r"$\ln(n-1)/\ln(n_{train}-1)$"
        )
        ax.axhline(1.0, color="k", lw=0.5)
        ax.axvline(1.0, color="k", lw=0.6, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel(r"$n / n_{train}$")
        ax.set_title(title, fontsize=8)
    axes[0].set_ylabel("ratio (retrieval head)")
    axes[0].legend(fontsize=5.5, loc="upper left")


def _at_train(ax, critical):
    """gamma_c_eff ln n_train per variant: the retrieval head (circles) and the language model's
    heads (median per seed; squares), means over seeds with one SE."""
    r = critical[critical["model"] == "retrieval"].set_index("variant")
    lm = critical[critical["model"] == "lm"].set_index("variant")
    for i, v in enumerate(COLOURS):
        for table, dx, marker in ((r, -0.12, "o"), (lm, 0.12, "s")):
            if v in table.index:
                ax.errorbar(
                    i + dx,
                    table.loc[v, "s_eff"],
                    yerr=np.nan_to_num(table.loc[v, "s_eff_se"]),
                    fmt=marker,
                    color=COLOURS[v],
                    ms=4,
                    capsize=2,
                )
    ax.plot([], [], "ko", ms=4, label="retrieval head")
    ax.plot([], [], "ks", ms=4, label="language model (median head)")
    ax.axhline(1.0, color="k", lw=0.6, ls="--")
    ax.set_xticks(range(len(COLOURS)), [LABELS[v] for v in COLOURS], rotation=30, fontsize=5.5)
    ax.set_yscale("log", base=2)
    ax.set_ylabel(r"$\gamma_{c,eff}\ln n_{train}$ (1: critical)")
    ax.set_title("trained scale against the critical one", fontsize=8)
    ax.legend(fontsize=5.5, loc="upper right")


def plot_heads(*, summary, critical):
    """Three ratio panels against n / n_train (:data:`PANELS`) and the trained scale against
    the critical one at n_train."""
    apply_style()
    fig, axes = plt.subplots(1, 4, figsize=(13.0, 3.4), constrained_layout=True)
    _ratios(axes[:3], summary)
    _at_train(axes[3], critical)
    T, k = int(summary["n_train"].iloc[0]), int(summary["seeds"].min())
    add_caption(
        fig,
        f"Retrieval model trained at n up to n_train = {T}, {k} seeds per variant: the "
        "retrieval head's s* (first crossing of lambda(s) through 1/(1 + 3 rho_hat)) and the "
        "learned-score theory's gamma_c_eff ln n, each over its value at n_train; mean over "
        "the seeds where defined, band: one SE (its lower edge at most a factor 4 below). Dotted: a critical scale growing like ln n "
        "under the plain factor. Right: gamma_c_eff ln n_train, 1 = trained at the critical "
        "scale, below 1 = above it.",
    )
    return fig
