"""The training family (docs/training.md): the gradient against finite differences, the JAX
forward against the numpy one, the loss falls, determinism of the checkpoint bytes, refused
checkpoints, the non-finite stop, and a planted mistake in the rule caught."""

import json

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("optax")

from attnscale.experiments import training as T  # noqa: E402
from attnscale.training import TrainingError, checkpoint, scaling  # noqa: E402
from attnscale.training import retrieval as R  # noqa: E402
from attnscale.training.evaluate import retrieval_metrics  # noqa: E402
from attnscale.training.trainer import train  # noqa: E402

TINY = {"d": 8, "heads": 2, "keys": 64, "values": 4, "n_min": 2, "n_train": 8}
SCHEDULE = {"steps": 60, "batch": 16, "lr": 0.05, "warmup": 5, "weight_decay": 0.0, "log_every": 10}


def _tiny(variant="learned", seed=0):
    cfg = T.retrieval_config(TINY, scaling.TRAINED_AS[variant])
    rng = np.random.default_rng(seed)
    params = R.init_params(rng, cfg)
    b = R.batch(rng, 5, rng.integers(2, 9, size=5), cfg, n_pad=8)
    return cfg, params, b


@pytest.mark.parametrize("variant", ["learned"])
def test_gradient_matches_central_differences_in_float64(variant):
    cfg, params, b = _tiny(variant)
    with jax.enable_x64(True):
        jnp = jax.numpy
        p64 = {k: jnp.asarray(v, jnp.float64) for k, v in params.items()}
        g = jax.jit(jax.grad(lambda p: R.loss(p, b, variant, cfg, jnp)))(p64)
        rng = np.random.default_rng(1)
        for name in ("wq", "wk", "readout", "value_embed", "s"):
            x = np.asarray(p64[name])
            for idx in [tuple(rng.integers(0, s) for s in x.shape) for _ in range(3)]:
                h = 1e-6
                up, dn = x.copy(), x.copy()
                up[idx] += h
                dn[idx] -= h
                fd = (
                    float(R.loss({**p64, name: up}, b, variant, cfg, np))
                    - float(R.loss({**p64, name: dn}, b, variant, cfg, np))
                ) / (2 * h)
                assert float(g[name][idx]) == pytest.approx(fd, rel=1e-5, abs=1e-8), (name, idx)


def test_jax_forward_equals_numpy_forward_in_float64():
    cfg, params, b = _tiny("test_rule")
    with jax.enable_x64(True):
        jnp = jax.numpy
        p64 = {k: np.asarray(v, np.float64) for k, v in params.items()}
        lj, wj = R.forward({k: jnp.asarray(v) for k, v in p64.items()}, b, "test_rule", cfg, jnp)
        ln, wn = R.forward(p64, b, "test_rule", cfg, np)
        assert np.abs(np.asarray(lj) - ln).max() < 1e-9
        assert np.abs(np.asarray(wj) - wn).max() < 1e-9


def _train_tiny(variant="plain", seeds=(0,)):
    return T.train_retrieval(
        variant=variant, seeds=list(seeds), root_seed=7, model=TINY, schedule=SCHEDULE
    )


def test_loss_falls_within_a_hundred_steps_and_checkpoints_are_byte_identical():
    a = _train_tiny(seeds=(0, 1))  # 60 steps each
    curve = a["curve_0"]["loss"].to_numpy()
    assert SCHEDULE["steps"] <= 100 and curve[-1] < 0.7 * curve[0]
    # the same seed again (the same compiled step, a fresh run): the same bytes
    cfg = T.retrieval_config(TINY, "plain")
    runs = []
    for _ in range(2):
        data = np.random.default_rng(11)
        init = R.init_params(np.random.default_rng(10), cfg)
        runs.append((init, lambda t, data=data: R.batch(data, 8, 6, cfg, n_pad=8)))
    (p1, c1), (p2, c2) = train(
        lambda p, b: R.loss(p, b, "plain", cfg, jax.numpy),
        runs,
        steps=20,
        lr=0.05,
        weight_decay=0.0,
        warmup=2,
        log_every=5,
        frozen=T.FROZEN["plain"],
    )
    e1, e2 = (checkpoint.encode(p, cfg, {}) for p in (p1, p2))
    assert e1["model"] == e2["model"] and e1["config"] == e2["config"]
    assert a["model_0"] != a["model_1"]  # and another seed gives another model


