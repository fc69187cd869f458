"""Paper B heat-equation drift figure (ours): beta P_q ATT_n(q) against grad_S log rho(q)
(docs/paper-b.md).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from attnscale.figures.style import add_caption, apply_style

from .paper_b_common import sci_label

__all__ = ["plot_heat_drift"]


def plot_heat_drift(*, summary: pd.DataFrame, curve: pd.DataFrame, caption: str):
    """Entry of rule ``paper_b_heat_drift_figure``: ``beta P_q ATT_n(q)`` against
    ``grad_S log rho(q)`` (ours), simulation (+-2 SE over contexts) and ``n = inf`` quadrature."""
    apply_style()
    S = summary.sort_values("beta")
    Cv = curve.sort_values("beta")
    n = int(S["n"].iloc[0])
    fig, axes = plt.subplots(1, 3, figsize=(12.0, 3.9))
    c1 = _ratio_panel(axes[0], S, Cv, n)
    _correction_panel(axes[1], S, Cv, c1)
    _normal_panel(axes[2], S, Cv)
    fig.suptitle(
        r"Paper B, heat-equation drift (ours): $\beta P_q \mathrm{ATT}_n(q) \to \nabla_S \log\rho(q)$, "
        r"$\rho \propto e^{x_1 x_2}$ on $S^2$, $q = (1,1,1)/\sqrt{3}$",
        y=0.99,
    )
    fig.subplots_adjust(left=0.06, right=0.99, top=0.86, bottom=0.3, wspace=0.3)
    counts = ", ".join(f"{b:g}: {int(c)}" for b, c in zip(S["beta"], S["contexts"], strict=True))
    add_caption(fig, f"{caption} Contexts per beta (beta: contexts): {counts}.")
    return fig


def _ratio_panel(ax, S, Cv, n: int) -> float:
    """The ratio to ``grad_S log rho``; returns the quadrature's large-beta slope ``c1``."""
    ax.plot(
        Cv["beta"],
        Cv["ratio_quadrature"],
        "-",
        color="tab:blue",
        lw=1.2,
        label=r"$n = \infty$ at fixed $\beta$ (quadrature)",
    )
    bb = Cv["beta"].to_numpy()
    c1 = float(Cv["correction_quadrature"].iloc[-1])  # large-beta slope of the quadrature
    ax.plot(
        bb,
        1 + c1 / bb,
        ":",
        color="tab:purple",
        lw=1.1,
        label=rf"$1 {c1:+.2f}/\beta$ (quadrature slope at $\beta = {sci_label(bb[-1])}$)",
    )
    ax.errorbar(
        S["beta"],
        S["ratio_mean"],
        yerr=2 * S["ratio_se"],
        fmt="o",
        color="k",
        ms=3.5,
        capsize=2,
        label=rf"simulation, n = {n:,} ($\pm$2 SE)",
    )
    ax.axhline(1.0, color="tab:red", lw=0.8)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.15)
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(r"$\langle \beta P_q \mathrm{ATT}_n, g\rangle / |g|^2$")
    ax.set_title(r"ratio to $g = \nabla_S \log\rho(q)$ (red = 1)", loc="left")
    ax.legend(loc="lower right", fontsize=6.3)
    return c1


def _correction_panel(ax, S, Cv, c1: float) -> None:
    """The ``O(1/beta)`` correction, simulation against quadrature."""
    ax.plot(
        Cv["beta"], Cv["correction_quadrature"], "-", color="tab:blue", lw=1.2, label="quadrature"
    )
    ax.errorbar(
        S["beta"],
        S["beta"] * (S["ratio_mean"] - 1),
        yerr=2 * S["beta"] * S["ratio_se"],
        fmt="o",
        color="k",
        ms=3.5,
        capsize=2,
        label="simulation",
    )
    ax.axhline(c1, color="tab:purple", ls=":", lw=1)
    ax.set_xscale("log")
    lo = float(Cv["correction_quadrature"].min())
    ax.set_ylim(min(-6.0, lo - 0.5), 2.0)
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(r"$\beta\,(\mathrm{ratio} - 1)$")
    ax.set_title(r"the $O(1/\beta)$ correction", loc="left")
    ax.legend(loc="lower right", fontsize=6.5)


def _normal_panel(ax, S, Cv) -> None:
    """The normal part and the in-plane perpendicular component."""
    ax.plot(Cv["beta"], Cv["normal_quadrature"], "-", color="tab:blue", lw=1.2, label="quadrature")
    ax.errorbar(
        S["beta"],
        S["normal_mean"],
        yerr=2 * S["normal_se"],
        fmt="o",
        color="k",
        ms=3.5,
        capsize=2,
        label="simulation",
    )
    ax.errorbar(
        S["beta"],
        S["perp_mean"],
        yerr=2 * S["perp_se"],
        fmt="s",
        color="0.5",
        ms=3,
        mfc="none",
        capsize=2,
        label=r"in-plane $\perp g$ component / $|g|$",
    )
    ax.axhline(-1.0, color="tab:red", lw=0.8)
    ax.axhline(0.0, color="0.7", lw=0.6)
    ax.set_xscale("log")
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(r"$\beta\,(\langle \mathrm{ATT}_n, q\rangle - 1)$")
    ax.set_title(r"normal part $\to -1/\alpha = -1$ (red)", loc="left")
    ax.legend(loc="center right", fontsize=6.5)
