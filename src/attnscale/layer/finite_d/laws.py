"""Laws of the Gaussian near-simplex tokens given the common direction, as quadrature tables.

Everything here is independent of ``beta`` and ``n`` and is cached per ``(d, rho, quadrature)``;
see docs/finite-d.md#conditional-structure and docs/finite-d.md#exact-self-weight.

Notation. ``x_j = sqrt(rho) z_0 + sqrt(1 - rho) z_j`` with ``z ~ N(0, I_d / d)``, ``R_0 = ||z_0||``,
``u = z_0 / R_0``, ``y_j = x_j / ||x_j||``, ``tau_j = <y_j, u>``. Given ``z_0`` the ``y_j`` are
i.i.d. with density ``f(<y, u>)`` relative to the uniform law on ``S^{d-1}``, where
``log f(t) = log J_{d-1}(kappa t) + const``, ``J_k(a) = int_0^inf r^k exp(-r^2/2 + a r) dr`` and
``kappa = sqrt(rho) R_0 / sqrt((1 - rho) / d)``. For a query with ``tau_i`` the score
``c = <y_i, y_j>`` has density ``p(c) ∝ (1 - c^2)^{(d-3)/2} G(c)`` with
``G(c) = E_w[f(c tau_i + sqrt(1 - c^2) sigma_i w)]``, ``w`` distributed like one coordinate of a
uniform point of ``S^{d-2}`` (density ``∝ (1 - w^2)^{(d-4)/2}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import betaincinv, gammainccinv, gammaincinv, ndtr, roots_jacobi

from attnscale.core.quadrature import gauss_legendre_01, gauss_legendre_panels

__all__ = [
    "QUADRATURE_PRESETS",
    "log_j",
    "normal_score_rule",
    "r0_nodes",
    "TauLaw",
    "tau_law",
    "v_nodes",
    "score_quantiles",
    "omega_rule",
    "uniform_score_quantiles",
    "Table",
    "table",
    "table_given_r0",
]

#: The quadrature presets (docs/glossary.md), the resolution of every quadrature of this package:
#: ``"standard"`` is what the public functions use; ``"fine"`` refines every resolution and is used
#: by the tests to state the quadrature error. One line per parameter, its two values side by side.
QUADRATURE_PRESETS: dict[str, dict] = {"standard": {}, "fine": {}}
for _name, _standard, _fine in (
    ("n_r0", 6, 16),
    ("n_tau", 12, 32),
    ("n_w", 20, 40),
    ("n_phi", 24, 64),
    ("phi_cut", 36.0, 50.0),
    ("y_floor", 1e-12, 1e-18),
    ("gl_panel", 6, 8),
    ("geo_ratio", 0.35, 0.15),
    ("bulk_step", 0.6, 0.3),
    ("w_panel", 0.25, 0.12),
    ("w_nodes", 4, 4),
    ("v_cap", 150.0, 250.0),
    ("t_step", 0.45, 0.25),
):
    QUADRATURE_PRESETS["standard"][_name] = _standard
    QUADRATURE_PRESETS["fine"][_name] = _fine


def log_j(k: int, a: np.ndarray) -> np.ndarray:
    """``log int_0^inf r^k exp(-r^2/2 + a r) dr`` for an array ``a`` (saddle-centred quadrature).

    In ``x = ln r`` the integrand is ``exp(phi(x))``, ``phi = (k+1) x - e^{2x}/2 + a e^x``, with a
    single maximum at ``e^x = (a + sqrt(a^2 + 4(k+1)))/2``. 64 Gauss-Legendre nodes cover the
    maximum minus 10 curvature widths on the right (super-Gaussian tail) and the larger of 10
    widths and ``40/(k+1)`` on the left (exponential tail ``e^{(k+1) x}``).
    """
    a = np.asarray(a, dtype=np.float64)
    kk = k + 1.0
    root = np.sqrt(a * a + 4.0 * kk)
    rs = (a + root) / 2.0
    xs = np.log(rs)
    sx = 1.0 / np.sqrt(rs * root)
    lo = xs - np.maximum(10.0 * sx, 40.0 / kk)
    hi = xs + 10.0 * sx
    g, gw = gauss_legendre_01(48)
    x = lo[..., None] + (hi - lo)[..., None] * g
    ex = np.exp(x)
    phi = kk * x + ex * (a[..., None] - ex / 2.0)
    return _lse(phi + np.log(gw * (hi - lo)[..., None]))


def _lse(z: np.ndarray) -> np.ndarray:
    """``log sum exp`` over the last axis (``-inf`` rows stay ``-inf``)."""
    m = np.max(z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(z - m), axis=-1)) + m[..., 0]


@lru_cache(maxsize=32)
def normal_score_rule(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gauss-Hermite rule for ``z ~ N(0, 1)``: nodes, weights, ``Phi(z)`` and ``Phi(-z)``.

    A variable ``X = F^{-1}(Phi(z))`` is a smooth function of its normal score ``z`` for the
    laws used here (chi, tau), so ``E g(X) = E g(F^{-1}(Phi(z)))`` converges fast in ``n``.
    """
    z, w = hermegauss(n)
    return z, w / w.sum(), ndtr(z), ndtr(-z)


