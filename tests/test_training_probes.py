"""The transformer probes on the trained decoder (docs/training.md#the-trained-heads-on-the-phase-diagram):
the probes' lambda(s) of one head in one position band equals a direct numpy computation from
the checkpoint's parameters (causal mask and the variant's factor included), and the summary's
s*(n)/s*(n_train) is 1 at n_train and the ratio of the heads' s* elsewhere."""

import numpy as np
import pandas as pd
import pytest

from attnscale.experiments.training_probes import band_rows, probe_record, summarise_probes
from attnscale.training import decoder as D

CFG = {"d": 8, "heads": 2, "layers": 2, "vocab": 40, "n_train": 6}
MS = np.array([0.5, 1.0, 2.0, 4.0])


def _direct_lambda(p, ids, variant, h, rows, s):
    """lambda of head h of layer 0, from the parameters alone: the layer's input is the
    embedding's layer norm (g = 1, b = 0 at initialisation), causal softmax with the factor
    c(n) written out per variant, outputs A Y on the normalised inputs, mean over pairs of the
    rows of ||out_i - out_j||^2 / ||y_i - y_j||^2 (both normalised)."""
    x = p["embed"][ids]
    a = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + D.EPS)
    dh = CFG["d"] // CFG["heads"]
    q = (a @ p["0.wq"])[:, h * dh : (h + 1) * dh]
    k = (a @ p["0.wk"])[:, h * dh : (h + 1) * dh]
    y = a / np.linalg.norm(a, axis=1, keepdims=True)
    outs = []
    for i in rows:
        n = i + 1
        c = {"plain": 1 / np.sqrt(dh), "rule": np.log(n) / np.log(CFG["n_train"]) / np.sqrt(dh)}
        if variant == "learned":
            c["learned"] = p["0.s"][h] * np.log(n)
        z = s * c[variant] * (k[:n] @ q[i])
        w = np.exp(z - z.max())
        o = (w / w.sum()) @ y[:n]
        outs.append(o / np.linalg.norm(o))
    ratios = [
        np.sum((outs[u] - outs[v]) ** 2) / np.sum((y[rows[u]] - y[rows[v]]) ** 2)
        for u in range(len(rows))
        for v in range(u + 1, len(rows))
    ]
    return float(np.mean(ratios))


@pytest.mark.parametrize("variant", ["plain", "rule", "learned"])
def test_probes_on_the_decoder_equal_a_direct_lambda(variant):
    rng = np.random.default_rng(1)
    cfg = {**CFG, "variant": variant}
    p = {k: v.astype(np.float64) for k, v in D.init_params(rng, cfg).items()}
    p["0.s"] = p["0.s"] * np.array([0.7, 1.3])
    ids = rng.permutation(CFG["vocab"])[:24]  # distinct tokens: no coincident pairs
    _, records = D.CausalDecoder(cfg, p).forward(ids)
    edges = [0, 8, 16, 24]
    picks = [band_rows(a, b, 5, rng) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    got = probe_record(records[0], edges, picks, MS)
    for r in got:
        if r["band"] == 0 and r["head"] == 0 or r["band"] == 2 and r["head"] == 1:
            rows = picks[r["band"]]
            want = [_direct_lambda(p, ids, variant, r["head"], rows, s) for s in MS]
            np.testing.assert_allclose(r["lambda"], want, rtol=1e-9)
    assert band_rows(0, 8, 100, rng).tolist() == list(range(1, 8))  # position 0 left out


def test_summary_ratio_is_one_at_n_train_and_the_heads_ratio_elsewhere():
    rows = []
    for v, s_train, s_far in (("plain", 1.0, 3.0), ("rule", 0.8, 0.8)):
        for head in (0, 1):
            for band, (lo, hi, s) in enumerate(((3, 6, s_train), (6, 12, s_far))):
                rows.append(
                    {
                        "variant": v,
                        "seed": 0,
                        "layer": 0,
                        "head": head,
                        "band": band,
                        "lo": lo,
                        "hi": hi,
                        "s_star_paper_a": s * (1 + head),
                        "s_star_normalised": s,
                        "learned_factor": np.nan,
                        "n_train": 6,
                        "checkpoint_sha256": "x",
                    }
                )
    out = summarise_probes(heads=[pd.DataFrame(rows)], curves=[pd.DataFrame({"lambda": [0.5]})])
    S = out["summary"].set_index(["variant", "band"])
    assert S.loc[("plain", 0), "ratio_normalised_median"] == 1.0
    assert S.loc[("plain", 1), "ratio_normalised_median"] == pytest.approx(3.0)
    assert S.loc[("plain", 1), "ratio_paper_a_median"] == pytest.approx(3.0)
    assert S.loc[("rule", 1), "ratio_normalised_median"] == pytest.approx(1.0)
    assert S.loc[("plain", 1), "s_star_paper_a"] == pytest.approx(4.5)  # median of 3 and 6
