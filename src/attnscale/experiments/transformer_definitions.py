"""A real head's critical multiplier under each definition, its transition width, by position band,
with moving-block bootstrap SEs (issue 43; docs/real-transformer.md#three-definitions-of-s,
docs/real-transformer.md#n-apart-from-position, docs/real-transformer.md#standard-errors).

Every statistic of one window length is computed on the window means and on the same block
resamples of the windows (:func:`attnscale.transformer.bootstrap.resample`); window lengths are
independent runs, so a ratio between two lengths pairs resample ``r`` of one with resample ``r``
of the other (independent draws) [derived].
"""

from __future__ import annotations

import numpy as np

from attnscale.transformer import bootstrap, probes
from attnscale.transformer.library import first_crossing

__all__ = ["WIDTH_QUARTILES", "CURVES", "s_star_array", "width_array", "estimates", "layer_rows"]

#: The levels of a transition's width, as fractions of the step [choice: a quarter and three
#: quarters; the finite-d mean field's lambda has a floor above 10 % at short windows
#: (docs/long-context.md#the-width-explained), so the sharpness study's 10 % and 90 % would
#: leave the theory's width undefined there].
WIDTH_QUARTILES = (0.25, 0.75)

#: The curve sets of a window length: name -> (curve key, limit key, divided by the limit?).
#: ``band_*``: per position band (:func:`attnscale.transformer.probes.band_masks`);
#: ``fixed_*``: the fixed band of query positions ``1 .. transformer.position_band``.
CURVES = {
    **probes.DEFINITIONS,
    "band_paper_a": ("lambda_band", "lambda_band_inf", False),
    "band_normalised": ("lambda_band", "lambda_band_inf", True),
    "fixed_paper_a": ("lambda_fixed", "lambda_fixed_inf", False),
    "fixed_normalised": ("lambda_fixed", "lambda_fixed_inf", True),
}


def s_star_array(ms, lam, inf, rho, normalise: bool) -> np.ndarray:
    """:func:`attnscale.transformer.probes.critical_multiplier` of every curve of ``lam``
    (``(..., K)``) with its limit ``inf`` and ``rho`` (both broadcast to ``lam.shape[:-1]``)."""
    lam = np.asarray(lam, dtype=np.float64)
    shape = lam.shape[:-1]
    inf, rho = np.broadcast_to(inf, shape), np.broadcast_to(rho, shape)
    out = np.full(shape, np.nan)
    for i in np.ndindex(shape):
        out[i] = probes.critical_multiplier(ms, lam[i], inf[i], rho[i], normalise=normalise)
    return out


def width_array(ms, lam, inf) -> np.ndarray:
    """The transition's width in ``ln s`` of every curve ``lam / inf``: ``ln s_hi - ln s_lo``,
    the first upward crossings of :data:`WIDTH_QUARTILES`; ``nan`` where one is missing."""
    lam = np.asarray(lam, dtype=np.float64)
    shape = lam.shape[:-1]
    inf = np.broadcast_to(inf, shape)
    out = np.full(shape, np.nan)
    for i in np.ndindex(shape):
        if not (np.isfinite(inf[i]) and inf[i] > 0 and np.isfinite(lam[i]).all()):
            continue
        lo, hi = (first_crossing(ms, lam[i] / inf[i], v, log_x=True) for v in WIDTH_QUARTILES)
        if lo is not None and hi is not None:
            out[i] = np.log(hi.x) - np.log(lo.x)
    return out


def _stats(run, idx, names) -> dict:
    """Every statistic of ``names`` on the windows ``idx`` of one window length: s* of each curve
    set and the width of the normalised curve."""
    ms = run["multipliers"]
    rho = run["rho_hat"][idx].mean(0)
    out = {}
    for name in names:
        if name == "width":
            out[name] = width_array(ms, run["lambda"][idx].mean(0), run["lambda_inf"][idx].mean(0))
            continue
        curve, limit, normalise = CURVES[name]
        lam, inf = run[curve][idx].mean(0), run[limit][idx].mean(0)
        r = rho.reshape(rho.shape + (1,) * (inf.ndim - 1))
        out[name] = s_star_array(ms, lam, inf, r, normalise)
    return out