def _write(tmp_path, files, seed=0):
    d = tmp_path / "ck"
    d.mkdir()
    (d / "model.safetensors").write_bytes(files[f"model_{seed}"])
    for k in ("config", "vocab"):
        (d / f"{k}.json").write_text(
            json.dumps(files[f"{k}_{seed}"], indent=1, sort_keys=True) + "\n"
        )
    return d


def test_a_bad_checkpoint_is_refused_naming_the_file(tmp_path):
    cfg, params, _ = _tiny("plain")
    d = _write(
        tmp_path,
        {
            f"{k}_0": v
            for k, v in checkpoint.encode(params, {**cfg, "seed": 0}, {"kind": "ids"}).items()
        },
    )
    params, cfg, _, digest = checkpoint.load(d / "config.json", R.ARCHITECTURE)
    assert digest == cfg["files"]["model.safetensors"] and "wq" in params
    with pytest.raises(TrainingError, match="config.json: architecture"):
        checkpoint.load(d / "config.json", "attnscale-decoder")
    with pytest.raises(TrainingError, match="config.json: seed 0, this job reads 1"):
        checkpoint.load(d / "config.json", R.ARCHITECTURE, seed=1)
    blob = bytearray((d / "model.safetensors").read_bytes())
    blob[-1] ^= 1
    (d / "model.safetensors").write_bytes(bytes(blob))
    with pytest.raises(TrainingError, match="model.safetensors: SHA-256"):
        T.evaluate_retrieval(
            weights=str(d / "model.safetensors"),
            variant="plain",
            seed=0,
            ns=[2],
            examples=8,
            root_seed=1,
        )


def test_a_non_finite_loss_stops_with_the_step_and_writes_nothing():
    cfg, params, b = _tiny("plain")
    jnp = jax.numpy

    def loss(p, batch):
        return R.loss(p, batch, "plain", cfg, jnp) * jnp.where(p["s"][0] > -1, jnp.inf, 1.0)

    with pytest.raises(TrainingError, match=r"non-finite loss inf at step 0"):
        train(
            loss, [(params, lambda t: b)], steps=3, lr=0.01, weight_decay=0.0, warmup=1, log_every=1
        )


def _planted(cfg):
    """A retrieval layer built by hand: queries match their key with q . k = 4 sqrt(d_h) (so the
    plain factor gives 4), distractors near 0, and the readout decodes the value."""
    d, h = cfg["d"], cfg["heads"]
    half = d // 2
    rng = np.random.default_rng(3)
    keys = rng.standard_normal((cfg["keys"], half)) / np.sqrt(half)
    vals = np.eye(cfg["values"], d - half)
    eye = np.zeros((d, d))
    eye[:half, :half] = np.eye(half) * np.sqrt(4.0 * np.sqrt(d // h) / h)
    wv = np.zeros((d, d))
    wv[half:, half:] = np.eye(d - half)
    readout = np.zeros((d, cfg["values"]))
    readout[half:, :] = np.eye(d - half, cfg["values"]) * 10
    return {
        "key_embed": keys,
        "value_embed": vals,
        "wq": eye,
        "wk": eye,
        "wv": wv,
        "readout": readout,
        "s": np.zeros(h),
    }


def rule_gain(cfg, n):
    """The published comparison in miniature: right-key weight of the test-time rule minus
    plain's at n (same draws)."""
    p = _planted(cfg)
    w = {
        v: retrieval_metrics(p, cfg, v, n, np.random.default_rng(5), 64, 0)["weight_right"]
        for v in ("plain", "test_rule")
    }
    return w["test_rule"] - w["plain"]


def test_the_rule_raises_the_weight_and_a_dropped_log_factor_is_caught(monkeypatch):
    cfg = {**T.retrieval_config({**TINY, "d": 16, "keys": 512, "values": 8}, "plain")}
    n = 16 * cfg["n_train"]
    assert rule_gain(cfg, n) > 0.05
    real = scaling.factor

    def mistaken(variant, n, d_head, n_train, s=None, xp=np, *, training=False):
        # the planted mistake: the ln n factor dropped (ln n / ln n_train replaced by 1)
        return real(variant, n_train * xp.ones_like(n), d_head, n_train, s, xp, training=training)

    monkeypatch.setattr(R, "factor", mistaken)
    assert rule_gain(cfg, n) < 0.05  # the comparison no longer shows the rule's gain
