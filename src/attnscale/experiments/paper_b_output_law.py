"""Paper B critical output law (ours): the scaled displacement at ``beta = gamma n^alpha`` against
its marked-Poisson limit (docs/paper-b-beyond.md#critical-output-law).

For uniform keys, ``q = e_1`` and each ``(gamma, n)``, ``trials`` contexts give samples of
``L_n = n^{1/(d-1)} P_q(ATT_n(q) - q)`` (:func:`attnscale.sphere.marked_poisson.critical_output_finite_n`);
``limit_trials`` samples of the limit ``L`` come from
:func:`attnscale.sphere.marked_poisson.critical_output_limit`, and a second, independent limit sample of
``trials`` samples measures the noise level of the two-sample Kolmogorov-Smirnov distance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.stats import mean_se
from attnscale.core.validation import check_int, check_vector
from attnscale.pipeline.io import provenance_columns, with_job_provenance
from attnscale.pipeline.runtime import Progress
from attnscale.sphere import marked_poisson as mp
from attnscale.sphere import theory as st
from attnscale.sphere.poisson_limit import POISSON_MAX_POINTS

__all__ = ["critical_output_law"]

OUT_STREAM = "paper_b/output_law"
OUT_LIMIT_STREAM = "paper_b/output_law/limit"
OUT_NULL_STREAM = "paper_b/output_law/null"

#: Mean of the Kolmogorov distribution, sqrt(pi/2) log 2: E[KS] ~ KS_MEAN sqrt(1/m1 + 1/m2).
KS_MEAN = float(np.sqrt(np.pi / 2) * np.log(2))


def _ecdf_rows(d, g, n, source, r, points: int, key) -> pd.DataFrame:
    """``min(points, m)`` evenly spaced order statistics of the sample ``r`` (size ``m``).

    The ``j``-th kept value is the order statistic of rank ``ceil(j m / k)``, so the ECDF of the
    kept values (``j / k`` at the ``j``-th) equals the sample's ECDF at every kept value: the
    figure's ECDF is exact at these points and the table stays small [choice].
    """
    srt = np.sort(r)
    k = min(points, r.size)
    idx = np.ceil(np.arange(1, k + 1) * r.size / k).astype(int) - 1
    return pd.DataFrame(
        {
            "d": d,
            "gamma": g,
            "n": n,
            "source": source,
            "rank": idx + 1,
            "samples": r.size,
            "norm": srt[idx],
            **provenance_columns(None, key, {}, only=("spawn_key",)),
        }
    )


def _summary_row(common: dict, source: str, n: int, r, prov: tuple, ks=None) -> dict:
    """One summary row: sample moments with SEs (:func:`attnscale.core.stats.mean_se`), KS to the
    limit, provenance."""
    d, g = common["d"], common["gamma"]
    return {
        **common,
        "source": source,
        "n": n,
        "beta": g * n ** st.alpha_exponent(d) if n else np.nan,
        "samples": r.size,
        "norm_mean": r.mean(),
        "norm_se": mean_se(r)[1],
        "m2_mean": np.mean(r * r),
        "m2_se": mean_se(r * r)[1],
        "ks_vs_limit": np.nan if ks is None else ks.statistic,
        "ks_pvalue": np.nan if ks is None else ks.pvalue,
        **provenance_columns(*prov),
    }


def critical_output_law(
    *,
    d: int,
    n_values,
    gammas,
    trials: int,
    limit_trials: int,
    root_seed: int,
    max_points: int = POISSON_MAX_POINTS,
    plot_points: int = 1000,
) -> dict:
    """Entry of rule ``paper_b_output_law``: law of ``|L_n|`` and ``E |L_n|^2`` against the limit
    (docs/paper-b-beyond.md#experiment-and-finding).

    Parameters
    ----------
    d : int
        Ambient dimension (>= 3).
    n_values : sequence of int
        Context sizes (>= 1 each).
    gammas : sequence of float
        Critical constants, ``beta = gamma n^{2/(d-1)}`` (> 0 each).
    trials, limit_trials : int
        Samples per ``(gamma, n)`` and of the limit per ``gamma`` (>= 2 each).
    root_seed : int
        Root seed; generators per ``(d, gamma, n)``, ``(d, gamma)`` (limit) and ``(d, gamma)``
        (null sample) from :func:`attnscale.core.seeding.job_rng`.
    max_points : int
        Truncation of both samplers (expected points per sample beyond the nearest one).
    plot_points : int
        Order statistics kept per sample for the ECDF table (:func:`_ecdf_rows`).

    Returns
    -------
    dict
        ``ecdf``: evenly spaced order statistics of the norms ``|L_n|``
        (``source = "finite_n"``) and ``|L|`` (``source = "limit"``, ``n = 0``); ``summary``: per
        ``(gamma, source, n)`` the number of samples, mean and SE of ``|L|`` and of ``|L|^2``, the
        Mecke value of ``E |L|^2``, the two-sample KS distance to the limit sample with its
        p-value, the null KS distance (independent limit sample of ``trials`` samples against the
        same limit sample) and the Kolmogorov-law mean and 95% point of the null KS at these
        sample sizes.
    """
    d = check_int("d", d, minimum=3)
    ns = [check_int("n_values[i]", int(v), minimum=1) for v in n_values]
    gammas = check_vector("gammas", gammas, low=0.0, low_open=True)
    trials = check_int("trials", trials, minimum=2)
    limit_trials = check_int("limit_trials", limit_trials, minimum=2)
    max_points = check_int("max_points", max_points, minimum=1)
    plot_points = check_int("plot_points", plot_points, minimum=2)
    c = st.c_uniform(d)
    base = {"d": d, "trials": trials, "limit_trials": limit_trials, "max_points": max_points}
    size = np.sqrt(1.0 / trials + 1.0 / limit_trials)
    null_mean = KS_MEAN * size
    null_q95 = float(stats.kstwobign.ppf(0.95)) * size
    samples, summ = [], []
    progress = Progress("output-law gammas", len(gammas))
    for g in (float(v) for v in gammas):
        m2_mecke = mp.critical_output_second_moment(g, c, d)
        lim, kl, null, k0 = _limit_norms(g, c, d, trials, limit_trials, root_seed, max_points)
        ks_null = stats.ks_2samp(null, lim).statistic
        common = {
            "d": d,
            "gamma": g,
            "m2_mecke": m2_mecke,
            "ks_null": ks_null,
            "ks_null_mean": null_mean,
            "ks_null_q95": null_q95,
        }
        summ.append(_summary_row(common, "limit", 0, lim, (root_seed, kl, {**base, "gamma": g})))
        summ.append(
            _summary_row(
                common,
                "limit_repeat",
                0,
                null,
                (root_seed, k0, {**base, "gamma": g, "limit_repeat": True}),
                stats.ks_2samp(null, lim),
            )
        )
        samples.append(_ecdf_rows(d, g, 0, "limit", lim, plot_points, kl))
        for n in ns:
            key = spawn_key(OUT_STREAM, d, value_id(g), n)
            r = np.linalg.norm(
                mp.critical_output_finite_n(
                    n, g, d, trials, job_rng(root_seed, key), max_points=max_points
                ),
                axis=1,
            )
            prov = (root_seed, key, {**base, "gamma": g, "n": n})
            summ.append(_summary_row(common, "finite_n", n, r, prov, stats.ks_2samp(r, lim)))
            samples.append(_ecdf_rows(d, g, n, "finite_n", r, plot_points, key))
        progress.step()
    return {
        "ecdf": with_job_provenance(pd.concat(samples, ignore_index=True)),
        "summary": pd.DataFrame(summ),
    }


def _limit_norms(g, c, d, trials, limit_trials, root_seed, max_points):
    """The limit sample of ``|L|`` at ``gamma = g`` (``limit_trials`` samples) and the null sample
    (``trials`` samples of the limit, for the KS noise level), each with its spawn key."""
    kl = spawn_key(OUT_LIMIT_STREAM, d, value_id(g))
    lim = np.linalg.norm(
        mp.critical_output_limit(
            g, c, d, limit_trials, job_rng(root_seed, kl), max_points=max_points
        ),
        axis=1,
    )
    k0 = spawn_key(OUT_NULL_STREAM, d, value_id(g))
    null = np.linalg.norm(
        mp.critical_output_limit(g, c, d, trials, job_rng(root_seed, k0), max_points=max_points),
        axis=1,
    )
    return lim, kl, null, k0