def r0_nodes(d: int, n_r0: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes/weights for ``R_0 = ||z_0||``, ``d R_0^2 ~ chi^2_d``, on normal scores."""
    z, w, lo, up = normal_score_rule(n_r0)
    # chi^2_d quantiles as scipy.stats.chi2.ppf / .isf compute them (bit for bit), without
    # importing scipy.stats (0.3 s of the command line's start-up)
    q = np.where(z < 0, 2.0 * gammaincinv(d / 2.0, lo), 2.0 * gammainccinv(d / 2.0, up))
    return np.sqrt(q / d), w


@dataclass
class TauLaw:
    """The law of ``tau = <y, u>`` given ``R_0``: a fine grid of ``log f`` and the ``tau`` CDF."""

    t: np.ndarray  # fine grid in tau
    log_f: np.ndarray  # log density relative to uniform on the sphere (up to a constant)
    cdf: np.ndarray  # CDF of tau on the grid
    mean: float
    var: float
    mean_sig2: float  # E[1 - tau^2]
    kappa: float  # sqrt(rho) R_0 / sqrt((1 - rho) / d)

    def log_f_at(self, t: np.ndarray) -> np.ndarray:
        """``log f`` by linear interpolation; ``-inf`` outside the tabulated range."""
        return np.interp(t, self.t, self.log_f, left=-np.inf, right=-np.inf)

    def quantile(self, q: np.ndarray) -> np.ndarray:
        return np.interp(q, self.cdf, self.t)


def tau_law(d: int, rho: float, r0: float, n_fine: int = 2001) -> TauLaw:
    """Tabulate the law of ``tau`` given ``R_0 = r0`` (docs/finite-d.md#conditional-structure)."""
    kappa = np.sqrt(rho) * r0 / np.sqrt((1.0 - rho) / d)
    half = (d - 3) / 2.0

    def log_ftau(t):
        with np.errstate(divide="ignore"):
            base = half * np.log1p(-t * t) if half != 0 else np.zeros_like(t)
        return base + log_j(d - 1, kappa * t)

    coarse = np.cos(np.linspace(np.pi, 0.0, 801))[1:-1]
    lc = log_ftau(coarse)
    top = lc.max()
    keep = np.flatnonzero(lc > top - 100.0)
    i0 = max(keep[0] - 2, 0)
    i1 = min(keep[-1] + 2, coarse.size - 1)
    lo = -1.0 if i0 == 0 else coarse[i0]
    hi = 1.0 if i1 == coarse.size - 1 else coarse[i1]
    # cosine spacing clusters points at +-1 where (1 - t^2)^{(d-3)/2} is singular or flat
    th = np.linspace(np.arccos(hi), np.arccos(lo), n_fine)
    t = np.cos(th)[::-1]
    t = np.clip(t, -1.0, 1.0)
    tc = np.clip(t, -1 + 1e-15, 1 - 1e-15)
    log_f = log_j(d - 1, kappa * t)
    lf = log_f + (half * np.log1p(-tc * tc) if half != 0 else 0.0)
    dens = np.exp(lf - lf.max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(t))])
    tot = cdf[-1]
    cdf /= tot
    wts = np.zeros_like(t)
    wts[1:] += 0.5 * np.diff(t)
    wts[:-1] += 0.5 * np.diff(t)
    pw = wts * dens / tot
    mean = float(pw @ t)
    var = float(pw @ (t - mean) ** 2)
    return TauLaw(
        t=t,
        log_f=log_f,
        cdf=cdf,
        mean=mean,
        var=var,
        mean_sig2=float(pw @ (1 - t * t)),
        kappa=float(kappa),
    )


