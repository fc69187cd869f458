"""The trained retrieval layer's probes and the effective critical multiplier
(docs/training.md#the-retrieval-heads-on-the-phase-diagram): the probes' tokens are the model's,
their lambda(s) equals a direct numpy computation from the parameters, gamma_c_eff ln n puts the
mean-score self-weight at 1/2, the language model's effective scores are the causal means, and
the summary's ratios and retrieval head are what the heads say."""

import numpy as np
import pandas as pd
import pytest

from attnscale.experiments import training_retrieval_probes as P
from attnscale.experiments.findings.training_heads import heads_findings
from attnscale.experiments.training import retrieval_config
from attnscale.experiments.training_probes import band_rows, effective_multiplier, probe_record
from attnscale.training import decoder as D
from attnscale.training import retrieval as R

TINY = {"d": 8, "heads": 2, "keys": 64, "values": 4, "n_min": 2, "n_train": 8}
MS = np.array([0.5, 1.0, 2.0, 4.0])


def _model(variant):
    cfg = retrieval_config(TINY, variant)
    rng = np.random.default_rng(3)
    p = {k: v.astype(np.float64) for k, v in R.init_params(rng, cfg).items()}
    p["s"] = p["s"] * np.array([0.7, 1.3])
    return cfg, p, rng


@pytest.mark.parametrize("variant", ["plain", "rule", "learned", "test_rule"])
def test_retrieval_probe_lambda_equals_a_direct_computation(variant):
    cfg, p, rng = _model("plain" if variant == "test_rule" else variant)
    n = 24
    b = P.context(rng, n, 6, cfg)
    X = P.tokens(p, b)
    dh = cfg["d"] // cfg["heads"]
    for h in range(cfg["heads"]):
        q = np.concatenate([p["key_embed"][b["query"]], np.zeros((6, 4))], 1) @ p["wq"]
        k = X @ p["wk"]
        raw = q[:, h * dh : (h + 1) * dh] @ k[:, h * dh : (h + 1) * dh].T
        c = {
            "plain": 1 / np.sqrt(dh),
            "rule": np.log(n) / np.log(8) / np.sqrt(dh),
            "learned": p["s"][h] * np.log(n),
            "test_rule": np.log(n) / np.log(8) / np.sqrt(dh),
        }[variant]
        got = P.probe_context(p, cfg, variant, b, MS)[h]
        y = X / np.linalg.norm(X, axis=1, keepdims=True)
        pos = b["position"]
        for s, lam in zip(MS, got["lambda"], strict=True):
            z = s * c * raw
            w = np.exp(z - z.max(1, keepdims=True))
            o = (w / w.sum(1, keepdims=True)) @ y
            o /= np.linalg.norm(o, axis=1, keepdims=True)
            want = np.mean(
                [
                    np.sum((o[u] - o[v]) ** 2) / np.sum((y[pos[u]] - y[pos[v]]) ** 2)
                    for u in range(6)
                    for v in range(u + 1, 6)
                ]
            )
            assert lam == pytest.approx(want, rel=1e-9)
        own = (c * raw)[np.arange(6), pos]
        assert got["s_self"] == pytest.approx(own.mean(), rel=1e-9)
        assert got["s_cross"] == pytest.approx(((c * raw).sum() - own.sum()) / (6 * (n - 1)))


def test_effective_multiplier_puts_the_mean_score_self_weight_at_one_half():
    s_self, s_cross, n = 0.9, 0.2, 200
    s = effective_multiplier(s_self, s_cross, n)
    assert 1 / (1 + (n - 1) * np.exp(s * (s_cross - s_self))) == pytest.approx(0.5, rel=1e-12)
    assert effective_multiplier(0.1, 0.2, n) == np.inf
    assert np.isnan(effective_multiplier(0.9, 0.2, 2))