def estimates(run, block: int, resamples: int, rng, *, bands: bool) -> tuple[dict, dict]:
    """Window-mean estimates and their ``(resamples, ...)`` block-bootstrap replicates of every
    curve set of one window length (bands only if ``bands``): ``(est, boot)``, dicts by name."""
    names = [k for k in CURVES if run.get(CURVES[k][0]) is not None]
    names = [k for k in names if bands or not k.startswith("band_")] + ["width"]
    W = run["lambda"].shape[0]
    est = _stats(run, np.arange(W), names)
    reps = []
    bootstrap.resample(
        lambda i: reps.append(_stats(run, i, names)) or 0.0, W, block, resamples, rng
    )
    boot = {k: np.stack([r[k] for r in reps]) for k in names}
    return est, boot


def _median_inf(x, axis):
    """Median with a head that never crosses counted above every grid value (``+inf``)."""
    return np.median(np.where(np.isfinite(x), x, np.inf), axis=axis)


def _sd(x):
    """SD over resamples (axis 0) of the finite replicates; ``nan`` unless most are finite."""
    x = np.asarray(x, dtype=np.float64)
    fin = np.isfinite(x)
    if fin.mean() < 0.5 or fin.sum() < 2:
        return np.nan
    return float(np.std(x[fin], ddof=1))


def layer_rows(est, boot, ref_est, ref_boot, never, log_rule: float) -> list[dict]:
    """Per layer (and ``layer = -1`` for all heads): the heads crossing, those that can never
    cross (``never``, a boolean ``(L, H)``) and those beyond the grid; the median s* (``inf``:
    beyond the grid, when at most half of the heads cross) and the heads past critical
    (``s* < 1``), each with its SE over resamples; and against the reference length
    (``ref_est``, ``ref_boot``): the median ratio ``s*(n)/s*(n_ref)`` over heads crossing at both
    and the count of heads closer (in ln) to a constant s* than to the ``log_rule`` factor."""
    L = est.shape[0]
    records = []
    for ly in [*range(L), -1]:
        sel = slice(None) if ly < 0 else slice(ly, ly + 1)
        e, b, nv = est[sel].ravel(), boot[:, sel].reshape(boot.shape[0], -1), never[sel].ravel()
        re, rb = ref_est[sel].ravel(), ref_boot[:, sel].reshape(boot.shape[0], -1)
        fin = np.isfinite(e)
        ratio, ratio_b = e / re, b / rb
        both = np.isfinite(ratio)
        med_b = _median_inf(b, 1)
        closer = lambda r: np.sum(np.abs(np.log(r)) < np.abs(np.log(r / log_rule)), axis=-1)  # noqa: E731
        with np.errstate(invalid="ignore", divide="ignore"):
            rmed_b = [
                np.median(r[np.isfinite(r)]) if np.isfinite(r).any() else np.nan for r in ratio_b
            ]
            records.append(
                {
                    "layer": ly,
                    "heads": e.size,
                    "crossing": int(fin.sum()),
                    "crossing_se": _sd(np.isfinite(b).sum(1)),
                    "never": int((nv & ~fin).sum()),
                    "beyond_grid": int((~nv & ~fin).sum()),
                    "s_star_median": float(_median_inf(e, 0)),
                    "s_star_median_se": _sd(np.where(np.isfinite(med_b), med_b, np.nan)),
                    "past_critical": int(np.sum(e < 1.0)),
                    "past_critical_se": _sd(np.sum(b < 1.0, axis=1)),
                    "ratio_heads": int(both.sum()),
                    "ratio_median": float(np.median(ratio[both])) if both.any() else np.nan,
                    "ratio_median_se": _sd(rmed_b),
                    "closer_to_constant": int(closer(ratio[both])),
                    "closer_to_constant_se": _sd([closer(r[np.isfinite(r)]) for r in ratio_b]),
                }
            )
    return records
