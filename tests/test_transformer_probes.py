"""The multiplier probes of a trained head, its critical multiplier, the theory's predictions
and the block bootstrap (docs/real-transformer.md#the-probes,
docs/real-transformer.md#standard-errors)."""

from __future__ import annotations

import numpy as np
import pytest
from transformer_tiny import tiny_text, write_tiny_bert

from attnscale.layer.dense.attention import softmax_rows
from attnscale.layer.scores.learned import gamma_c_eff
from attnscale.transformer import bootstrap, loader, probes


def _tokens(n=24, d=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 0.8 * rng.standard_normal(d)
    return X / np.linalg.norm(X, axis=1, keepdims=True), rng


def test_small_s_is_uniform_attention_and_lambda_zero():
    Y, rng = _tokens()
    rows = np.arange(1, 23)
    S = rng.standard_normal((rows.size, 24))
    r = probes.head_curves(Y, S, rows, [1e-9])
    assert r["lambda"][0] < 1e-12
    assert abs(r["self_weight"][0] - 1 / 24) < 1e-9


def test_large_s_is_the_heads_argmax_map():
    Y, rng = _tokens()
    rows = np.arange(1, 23)
    S = rng.standard_normal((rows.size, 24))  # no ties
    r = probes.head_curves(Y, S, rows, [1e7])
    assert abs(r["lambda"][0] - r["lambda_inf"]) < 1e-9 * r["lambda_inf"]
    assert abs(r["self_weight"][0] - r["self_max"]) < 1e-9
    # identity scores: the argmax map is the identity, lambda(inf) = 1, every row self-max
    G = Y[rows] @ Y.T
    r = probes.head_curves(Y, 50 * G, rows, [1.0])
    assert r["self_max"] == 1.0 and abs(r["lambda_inf"] - 1.0) < 1e-12


def test_self_weight_matches_the_two_score_formula():
    """Scores a on the diagonal and b elsewhere: A_ii = 1/(1 + (n-1) e^{s (b - a)}) exactly, so
    the crossing of 1/2 is the mean-score prediction ln(n-1)/(a-b) = gamma_c_eff(n) ln n."""
    n, a, b = 20, 1.0, 0.3
    Y, _ = _tokens(n)
    rows = np.arange(1, n - 1)
    S = np.full((rows.size, n), b)
    S[np.arange(rows.size), rows] = a
    ms = np.geomspace(0.5, 16, 41)
    r = probes.head_curves(Y, S, rows, ms)
    np.testing.assert_allclose(
        r["self_weight"], 1 / (1 + (n - 1) * np.exp(ms * (b - a))), rtol=1e-12
    )
    eff, fl = probes.predicted_half_multipliers(n, a, b, 0.0)
    assert eff == pytest.approx(np.log(n - 1) / (a - b), rel=1e-12)
    assert eff == pytest.approx(gamma_c_eff(a, b, n) * np.log(n), rel=1e-12)
    assert fl == pytest.approx(eff, rel=1e-12)


def test_critical_multiplier_is_the_crossing_of_the_ratio():
    ms = np.geomspace(1 / 16, 16, 17)
    lam_inf, rho = 0.8, 0.2
    lam = lam_inf * ms / (1 + ms)  # ratio s/(1+s) crosses 1/(1+3 rho) at s = 1/(3 rho)
    s = probes.critical_multiplier(ms, lam, lam_inf, rho)
    assert s == pytest.approx(1 / (3 * rho), rel=0.05)  # linear interpolation in ln s
    assert np.isnan(probes.critical_multiplier(ms, 0.1 * lam, lam_inf, rho))
    assert np.isnan(probes.critical_multiplier(ms, lam, 0.0, rho))


def test_lambda_eff_is_the_simplex_at_the_rescaled_beta():
    from attnscale.layer.theory import simplex_lambda

    ms = np.array([0.5, 1.0, 4.0])
    got = probes.lambda_eff_curve(64, 0.3, 1.0, 0.5, ms)
    want = [simplex_lambda(64, 0.3, s * 0.5 / 0.7) for s in ms]
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert np.isnan(probes.lambda_eff_curve(64, 0.3, 0.5, 0.5, ms)).all()


def test_sampled_rows_are_unbiased_for_lambda():
    """The mean of lambda over row samples equals lambda over all rows (within 4 SE)."""
    Y, rng = _tokens(60, 12, seed=3)
    S = 3.0 * (Y @ Y.T) + 0.5 * rng.standard_normal((60, 60))
    full_rows = np.arange(1, 59)
    full = probes.head_curves(Y, S[full_rows], full_rows, [1.0])["lambda"][0]
    vals = []
    for _ in range(300):
        r = probes.text_rows(60, 12, rng)
        vals.append(probes.head_curves(Y, S[r], r, [1.0])["lambda"][0])
    vals = np.asarray(vals)
    assert abs(vals.mean() - full) < 4 * vals.std(ddof=1) / np.sqrt(vals.size)


def test_layer_probes_on_a_tiny_model(tmp_path):
    m = loader.load(loader.resolve(str(write_tiny_bert(tmp_path / "m"))))
    ids = m.encode_sentence(tiny_text(30))
    _, recs = m.adapter.forward(ids)
    rows = probes.text_rows(len(ids), None, None)
    ms = [0.5, 1.0, 2.0]
    out = probes.layer_probes(recs[1], rows, ms)
    assert out["lambda"].shape == (2, 3) and out["s_self"].shape == (2,)
    # the same numbers as the head's scores used directly
    r = probes.head_curves(
        recs[1].inputs / np.linalg.norm(recs[1].inputs, axis=1, keepdims=True),
        recs[1].scores(1, rows),
        rows,
        ms,
    )
    np.testing.assert_allclose(out["lambda"][1], r["lambda"], rtol=1e-12)
    assert 0 <= out["rho_hat"] < 1


def test_row_space_keeps_every_probe_when_n_is_below_d():
    """The probes in the basis of the inputs' row space (n < d) equal those on the inputs
    themselves: every key of a layer's probes to 1e-12 relative (rounding only), and the
    basis keeps the Gram matrix (docs/real-transformer.md#the-probes)."""
    rng = np.random.default_rng(3)
    n, d, H, dh = 20, 48, 2, 8
    X = rng.standard_normal((n, d)) + 0.7 * rng.standard_normal(d)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    B = probes.row_space(Y)
    assert B.shape == (n, n)
    np.testing.assert_allclose(B @ B.T, Y @ Y.T, atol=1e-14)
    wide = Y[:, :5]  # n >= d: nothing to gain, the inputs as they are
    assert probes.row_space(wide) is wide

    class Record:
        inputs = X
        q = rng.standard_normal((H, n, dh))
        k = rng.standard_normal((H, n, dh))

    rows = probes.text_rows(n, 12, np.random.default_rng(4))
    ms = np.geomspace(0.1, 10, 5)
    kw = {"bands": 2, "fixed_rows": np.arange(1, 6)}
    fast = probes.layer_probes(Record, rows, ms, **kw)
    original = probes.row_space
    try:
        probes.row_space = lambda Y: Y  # the probes on the inputs as they are
        plain = probes.layer_probes(Record, rows, ms, **kw)
    finally:
        probes.row_space = original
    assert fast.keys() == plain.keys()
    for key in plain:
        np.testing.assert_allclose(fast[key], plain[key], rtol=1e-12, atol=1e-15, err_msg=key)


def test_block_indices():
    rng = np.random.default_rng(0)
    idx = bootstrap.block_indices(10, 3, 50, rng)
    assert idx.shape == (50, 10) and idx.min() >= 0 and idx.max() <= 9
    d = np.diff(idx[:, :3], axis=1)
    assert (d == 1).all()  # a block is consecutive windows


def test_block_bootstrap_calibrated_on_independent_series():
    """phi = 0, block 1: the bootstrap SE is the plug-in SE, sqrt((W-1)/W) of the true one on
    average up to the SD's own bias; within 10 % at 100 replicates [choice: tolerance from the
    spread of the SE estimate, about 13 % / sqrt(100) per replicate set]."""
    rng = np.random.default_rng(1)
    se, true, cover = bootstrap.ar1_calibration(30, 0.0, 1, 100, 100, rng)
    assert abs(se / true - 1) < 0.1
    assert 0.85 < cover <= 1.0


def test_text_keys_and_bands_are_the_curves_of_their_rows_and_keys():
    """lambda on text keys is lambda with the special keys' scores at -inf; a band's lambda is
    lambda of the head restricted to the band's query rows (docs/real-transformer.md#three-definitions-of-s)."""
    Y, rng = _tokens(30, 8, seed=4)
    rows = np.arange(1, 29)
    S = 2.0 * rng.standard_normal((rows.size, 30))
    S[:, 0] += 3.0  # a sink on [CLS]
    ms = [0.5, 2.0]
    r = probes.head_curves(Y, S, rows, ms, bands=2)
    masked = S.copy()
    masked[:, [0, 29]] = -np.inf
    t = probes.head_curves(Y, masked, rows, ms)
    np.testing.assert_allclose(r["lambda_text"], t["lambda"], rtol=1e-12)
    assert r["lambda_text_inf"] == pytest.approx(t["lambda_inf"], rel=1e-12)
    keep = probes.band_masks(30, rows, 2)[1]
    b = probes.head_curves(Y, S[keep], rows[keep], ms)
    np.testing.assert_allclose(r["lambda_band"][1], b["lambda"], rtol=1e-12)


def test_split_outputs_are_both_softmaxes_even_behind_a_strong_sink():
    """One exponential pass gives the full softmax's outputs and weights and the text keys' own
    softmax (docs/real-transformer.md#three-definitions-of-s), against the explicit matrices; a
    sink 60 above the text scores at s = 16 leaves the full softmax's text weights below
    e^-900: the text keys' softmax must come from their own scores, not from renormalising
    those weights (the explicit one here is built from the text scores alone)."""
    Y, rng = _tokens(40, 8, seed=5)
    rows = np.arange(1, 39)
    ms = np.array([0.25, 1.0, 16.0])
    for sink in (0.0, 60.0):
        S = 2.0 * rng.standard_normal((rows.size, 40))
        S[:, 0] += sink
        out, out_text, weights = probes.split_outputs(Y, S, ms)
        for k, s in enumerate(ms):
            A = softmax_rows(s * S)
            np.testing.assert_allclose(out[k], A @ Y, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(weights(rows)[k], A[np.arange(rows.size), rows], rtol=1e-12)
            At = softmax_rows(s * S[:, 1:39])
            np.testing.assert_allclose(out_text[k], At @ Y[1:39], rtol=1e-12, atol=1e-14)
        # the last row of a causal window may be the last key: its weight is that key's
        w = weights(np.full(rows.size, 39))
        np.testing.assert_allclose(w[1], softmax_rows(S)[:, 39], rtol=1e-12)