def test_lm_effective_scores_are_the_causal_means():
    rng = np.random.default_rng(1)
    cfg = {"d": 8, "heads": 2, "layers": 1, "vocab": 40, "n_train": 6, "variant": "rule"}
    p = {k: v.astype(np.float64) for k, v in D.init_params(rng, cfg).items()}
    _, records = D.CausalDecoder(cfg, p).forward(rng.permutation(40)[:16])
    rows = band_rows(8, 16, 4, rng)
    got = probe_record(records[0], [0, 8, 16], [band_rows(0, 8, 4, rng), rows], MS)
    r = [x for x in got if x["band"] == 1 and x["head"] == 1][0]
    S = records[0].scores(1, rows)
    assert r["s_self"] == pytest.approx(np.mean([S[a, i] for a, i in enumerate(rows)]), rel=1e-12)
    cross = np.mean([S[a, :i].mean() for a, i in enumerate(rows)])
    assert r["s_cross"] == pytest.approx(cross, rel=1e-12)
    assert r["n_keys"] == pytest.approx(np.mean(rows + 1))


def test_summary_ratios_and_the_retrieval_head():
    rows = []
    for seed, drift in ((0, 2.0), (1, 3.0)):
        for head, weight in ((0, 0.3), (1, 0.8)):
            for n, s_star in ((8, 1.0 + head), (32, drift * (1.0 + head))):
                rows.append(
                    {
                        "variant": "plain",
                        "seed": seed,
                        "n": n,
                        "head": head,
                        "rho_pooled": 0.1,
                        "weight_right": weight,
                        "s_star_paper_a": s_star,
                        "s_star_normalised": np.nan if (seed, n) == (1, 32) else s_star,
                        "s_eff": 0.5 * s_star,
                        "learned_factor": np.nan,
                        "n_train": 8,
                        "checkpoint_sha256": "x",
                    }
                )
    lm = pd.DataFrame(
        {
            "variant": "plain",
            "seed": [0, 0, 0, 1, 1, 1],
            "hi": [6, 6, 12, 6, 6, 12],
            "n_train": 6,
            "s_eff": [1.0, np.inf, 5.0, 2.0, 4.0, 5.0],
            "s_star_paper_a": 1.0,
            "s_star_normalised": 1.0,
            "learned_factor": np.nan,
        }
    )
    out = P.summarise_retrieval_probes(
        heads=[pd.DataFrame(rows)], curves=[pd.DataFrame()], lm_heads=lm
    )
    C = out["critical"].set_index("model")
    assert C.loc["lm", "s_eff"] == pytest.approx(3.0)  # seed medians inf and 3: the finite one
    assert C.loc["lm", "s_eff_seeds"] == 1
    assert (C.loc["lm", "infinite"], C.loc["lm", "heads"]) == (1, 4)
    assert C.loc["retrieval", "s_eff"] == pytest.approx(1.0)  # the retrieval head at n_train
    S = out["summary"].set_index("n")
    assert (out["seeds"]["head"] == 1).all()  # the head with the larger right-key weight
    assert S.loc[8, "ratio_paper_a"] == 1.0
    assert S.loc[32, "ratio_paper_a"] == pytest.approx(2.5)
    assert S.loc[32, "ratio_paper_a_se"] == pytest.approx(0.5)
    assert S.loc[32, "ratio_eff"] == pytest.approx(2.5)
    assert S.loc[32, "s_star_paper_a"] == pytest.approx(5.0)
    assert S.loc[32, "ratio_normalised"] == pytest.approx(2.0)  # the seed where it is defined
    assert S.loc[32, "ratio_normalised_seeds"] == 1
    assert S.loc[32, "crossing_normalised_heads"] == pytest.approx(0.5)
    F = {f.key: f for f in heads_findings(summary=out["summary"], critical=out["critical"])}
    assert F["training_heads.ratio_eff_plain"].value == pytest.approx([1.0, 2.5])
    assert F["training_heads.lm_infinite"].value == [1, 4]
    assert F["training_heads.s_eff_lm"].value == pytest.approx([3.0])
    assert F["training_heads.ratio_eff_rule"].value is None  # no such variant: not computed
