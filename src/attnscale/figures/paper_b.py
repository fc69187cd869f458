"""Paper B figures (spec ``paper-b.md`` §5): vector fields, the A_(1) phase diagram, the subcritical
weight profile, and this project's critical-law and heat-drift checks.

Every function reads the tidy table(s) written by :mod:`attnscale.experiments.paper_b` and writes a
byte-stable PNG and PDF through :func:`attnscale.plotting.save_figure`. Theory curves that are
cheap closed forms are evaluated here; everything simulated or integrated comes from the tables.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import sphere_theory as st
from ..plotting import add_caption, apply_style, save_figure


def _edges(v, log: bool) -> np.ndarray:
    """Cell edges around grid centres (geometric midpoints on a log axis)."""
    v = np.asarray(v, dtype=float)
    if v.size == 1:
        return np.array([v[0] * 0.9, v[0] * 1.1]) if log else np.array([v[0] - 0.5, v[0] + 0.5])
    w = np.log(v) if log else v
    mid = 0.5 * (w[1:] + w[:-1])
    e = np.concatenate([[2 * w[0] - mid[0]], mid, [2 * w[-1] - mid[-1]]])
    return np.exp(e) if log else e


def _caption(fig, caption: str, y: float = 0.005, size: float = 6.5) -> None:
    add_caption(fig, caption, y=y, size=size)


def _sci(x: float) -> str:
    """``1e5`` -> ``10^5`` as mathtext when x is a power of ten, else ``%g``."""
    e = np.log10(x)
    if abs(e - round(e)) < 1e-9:
        return rf"10^{{{int(round(e))}}}"
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def _nice(v: float) -> float:
    """A round number (1, 2 or 5 times a power of ten) close to ``v``."""
    e = np.floor(np.log10(v))
    m = v / 10**e
    return float((1 if m < 1.5 else 2 if m < 3.5 else 5) * 10**e)


# =========================================================================== 1. vector fields
_EXP_LABEL = {1.25: "5/4", 1.0: "1", 0.75: "3/4", 0.5: "1/2", 0.25: "1/4"}


def _regime(beta: float, n: int, d: int = 3) -> str:
    crit = st.critical_beta(n, d)
    tr = st.drift_transition_beta(n, d)
    if np.isclose(beta, crit, rtol=1e-9):
        return "critical"
    if beta > crit:
        return "supercritical"
    if np.isclose(beta, tr, rtol=1e-9):
        return "drift/noise crossover"
    return "subcritical, noise-dominated" if beta > tr else "subcritical, drift-dominated"


def plot_vector_fields(panels_csv, sweep_csv, png, pdf, *, caption: str) -> None:
    """Vector-field figure (paper-b.md §5): five map panels and the rms-vs-beta panel (ours)."""
    apply_style()
    P = pd.read_csv(panels_csv)
    S = pd.read_csv(sweep_csv)
    n = int(P["n"].iloc[0])
    fig, axes = plt.subplots(3, 2, figsize=(10.0, 9.4))
    axes = axes.ravel()
    # background density on a lon/lat grid
    lon = np.linspace(-180, 180, 361)
    lat = np.linspace(-90, 90, 181)
    LO, LA = np.meshgrid(np.radians(lon), np.radians(lat))
    Xg = np.stack([np.cos(LA) * np.cos(LO), np.cos(LA) * np.sin(LO), np.sin(LA)], axis=-1)
    dens = st.density_x1x2(Xg.reshape(-1, 3), 3).reshape(LO.shape)
    tr = st.drift_transition_beta(n, 3)
    mesh = None
    for ax, (_panel, sub) in zip(axes[:5], P.groupby("panel", sort=True), strict=False):
        beta = float(sub["beta"].iloc[0])
        e = float(sub["beta_exponent"].iloc[0])
        mesh = ax.pcolormesh(lon, lat, dens, cmap="Greys", shading="auto", vmin=0.0,
                             vmax=dens.max() * 2.5, rasterized=True)  # fmt: skip
        L = np.hypot(sub["disp_east"], sub["disp_north"])
        scale = np.quantile(L, 0.9) / 9.0  # [choice] 90th-percentile arrow = 9 degrees
        qv = ax.quiver(sub["lon"], sub["lat"], sub["disp_east"], sub["disp_north"], color="k",
                       angles="xy", scale_units="xy", scale=scale, width=0.0032,
                       headwidth=3.5, headlength=4, zorder=3)  # fmt: skip
        key = _nice(np.quantile(L, 0.9))
        ax.add_patch(plt.Rectangle((0.8, 0.87), 0.2, 0.13, transform=ax.transAxes, fc="w",
                                   ec="0.5", lw=0.5, alpha=0.9, zorder=5))  # fmt: skip
        qk = ax.quiverkey(qv, 0.835, 0.935, key, f"{key:g}", labelpos="E", coordinates="axes",
                          fontproperties={"size": 7})  # fmt: skip
        qk.set_zorder(6)
        if beta <= tr * (1 + 1e-9):
            ax.quiver(sub["lon"], sub["lat"], sub["drift_east"], sub["drift_north"],
                      color="tab:red", angles="xy", scale_units="xy", scale=scale, width=0.0022,
                      headwidth=3.5, headlength=4, alpha=0.85, zorder=4)  # fmt: skip
        for mx in (45, -135):
            ax.plot(mx, 0, marker="+", color="tab:blue", ms=9, mew=1.6, zorder=5)
        m_n = float(np.median(sub["m_n"]))
        ax.set_title(
            rf"$\beta = n^{{{_EXP_LABEL.get(round(e, 4), f'{e:g}')}}} = {_sci(beta)}$: "
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
    # rms panel (ours)
    ax = axes[5]
    S = S.sort_values("beta")
    b = S["beta"].to_numpy()
    ax.loglog(b, S["rms_disp"], "o-", color="k", ms=3, lw=1, label=r"simulation: rms $|P_q Y_n|$")
    mf = S.dropna(subset=["rms_dev_from_mean_field"])
    ax.loglog(mf["beta"], mf["rms_dev_from_mean_field"], "s", color="0.45", ms=3.5, mfc="none",
              label=r"rms deviation from $n=\infty$ mean field")  # fmt: skip
    ax.loglog(b, S["rms_drift_theory"], "--", color="tab:red", lw=1,
              label=r"drift $|\nabla_S \log\rho| / \beta$")  # fmt: skip
    ax.loglog(b, S["rms_noise_theory"], "--", color="tab:blue", lw=1,
              label=r"noise $(4\pi n \rho)^{-1/2}$ (d = 3)")  # fmt: skip
    ax.loglog(b, np.hypot(S["rms_drift_theory"], S["rms_noise_theory"]), ":", color="tab:purple",
              lw=1.2, label="drift + noise (quadrature sum)")  # fmt: skip
    ax.loglog(b, S["rms_nearest_theory"], "--", color="tab:green", lw=1,
              label=r"nearest key $(2 / C n)^{1/2}$")  # fmt: skip
    pb = S[S["is_panel"]]
    ax.loglog(pb["beta"], pb["rms_disp"], "o", ms=7, mfc="none", mec="tab:orange", mew=1.3,
              label="panels")  # fmt: skip
    for x, lab in ((tr, r"$n^{2/(d+1)}$"), (st.critical_beta(n, 3), r"$n^{\alpha} = n$")):
        ax.axvline(x, color="0.6", lw=0.8, ls=":")
        ax.text(x, 0.03, lab, transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                fontsize=7, bbox={"fc": "w", "ec": "none", "pad": 1})  # fmt: skip
    ax.set_ylim(3e-3, 1.0)
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel("rms over the query grid")
    ax.set_title(r"Arrow length against $\beta$ (ours)", loc="left")
    ax.legend(loc="upper right", fontsize=6.3, framealpha=0.9)
    fig.subplots_adjust(left=0.07, right=0.9, top=0.93, bottom=0.14, hspace=0.36, wspace=0.22)
    cax = fig.add_axes((0.915, 0.47, 0.012, 0.44))
    fig.colorbar(mesh, cax=cax, label=r"key density $\rho \propto e^{x_1 x_2}$")
    fig.suptitle(
        rf"Paper B, vector fields: tangential displacement $P_q(\mathrm{{ATT}}_n(q) - q)$, "
        rf"d = 3, n = {n:,} keys, black = simulation, red = drift",
        y=0.985,
    )
    _caption(fig, caption)
    save_figure(fig, png, pdf)


# =========================================================================== 2. phase diagram
def plot_phase_diagram(phase_csv, limit_csv, png, pdf, *, caption: str) -> None:
    """A_(1) phase diagram (paper-b.md §5): heat map, critical lines, subcritical collapse."""
    apply_style()
    D = pd.read_csv(phase_csv)
    Lm = pd.read_csv(limit_csv).sort_values("gamma")
    d = int(D["d"].iloc[0])
    alpha = st.alpha_exponent(d)
    grid = D[D["kind"] == "grid"]
    lines = D[D["kind"] == "line"]
    ns = np.sort(grid["n"].unique())
    betas = np.sort(grid["beta"].unique())
    Z = grid.pivot_table(index="beta", columns="n", values="top_weight_mean").reindex(
        index=betas, columns=ns
    )
    fig, axes = plt.subplots(1, 3, figsize=(12.4, 4.3), gridspec_kw={"width_ratios": [1.25, 1, 1]})
    ax = axes[0]
    mesh = ax.pcolormesh(_edges(ns, True), _edges(betas, True), Z.to_numpy(), cmap="viridis",
                         vmin=0, vmax=1, shading="flat", rasterized=True)  # fmt: skip
    nn = np.geomspace(ns.min(), ns.max(), 200)
    line_gammas = np.sort(lines["gamma"].unique())
    levels = []
    for g in line_gammas:
        lv = float(Lm.loc[np.isclose(Lm["gamma"], g), "top_weight_mean"].iloc[0])
        levels.append(lv)
        style = "-" if np.isclose(g, 1.0) else "--"
        ax.plot(nn, g * nn**alpha, style, color="w", lw=1.3 if style == "-" else 1.0)
        ax.text(ns.min() * 1.15, g * (ns.min() * 1.15) ** alpha * 1.35, rf"$\gamma$={g:g}",
                color="w", fontsize=6.5, ha="left", va="bottom")  # fmt: skip
    ax.contour(ns, betas, Z.to_numpy(), levels=sorted(levels), colors="tab:orange",
               linewidths=0.9)  # fmt: skip
    ax.text(0.97, 0.04, "Poisson limit $E\\,W_{(1)}$:\n"
            + "\n".join(rf"$\gamma$ = {g:g}: {lv:.3f}" for g, lv in zip(line_gammas, levels, strict=True)),
            transform=ax.transAxes, ha="right", va="bottom", color="w", fontsize=6.5)  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (keys)")
    ax.set_ylabel(r"$\beta$")
    ax.set_title(
        rf"mean $A_{{(1)}}$, d = {d}; white: $\beta = \gamma n^{{1/2}}$, orange: simulated contours",
        loc="left",
        fontsize=7.5,
    )
    fig.colorbar(mesh, ax=ax, label=r"$E\,A_{(1)}$", pad=0.02)
    # along the lines beta = gamma n^alpha
    ax = axes[1]
    for i, g in enumerate(line_gammas):
        sub = lines[np.isclose(lines["gamma"], g)].sort_values("n")
        c = f"C{i}"
        ax.errorbar(sub["n"], sub["top_weight_mean"], yerr=2 * sub["top_weight_se"], fmt="o-",
                    ms=3, lw=1, color=c, capsize=1.5, label=rf"$\gamma$ = {g:g}")  # fmt: skip
        lv = levels[i]
        lse = float(Lm.loc[np.isclose(Lm["gamma"], g), "top_weight_se"].iloc[0])
        ax.axhspan(lv - 2 * lse, lv + 2 * lse, color=c, alpha=0.25, lw=0)
        ax.axhline(lv, color=c, ls="--", lw=0.9)
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("n (keys)")
    ax.set_ylabel(r"$E\,A_{(1)}$ at $\beta = \gamma n^{1/2}$ ($\pm$2 SE)")
    ax.set_title("critical lines: simulation vs Poisson limit (dashed)", loc="left")
    ax.legend(loc="upper left", ncol=3, fontsize=6.5)
    # subcritical collapse
    ax = axes[2]
    sel = ns[ns >= 100][:: max(1, len(ns[ns >= 100]) // 5)]
    cmap = plt.get_cmap("viridis")
    for j, nv in enumerate(sel):
        sub = grid[grid["n"] == nv].sort_values("beta")
        ax.plot(sub["gamma"], sub["top_weight_mean"] / sub["subcritical_asymptote"], "-",
                color=cmap(j / max(1, len(sel) - 1) * 0.9), lw=1, label=f"n = {nv:,}")  # fmt: skip
    ax.plot(Lm["gamma"], Lm["top_weight_mean"] / Lm["subcritical_asymptote"], "k--", lw=1.3,
            label="Poisson limit")  # fmt: skip
    ax.axhline(1.0, color="tab:red", lw=0.8)
    ax.set_xscale("log")
    ax.set_ylim(0, 2.0)
    ax.set_xlim(Lm["gamma"].min(), Lm["gamma"].max())
    ax.set_xlabel(r"$\gamma = \beta / n^{1/2}$")
    ax.set_ylabel(r"$E\,A_{(1)} \,/\, (\beta^2 / 1.5 n)$")
    ax.set_title(r"subcritical asymptote $\beta^2/(1.5n)$ (red = 1)", loc="left")
    ax.legend(loc="upper right", fontsize=6.3)
    fig.subplots_adjust(left=0.06, right=0.985, top=0.86, bottom=0.3, wspace=0.32)
    fig.suptitle(
        rf"Paper B, phase diagram of the top weight $A_{{(1)}}$ (uniform keys on $S^{{{d - 1}}}$)",
        y=0.985,
    )
    _caption(fig, caption)
    save_figure(fig, png, pdf)


# =========================================================================== 3. weight profile
def plot_profile(csv_paths, png, pdf, *, caption: str, x_max: float = 4.0) -> None:
    """Subcritical weight profile (paper-b.md §5): ratio and cumulative mass against ``x = k/m_n``."""
    apply_style()
    frames = [pd.read_csv(p) for p in csv_paths]
    fig, axes = plt.subplots(2, len(frames), figsize=(4.6 * len(frames), 6.4), squeeze=False)
    for j, df in enumerate(frames):
        d, n = int(df["d"].iloc[0]), int(df["n"].iloc[0])
        beta, m = float(df["beta"].iloc[0]), float(df["m_n"].iloc[0])
        df = df[df["x"] <= x_max]
        x = df["x"].to_numpy()
        i1 = int(np.argmin(np.abs(x - 1.0)))
        ax = axes[0, j]
        ax.fill_between(x, df["ratio_mean"] - 2 * df["ratio_se"], df["ratio_mean"] + 2 * df["ratio_se"],
                        color="0.6", alpha=0.5, lw=0)  # fmt: skip
        ax.plot(x, df["ratio_mean"], "k-", lw=1.2, label=r"simulation (mean $\pm$2 SE)")
        ax.plot(x, df["ratio_limit"], "--", color="tab:red", lw=1.1,
                label=r"limit $e^{-x^{\alpha}}$")  # fmt: skip
        ax.plot(x, df["ratio_finite_beta"], ":", color="tab:blue", lw=1.3,
                label=r"finite $\beta$: $e^{-\beta F^{-1}(k/n)}$")  # fmt: skip
        ax.plot(x, df["ratio_finite_beta_shifted"], "-.", color="tab:green", lw=1.0,
                label=r"shifted (ours): $e^{-\beta (F^{-1}(k/n) - F^{-1}(1/n))}$")  # fmt: skip
        r = df.iloc[i1]
        ax.set_title(
            rf"d = {d}: n = {n}, $\beta = n^{{\alpha/4}}$ = {beta:.3g}, $m_n$ = {m:.1f}, "
            rf"$\alpha$ = {st.alpha_exponent(d):g}",
            loc="left",
        )
        ax.text(0.97, 0.42, f"at x = 1: sim {r['ratio_mean']:.3f}\nlimit {r['ratio_limit']:.3f}\n"
                f"finite-β {r['ratio_finite_beta']:.3f}\nshifted {r['ratio_finite_beta_shifted']:.3f}",
                transform=ax.transAxes, ha="right", va="center", fontsize=7)  # fmt: skip
        ax.set_ylabel(r"mean $A_{(k)} / A_{(1)}$")
        ax.set_ylim(0, 1.02)
        ax.legend(loc="upper right", fontsize=6.3)
        ax = axes[1, j]
        ax.fill_between(x, df["mass_mean"] - 2 * df["mass_se"], df["mass_mean"] + 2 * df["mass_se"],
                        color="0.6", alpha=0.5, lw=0)  # fmt: skip
        ax.plot(x, df["mass_mean"], "k-", lw=1.2, label="simulation")
        ax.plot(x, df["mass_limit"], "--", color="tab:red", lw=1.1,
                label=r"limit $P(1/\alpha, x^{\alpha})$")  # fmt: skip
        ax.plot(x, df["mass_finite_beta"], ":", color="tab:blue", lw=1.3, label=r"finite $\beta$")
        ax.text(0.97, 0.35, f"at x = 1: sim {r['mass_mean']:.3f}\nlimit {r['mass_limit']:.3f}\n"
                f"finite-β {r['mass_finite_beta']:.3f}",
                transform=ax.transAxes, ha="right", va="center", fontsize=7)  # fmt: skip
        ax.set_xlabel(r"$x = k / m_n$")
        ax.set_ylabel(r"mean $\sum_{j \leq k} A_{(j)}$")
        ax.set_ylim(0, 1.02)
        ax.legend(loc="lower right", fontsize=6.5)
        for a in axes[:, j]:
            a.set_xlim(0, x_max)
            a.axvline(1.0, color="0.7", lw=0.6, ls=":")
    fig.suptitle(r"Paper B, subcritical weight profile ($q = e_1$, uniform keys)", y=0.99)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.92, bottom=0.17, hspace=0.3, wspace=0.22)
    _caption(fig, caption)
    save_figure(fig, png, pdf)


# =========================================================================== 4. critical laws
def plot_critical_laws(ecdf_csvs, summary_csvs, png, pdf, *, caption: str) -> None:
    """Critical laws (ours): ECDF of A_(1) against the Poisson limit; nearest key against Weibull."""
    apply_style()
    E = pd.concat([pd.read_csv(p) for p in ecdf_csvs], ignore_index=True)
    Sm = pd.concat([pd.read_csv(p) for p in summary_csvs], ignore_index=True)
    ds = sorted(E["d"].unique())
    gammas = np.sort(E.loc[E["stat"] == "top_weight", "gamma"].dropna().unique())
    ncol = len(gammas) + 1
    fig, axes = plt.subplots(len(ds), ncol, figsize=(3.0 * ncol, 2.9 * len(ds) + 0.9),
                             squeeze=False)  # fmt: skip
    for i, d in enumerate(ds):
        e = E[E["d"] == d]
        s = Sm[Sm["d"] == d]
        ns = np.sort(e.loc[e["source"] == "finite_n", "n"].unique())
        cols = {
            nv: plt.get_cmap("plasma")(0.1 + 0.7 * k / max(1, len(ns) - 1))
            for k, nv in enumerate(ns)
        }
        for j, g in enumerate(gammas):
            ax = axes[i, j]
            tw = e[(e["stat"] == "top_weight") & np.isclose(e["gamma"], g)]
            for nv in ns:
                sub = tw[(tw["source"] == "finite_n") & (tw["n"] == nv)]
                ks = s[(s["stat"] == "top_weight") & (s["n"] == nv) & np.isclose(s["gamma"], g)]
                ax.step(sub["x"], sub["cdf"], where="post", color=cols[nv], lw=1.1,
                        label=f"n = {nv:,} (KS {float(ks['ks_vs_limit'].iloc[0]):.3f})")  # fmt: skip
            lim = tw[tw["source"] == "poisson_limit"]
            ax.plot(lim["x"], lim["cdf"], "k--", lw=1.2, label="Poisson limit")
            ax.set_xlim(0, float(tw["x"].max()))
            ax.set_ylim(0, 1)
            beta_lab = rf"$\beta = {g:g}\, n^{{{'1' if d == 3 else '1/2'}}}$"
            ax.set_title(f"d = {d}, {beta_lab}", loc="left")
            ax.set_xlabel(r"$A_{(1)}$")
            if j == 0:
                ax.set_ylabel("ECDF")
            ax.legend(loc="best", fontsize=6)
        ax = axes[i, -1]
        nk = e[e["stat"] == "nearest_scaled"]
        for nv in ns:
            sub = nk[(nk["source"] == "finite_n") & (nk["n"] == nv)]
            ex = nk[(nk["source"] == "exact_finite_n") & (nk["n"] == nv)]
            ks = s[(s["stat"] == "nearest_scaled") & (s["n"] == nv)]
            ax.step(sub["x"], 1 - sub["cdf"], where="post", color=cols[nv], lw=1.1,
                    label=f"n = {nv:,} (KS {float(ks['ks_vs_limit'].iloc[0]):.3f})")  # fmt: skip
            ax.plot(ex["x"], 1 - ex["cdf"], ":", color=cols[nv], lw=0.9)
        wl = nk[nk["source"] == "weibull_limit"]
        ax.plot(wl["x"], 1 - wl["cdf"], "k--", lw=1.2, label=r"Weibull $e^{-C s^{1/\alpha}}$")
        ax.set_yscale("log")
        ax.set_ylim(1e-3, 1.05)
        ax.set_xlim(0, float(wl["x"].max()))
        ax.set_xlabel(r"$s$")
        ax.set_ylabel(r"$P(n^{\alpha} T_{(1)} > s)$")
        ax.set_title(f"d = {d}, nearest key", loc="left")
        ax.plot([], [], ":", color="0.4", label="exact finite n")
        ax.legend(loc="lower left", fontsize=6)
    fig.suptitle(
        r"Paper B, critical laws (ours): $A_{(1)}$ at $\beta = \gamma n^{\alpha}$ and the nearest key, uniform keys",
        y=0.995,
    )
    fig.subplots_adjust(left=0.06, right=0.99, top=0.9, bottom=0.2, hspace=0.45, wspace=0.28)
    _caption(fig, caption)
    save_figure(fig, png, pdf)


# =========================================================================== 5. heat drift
def plot_heat_drift(summary_csv, curve_csv, png, pdf, *, caption: str, spec_points=None) -> None:
    """Heat-equation drift (ours): ``beta P_q ATT_n(q)`` against ``grad_S log rho(q)``."""
    apply_style()
    S = pd.read_csv(summary_csv).sort_values("beta")
    Cv = pd.read_csv(curve_csv).sort_values("beta")
    n = int(S["n"].iloc[0])
    fig, axes = plt.subplots(1, 3, figsize=(12.0, 3.9))
    ax = axes[0]
    ax.plot(Cv["beta"], Cv["ratio_quadrature"], "-", color="tab:blue", lw=1.2,
            label=r"$n = \infty$ at fixed $\beta$ (quadrature)")  # fmt: skip
    bb = Cv["beta"].to_numpy()
    c1 = float(Cv["correction_quadrature"].iloc[-1])  # large-beta slope of the quadrature
    ax.plot(bb, 1 + c1 / bb, ":", color="tab:purple", lw=1.1,
            label=rf"$1 {c1:+.2f}/\beta$ (quadrature slope at $\beta = {_sci(bb[-1])}$)")  # fmt: skip
    ax.errorbar(S["beta"], S["ratio_mean"], yerr=2 * S["ratio_se"], fmt="o", color="k", ms=3.5,
                capsize=2, label=rf"simulation, n = {n:,} ($\pm$2 SE)")  # fmt: skip
    if spec_points:
        sb, sr = zip(*spec_points, strict=True)
        ax.plot(sb, sr, "D", mfc="none", mec="tab:orange", ms=6,
                label="spec §4 Monte Carlo values")  # fmt: skip
    ax.axhline(1.0, color="tab:red", lw=0.8)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.15)
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(r"$\langle \beta P_q \mathrm{ATT}_n, g\rangle / |g|^2$")
    ax.set_title(r"ratio to $g = \nabla_S \log\rho(q)$ (red = 1)", loc="left")
    ax.legend(loc="lower right", fontsize=6.3)
    ax = axes[1]
    ax.plot(Cv["beta"], Cv["correction_quadrature"], "-", color="tab:blue", lw=1.2,
            label="quadrature")  # fmt: skip
    ax.errorbar(S["beta"], S["beta"] * (S["ratio_mean"] - 1), yerr=2 * S["beta"] * S["ratio_se"],
                fmt="o", color="k", ms=3.5, capsize=2, label="simulation")  # fmt: skip
    ax.axhline(c1, color="tab:purple", ls=":", lw=1)
    ax.set_xscale("log")
    lo = float(Cv["correction_quadrature"].min())
    ax.set_ylim(min(-6.0, lo - 0.5), 2.0)
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(r"$\beta\,(\mathrm{ratio} - 1)$")
    ax.set_title(r"the $O(1/\beta)$ correction", loc="left")
    ax.legend(loc="lower right", fontsize=6.5)
    ax = axes[2]
    ax.plot(Cv["beta"], Cv["normal_quadrature"], "-", color="tab:blue", lw=1.2, label="quadrature")
    ax.errorbar(S["beta"], S["normal_mean"], yerr=2 * S["normal_se"], fmt="o", color="k", ms=3.5,
                capsize=2, label="simulation")  # fmt: skip
    ax.errorbar(S["beta"], S["perp_mean"], yerr=2 * S["perp_se"], fmt="s", color="0.5", ms=3,
                mfc="none", capsize=2, label=r"in-plane $\perp g$ component / $|g|$")  # fmt: skip
    ax.axhline(-1.0, color="tab:red", lw=0.8)
    ax.axhline(0.0, color="0.7", lw=0.6)
    ax.set_xscale("log")
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(r"$\beta\,(\langle \mathrm{ATT}_n, q\rangle - 1)$")
    ax.set_title(r"normal part $\to -1/\alpha = -1$ (red)", loc="left")
    ax.legend(loc="center right", fontsize=6.5)
    fig.suptitle(
        r"Paper B, heat-equation drift (ours): $\beta P_q \mathrm{ATT}_n(q) \to \nabla_S \log\rho(q)$, "
        r"$\rho \propto e^{x_1 x_2}$ on $S^2$, $q = (1,1,1)/\sqrt{3}$",
        y=0.99,
    )
    fig.subplots_adjust(left=0.06, right=0.99, top=0.86, bottom=0.3, wspace=0.3)
    _caption(fig, caption)
    save_figure(fig, png, pdf)
