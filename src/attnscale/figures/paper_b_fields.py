"""Paper B vector-field figure (docs/paper-b.md): five map panels of one shared context and
the rms arrow length against beta over several contexts (ours).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from attnscale.figures.style import add_caption, apply_style
from attnscale.sphere import theory as st

from .paper_b_common import nice_number, sci_label

__all__ = ["plot_vector_fields"]

_EXP_LABEL = {1.25: "5/4", 1.0: "1", 0.75: "3/4", 0.5: "1/2", 0.25: "1/4"}


def _regime(beta: float, n: int, d: int = 3) -> str:
    crit = st.critical_scale(n, d)
    tr = st.drift_transition_beta(n, d)
    if np.isclose(beta, crit, rtol=1e-9):
        return "critical"
    if beta > crit:
        return "supercritical"
    if np.isclose(beta, tr, rtol=1e-9):
        return "drift/noise crossover"
    return "subcritical, noise-dominated" if beta > tr else "subcritical, drift-dominated"


def plot_vector_fields(*, panels: pd.DataFrame, sweep: pd.DataFrame, caption: str):
    """Vector-field figure (docs/paper-b.md): five map panels and the rms-vs-beta panel (ours)."""
    apply_style()
    P, S = panels, sweep
    n = int(P["n"].iloc[0])
    fig, axes = plt.subplots(3, 2, figsize=(10.0, 9.4))
    axes = axes.ravel()
    lon, lat, dens = _density_grid()
    tr = st.drift_transition_beta(n, 3)
    mesh = None
    for ax, (_panel, sub) in zip(axes[:5], P.groupby("panel", sort=True), strict=False):
        mesh = _map_panel(ax, sub, lon, lat, dens, n, tr)
    n_ctx = _rms_panel(axes[5], S, n, tr)
    fig.subplots_adjust(left=0.07, right=0.9, top=0.93, bottom=0.14, hspace=0.36, wspace=0.22)
    cax = fig.add_axes((0.915, 0.47, 0.012, 0.44))
    fig.colorbar(mesh, cax=cax, label=r"key density $\rho \propto e^{x_1 x_2}$")
    fig.suptitle(
        rf"Paper B, vector fields: tangential displacement $P_q(\mathrm{{ATT}}_n(q) - q)$, "
        rf"d = 3, n = {n:,} keys, black = simulation, red = drift",
        y=0.985,
    )
    add_caption(fig, f"{caption} Contexts: one per map panel; {n_ctx} per point of the last panel.")
    return fig


def _density_grid():
    """The background key density on a lon/lat grid (degrees): ``lon``, ``lat``, ``dens``."""
    lon = np.linspace(-180, 180, 361)
    lat = np.linspace(-90, 90, 181)
    LO, LA = np.meshgrid(np.radians(lon), np.radians(lat))
    Xg = np.stack([np.cos(LA) * np.cos(LO), np.cos(LA) * np.sin(LO), np.sin(LA)], axis=-1)
    dens = st.density_x1x2(Xg.reshape(-1, 3), 3).reshape(LO.shape)
    return lon, lat, dens


def _map_panel(ax, sub: pd.DataFrame, lon, lat, dens, n: int, tr: float):
    """One map panel: the density, the simulated arrows (and the drift where it dominates);
    returns the density mesh (for the colour bar)."""
    beta = float(sub["beta"].iloc[0])
    e = float(sub["beta_exponent"].iloc[0])
    mesh = ax.pcolormesh(
        lon,
        lat,
        dens,
        cmap="Greys",
        shading="auto",
        vmin=0.0,
        vmax=dens.max() * 2.5,
        rasterized=True,
    )
    L = np.hypot(sub["disp_east"], sub["disp_north"])
    scale = np.quantile(L, 0.9) / 9.0  # [choice] 90th-percentile arrow = 9 degrees
    qv = ax.quiver(
        sub["lon"],
        sub["lat"],
        sub["disp_east"],
        sub["disp_north"],
        color="k",
        angles="xy",
        scale_units="xy",
        scale=scale,
        width=0.0032,
        headwidth=3.5,
        headlength=4,
        zorder=3,
    )
    key = nice_number(np.quantile(L, 0.9))
    ax.add_patch(
        plt.Rectangle(
            (0.8, 0.87),
            0.2,
            0.13,
            transform=ax.transAxes,
            fc="w",
            ec="0.5",
            lw=0.5,
            alpha=0.9,
            zorder=5,
        )
    )
    qk = ax.quiverkey(
        qv,
        0.835,
        0.935,
        key,
        f"{key:g}",
        labelpos="E",
        coordinates="axes",
        fontproperties={"size": 7},
    )
    qk.set_zorder(6)
    if beta <= tr * (1 + 1e-9):
        ax.quiver(
            sub["lon"],
            sub["lat"],
            sub["drift_east"],
            sub["drift_north"],
            color="tab:red",
            angles="xy",
            scale_units="xy",
            scale=scale,
            width=0.0022,
            headwidth=3.5,
            headlength=4,
            alpha=0.85,
            zorder=4,
        )
    for mx in (45, -135):
        ax.plot(mx, 0, marker="+", color="tab:blue", ms=9, mew=1.6, zorder=5)
    m_n = float(np.median(sub["m_n"]))
    ax.set_title(
        rf"$\beta = n^{{{_EXP_LABEL.get(round(e, 4), f'{e:g}')}}} = {sci_label(beta)}$: "
        f"{_regime(beta, n)}, median $m_n$ = {m_n:.3g}",
        loc="left",
    )
    ax.set_xlim(-180, 180)
    ax.set_ylim(-90, 90)
    ax.set_xticks(np.arange(-180, 181, 90))
    ax.set_yticks(np.arange(-90, 91, 45))
    ax.set_aspect("equal")
    ax.set_xlabel("longitude (deg)")
    ax.set_ylabel("latitude (deg)")
    return mesh


def _rms_panel(ax, S: pd.DataFrame, n: int, tr: float) -> int:
    """The rms panel (ours): mean over the sweep's contexts, band = +-2 SE over contexts
    (seaborn), against the drift, noise and nearest-key theories; returns the context count."""
    S = S.sort_values(["beta", "context"])
    n_ctx = int(S["context"].nunique())
    band = ("se", 2) if n_ctx > 1 else None
    th = S[S["context"] == 0]
    b = th["beta"].to_numpy()
    sns.lineplot(
        data=S,
        x="beta",
        y="rms_disp",
        errorbar=band,
        color="k",
        marker="o",
        ms=3,
        lw=1,
        mec="none",
        ax=ax,
        err_kws={"alpha": 0.3, "lw": 0},
        label=rf"simulation: rms $|P_q Y_n|$ ({n_ctx} contexts, $\pm$2 SE)",
    )
    mf = S.dropna(subset=["rms_dev_from_mean_field"])
    sns.lineplot(
        data=mf,
        x="beta",
        y="rms_dev_from_mean_field",
        errorbar=band,
        color="0.45",
        marker="s",
        ms=3.5,
        mfc="none",
        mec="0.45",
        lw=0.8,
        ax=ax,
        err_kws={"alpha": 0.3, "lw": 0},
        label=r"rms deviation from $n=\infty$ mean field",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    drift, noise = th["rms_drift_theory"], th["rms_noise_theory"]
    for y, style, color, lw, label in (
        (drift, "--", "tab:red", 1, r"drift $|\nabla_S \log\rho| / \beta$"),
        (noise, "--", "tab:blue", 1, r"noise $(4\pi n \rho)^{-1/2}$ (d = 3)"),
        (np.hypot(drift, noise), ":", "tab:purple", 1.2, "drift + noise (quadrature sum)"),
        (th["rms_nearest_theory"], "--", "tab:green", 1, r"nearest key $(2 / C n)^{1/2}$"),
    ):
        ax.loglog(b, y, style, color=color, lw=lw, label=label)
    pb = th[th["is_panel"]]
    ax.loglog(
        pb["beta"],
        pb["rms_disp"],
        "o",
        ms=7,
        mfc="none",
        mec="tab:orange",
        mew=1.3,
        label="panels (context 0)",
    )
    for x, lab in ((tr, r"$n^{2/(d+1)}$"), (st.critical_scale(n, 3), r"$n^{\alpha} = n$")):
        ax.axvline(x, ymax=0.4, color="0.6", lw=0.8, ls=":")  # the legend's place stays free
        ax.text(
            x,
            0.03,
            lab,
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="bottom",
            fontsize=7,
            bbox={"fc": "w", "ec": "none", "pad": 1},
        )
    ax.set_ylim(3e-3, 1.0)
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel("rms over the query grid")
    ax.set_title(r"Arrow length against $\beta$ (ours)", loc="left")
    ax.legend(loc="upper right", fontsize=6.3, framealpha=0.9)
    return n_ctx