def v_nodes(quadrature: str) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``v`` and weights for ``int_0^V e^{-v} g(v) dv``: Gauss-Legendre panels in ``sqrt(v)``.

    ``v = -ln P(c > x)`` is the exponential quantile of the score; the weights include
    ``e^{-v}`` and are normalised to sum to 1 (the tail beyond ``V`` has mass ``e^{-V}``).
    """
    p = QUADRATURE_PRESETS[quadrature]
    wmax = np.sqrt(p["v_cap"])
    edges = np.arange(0.0, wmax + p["w_panel"], p["w_panel"])
    w, ww = (a.ravel() for a in gauss_legendre_panels(edges, p["w_nodes"]))
    v = w * w
    wt = ww * 2.0 * w * np.exp(-v)
    return v, wt / wt.sum()


def _panels(boundaries: np.ndarray, npt: int):
    """GL nodes in ``ln y`` on consecutive panels; returns nodes, weights (for dy), panel index."""
    u, wu = gauss_legendre_panels(np.log(boundaries), npt)
    y = np.exp(u)
    return y, wu * y


def score_quantiles(d: int, rho: float, law: TauLaw, tau_i: float, quadrature: str) -> np.ndarray:
    """``y(v) = 1 - c`` at the quantile nodes ``v_nodes(quadrature)`` for a query with ``tau_i``.

    Builds the density of ``y = 1 - c`` on Gauss-Legendre panels (geometric near ``y = 0``,
    uniform steps of a fraction of the score's standard deviation in the bulk), accumulates
    its CDF ``F(y) = P(1 - c < y)`` from the top, and inverts ``v = -ln F(y)`` with a monotone
    cubic (PCHIP) in ``(v, ln y)``; beyond the smallest panel the power law
    ``F ∝ y^{(d-1)/2}`` is used. See docs/finite-d.md#exact-self-weight.
    """
    p = QUADRATURE_PRESETS[quadrature]
    half = (d - 3) / 2.0
    sig_i = np.sqrt(max(1.0 - tau_i * tau_i, 0.0))
    mu_c = tau_i * law.mean
    sd_c = np.sqrt(tau_i**2 * law.var + sig_i**2 * law.mean_sig2 / (d - 1))
    mu_y = 1.0 - mu_c

    # below y_floor / (1 + kappa^2) the density is a pure power law to relative accuracy
    # ~ y kappa^2 and the quantiles use F ∝ y^{(d-1)/2} (see the end of this function)
    y_lo = p["y_floor"] / (1.0 + law.kappa**2)
    geo = np.exp(np.arange(np.log(2.0), np.log(y_lo), -p["geo_ratio"]))
    lo = max(mu_y - 25.0 * sd_c, y_lo)
    hi = min(mu_y + 15.0 * sd_c, 2.0)
    bulk = np.arange(lo, hi, p["bulk_step"] * sd_c)
    b = np.unique(np.concatenate([geo, bulk, [hi, 2.0]]))
    b = b[(b >= y_lo) & (b <= 2.0)]

    def log_p(y):
        c = 1.0 - y
        s = np.sqrt(np.clip(y * (2.0 - y), 0.0, None))
        lg = _log_g(
            law, d, c.ravel(), s.ravel(), tau_i, sig_i, p["n_w"], p["n_phi"], p["phi_cut"]
        ).reshape(c.shape)
        with np.errstate(divide="ignore"):
            base = half * np.log(y * (2.0 - y)) if half != 0 else np.zeros_like(y)
        return base + lg

    lpb = log_p(b)
    ref = np.max(lpb[np.isfinite(lpb)])
    # keep panels whose end values are within exp(-(v_cap + 60)) of the peak
    ok = np.maximum(lpb[:-1], lpb[1:]) + np.log(np.diff(b)) > ref - p["v_cap"] - 60.0
    idx = np.flatnonzero(ok)
    b = b[idx[0] : idx[-1] + 2]
    lpb = lpb[idx[0] : idx[-1] + 2]
    y, wy = _panels(b, p["gl_panel"])
    lp = log_p(y)
    m = max(np.max(lp[np.isfinite(lp)]), ref)
    mass = np.sum(np.exp(lp - m) * wy, axis=1)
    # mass below the first boundary from the power law p ∝ y^{(d-3)/2}
    m0 = np.exp(lpb[0] - m) * b[0] * 2.0 / (d - 1) if np.isfinite(lpb[0]) else 0.0
    cdf = m0 + np.concatenate([[0.0], np.cumsum(mass)])
    upper = np.concatenate([np.cumsum(mass[::-1])[::-1], [0.0]])  # mass above each knot in y
    tot = cdf[-1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # v = -ln F, from the smaller of the two masses so that v stays accurate near 0
        vb = np.where(upper < 0.5 * tot, -np.log1p(-upper / tot), -np.log(cdf / tot))
        # slope d ln y / dv = -F / (y p) at the knots (exact), for a cubic Hermite interpolant
        slope = -(cdf / tot) / (b * np.exp(lpb - m) / tot)
    good = np.isfinite(vb) & (vb > 0)
    vb, lb, slope = vb[good], np.log(b[good]), slope[good]
    # strictly decreasing v along increasing y: drop knots separated by no mass
    keep = np.concatenate([[True], np.diff(vb) < -1e-12 * vb[1:]])
    vb, lb, slope = vb[keep], lb[keep], slope[keep]
    vs, ls, sl = vb[::-1], lb[::-1], slope[::-1]
    v, _ = v_nodes(quadrature)
    ly = _hermite(vs, ls, sl, np.clip(v, vs[0], vs[-1]))
    beyond = v > vs[-1]
    ly[beyond] = ls[-1] - 2.0 / (d - 1) * (v[beyond] - vs[-1])
    return np.exp(ly)


def _log_g(
    law: TauLaw, d: int, c, s, tau_i: float, sig_i: float, n_w: int, n_phi: int, cut: float
) -> np.ndarray:
    """``log G(c)`` up to a constant, ``G(c) = int_0^pi sin^{d-3}(phi) f(c tau_i + s sigma_i cos phi) dphi``.

    ``w = cos(phi)`` turns the weight ``(1 - w^2)^{(d-4)/2} dw`` into the smooth ``sin^{d-3} phi``.
    ``f`` tilts the integrand strongly for large ``kappa`` (large d or rho near 1), so the rule
    adapts per ``c``: the log-integrand is scanned on ``n_phi`` midpoints, the range where it
    lies within ``e^{-cut}`` of its maximum (widened by 1.5 scan steps each side) is rescanned the
    same way, and ``n_w`` Gauss-Legendre nodes cover the final range.
    """
    phi0 = (np.arange(n_phi) + 0.5) * np.pi / n_phi
    step = np.pi / n_phi

    def logint(phi):
        t = c[:, None] * tau_i + (s * sig_i)[:, None] * np.cos(phi)
        lf = law.log_f_at(np.clip(t, -1.0, 1.0))
        if d == 3:
            return lf
        with np.errstate(divide="ignore"):
            return lf + (d - 3) * np.log(np.sin(phi))

    a = np.zeros(c.size)
    b = np.full(c.size, np.pi)
    for _ in range(2):  # scan, then rescan inside the window found
        width = b - a
        phis = a[:, None] + width[:, None] * phi0[None, :] / np.pi
        L0 = logint(phis)
        top = L0.max(axis=1, keepdims=True)
        mask = L0 > top - cut
        first = np.argmax(mask, axis=1)
        last = n_phi - 1 - np.argmax(mask[:, ::-1], axis=1)
        st = width * step / np.pi
        a, b = (
            np.clip(phis[np.arange(c.size), first] - 1.5 * st, a, b),
            np.clip(phis[np.arange(c.size), last] + 1.5 * st, a, b),
        )
    g, gw = gauss_legendre_01(n_w)
    phi = a[:, None] + (b - a)[:, None] * g
    return _lse(logint(phi) + np.log(gw * (b - a)[:, None]))


def _hermite(xk: np.ndarray, yk: np.ndarray, sk: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Cubic Hermite interpolation with knot slopes ``sk``; non-finite or non-monotone slopes
    are replaced by the neighbouring secants (the data are monotone decreasing)."""
    sec = np.diff(yk) / np.diff(xk)
    ext = np.concatenate([[sec[0]], sec, [sec[-1]]])
    lo_s = np.minimum(ext[:-1], ext[1:])
    bad = ~np.isfinite(sk) | (sk > 0) | (sk < 3.0 * lo_s)
    sk = np.where(bad, 0.5 * (ext[:-1] + ext[1:]), sk)
    i = np.clip(np.searchsorted(xk, x) - 1, 0, xk.size - 2)
    hx = xk[i + 1] - xk[i]
    s = (x - xk[i]) / hx
    h00 = (1 + 2 * s) * (1 - s) ** 2
    h10 = s * (1 - s) ** 2
    h01 = s * s * (3 - 2 * s)
    h11 = s * s * (s - 1)
    return h00 * yk[i] + h10 * hx * sk[i] + h01 * yk[i + 1] + h11 * hx * sk[i + 1]


@lru_cache(maxsize=64)
def omega_rule(d: int, n_w: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Jacobi rule for ``w`` with density ∝ ``(1 - w^2)^{(d-4)/2}`` on [-1, 1], normalised."""
    a = (d - 4) / 2.0
    x, w = roots_jacobi(n_w, a, a)
    return x, w / w.sum()


def uniform_score_quantiles(d: int, quadrature: str) -> np.ndarray:
    """``y(v) = 1 - c`` for uniform tokens (rho = 0): ``c = 2B - 1``, ``B ~ Beta((d-1)/2, (d-1)/2)``.

    ``P(1 - c < y) = I_{y/2}((d-1)/2, (d-1)/2)``, so ``y(v) = 2 I^{-1}(e^{-v})`` in closed form.
    """
    v, _ = v_nodes(quadrature)
    a = (d - 1) / 2.0
    return 2.0 * betaincinv(a, a, np.exp(-v))


@dataclass
class Table:
    """All beta-independent quadrature data for one ``(d, rho, quadrature)`` (or a fixed ``R_0``)."""

    y: np.ndarray  # (nodes, n_v): 1 - c at the quantile nodes, one row per (R_0, tau_i) node
    weight: np.ndarray  # (nodes,): weight of each (R_0, tau_i) node, sums to 1
    r0: np.ndarray  # (nodes,)
    tau: np.ndarray  # (nodes,)
    v_weight: np.ndarray  # (n_v,)


def _build(d: int, rho: float, quadrature: str, r0s, r0w) -> Table:
    p = QUADRATURE_PRESETS[quadrature]
    _, vw = v_nodes(quadrature)
    if rho == 0.0:
        y = uniform_score_quantiles(d, quadrature)[None, :]
        return Table(y=y, weight=np.ones(1), r0=np.ones(1), tau=np.zeros(1), v_weight=vw)
    _, qw, qn, _ = normal_score_rule(p["n_tau"])
    ys, ws, rs, ts = [], [], [], []
    for r0, wr in zip(r0s, r0w, strict=False):
        law = tau_law(d, rho, float(r0))
        for tau_i, wq in zip(law.quantile(qn), qw, strict=False):
            ys.append(score_quantiles(d, rho, law, float(tau_i), quadrature))
            ws.append(wr * wq)
            rs.append(r0)
            ts.append(tau_i)
    w = np.array(ws)
    return Table(y=np.array(ys), weight=w / w.sum(), r0=np.array(rs), tau=np.array(ts), v_weight=vw)


@lru_cache(maxsize=128)
def table(d: int, rho: float, quadrature: str = "standard") -> Table:
    """Quadrature table averaged over ``R_0`` (the law of the whole draw)."""
    r0s, r0w = r0_nodes(d, QUADRATURE_PRESETS[quadrature]["n_r0"])
    return _build(d, rho, quadrature, r0s, r0w)


@lru_cache(maxsize=128)
def table_given_r0(d: int, rho: float, r0: float, quadrature: str = "standard") -> Table:
    """Quadrature table conditioned on ``||z_0|| = r0``."""
    return _build(d, rho, quadrature, np.array([r0]), np.ones(1))


#: ``LEVELS`` was the quadrature presets' name; "level" now means the target level only (docs/glossary.md).
