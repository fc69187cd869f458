"""The observable registry (docs/pipeline.md#the-observable-registry) and the attention entropy,
its fourth observable (docs/paper-a.md#the-attention-entropy): the simplex closed form and every
kernel's per-row accumulator against the entropy of the n x n attention matrix, by definition."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from attnscale.layer import theory, tokens
from attnscale.layer.dense.attention import angle_ratio_grid
from attnscale.layer.observables import (
    REGISTRY,
    critical_level,
    get,
    grid_observables,
    simplex_entropy,
)
from attnscale.layer.sampled.observables import observables_sampled

SEED = 20261203


def entropy_by_definition(X, betas, causal=False):
    """Mean over rows of ``-sum_j A_ij ln A_ij / ln n`` from the explicit attention matrix."""
    n = X.shape[0]
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    out = []
    for b in betas:
        S = b * (Y @ Y.T)
        if causal:
            S = np.where(np.tril(np.ones((n, n), dtype=bool)), S, -np.inf)
        S = S - S.max(axis=1, keepdims=True)
        A = np.exp(S)
        A /= A.sum(axis=1, keepdims=True)
        logA = np.log(np.where(A > 0, A, 1.0))
        out.append(-(A * logA).sum(axis=1).mean() / np.log(n))
    return np.array(out)


@pytest.mark.parametrize(
    "n, rho, beta", [(2, 0.3, 0.0), (7, 0.5, 3.0), (200, 0.2, 10.0), (50, 0.9, 200.0)]
)
def test_simplex_entropy_is_the_entropy_of_the_simplex_attention_matrix(n, rho, beta):
    X = np.linalg.cholesky((1 - rho) * np.eye(n) + rho)  # rows: unit vectors, cosines rho
    want = entropy_by_definition(X, [beta])[0]
    assert simplex_entropy(n, rho, beta) == pytest.approx(want, rel=1e-9, abs=1e-15)


def test_simplex_entropy_tends_to_one_minus_the_self_weight_limit():
    """H / ln n -> 1 / 1/2 / 0 below / at / above gamma_c; at gamma_c the gap is ln 2 / ln n."""
    rho, n = 0.5, 10**12
    gc = theory.gamma_c(rho)
    for g in (0.5 * gc, gc, 2.0 * gc):
        got = simplex_entropy(n, rho, g * np.log(n))
        assert got == pytest.approx(get("entropy").limit(rho, g, 2), abs=0.04)
    assert simplex_entropy(n, rho, gc * np.log(n)) == pytest.approx(
        0.5 + np.log(2) / np.log(n), rel=1e-6
    )


def test_dense_kernel_accumulates_the_entropy_in_its_pass():
    X = tokens.near_simplex(150, 10, 0.5, np.random.default_rng(SEED))
    betas = np.array([0.0, 1.0, 5.0, 40.0, 400.0])
    want = entropy_by_definition(X, betas)
    for block_rows in (None, 32):
        lam, diag = angle_ratio_grid(
            X,
            betas,
            0.3,
            return_diagnostics=True,
            observables=[get("entropy")],
            block_rows=block_rows,
        )
        np.testing.assert_allclose(diag["observables"]["entropy"], want, rtol=1e-12, atol=1e-14)
        same = angle_ratio_grid(X, betas, 0.3, block_rows=block_rows)
        assert np.array_equal(lam, same)  # lambda unchanged


def test_dense_kernel_entropy_with_near_pairs():
    """d = 2: many near-coincident pairs, handled outside the GEMM for lambda; the entropy's
    accumulator is untouched by them."""
    X = np.random.default_rng(SEED).standard_normal((300, 2))
    betas = np.array([1.0, 30.0])
    lam, diag = angle_ratio_grid(X, betas, return_diagnostics=True, observables=[get("entropy")])
    assert diag["n_near_pairs"] > 0
    np.testing.assert_allclose(
        diag["observables"]["entropy"], entropy_by_definition(X, betas), rtol=1e-11
    )
    assert np.array_equal(lam, angle_ratio_grid(X, betas))


@pytest.mark.parametrize("causal", [False, True])
def test_sampled_pass_accumulates_the_entropy(causal):
    X = tokens.near_simplex(120, 8, 0.5, np.random.default_rng(SEED))
    betas = np.array([0.0, 2.0, 7.0, 60.0])
    want = entropy_by_definition(X, betas, causal)
    full = observables_sampled(X, betas, rows=np.arange(120), route="exact", causal=causal)
    est, se = full.means["entropy"]
    np.testing.assert_allclose(est, want, rtol=1e-12, atol=1e-14)
    assert np.all(se == 0)
    part = observables_sampled(X, betas, rows=40, rng=np.random.default_rng(1), causal=causal)
    est, se = part.means["entropy"]
    assert np.all(np.abs(est - want) <= 5 * se + 1e-12)


def test_registry_declares_each_observable_once():
    for name, o in REGISTRY.items():
        assert o.name == name and o.columns == (name, f"{name}_se_within")
        rho = 0.4
        gc = theory.gamma_c(rho)
        lo, hi = o.limits(rho, 16)
        # the normalised step rises from 0 to 1; the critical level lies strictly between
        assert o.step(np.array(lo)) == pytest.approx(0.0) and 0.0 < o.critical(rho) < 1.0
        if name != "eta":  # eta's step is normalised by its limit above, of 1 - 1/d
            assert o.step(np.array(hi)) == pytest.approx(1.0)
            assert o.step(np.array(o.limit(rho, gc, 16))) == pytest.approx(o.critical(rho))
        assert critical_level(name, rho) == o.critical(rho)
    assert critical_level("lambda", 0.4) == 1.0 / (1.0 + 3.0 * 0.4)
    assert [o.name for o in grid_observables()] == ["entropy"]
    with pytest.raises(ValueError, match="observable must be one of"):
        get("entropies")


def test_no_branch_on_an_observable_name_outside_the_registry():
    """The issue's check: ``(obs|observable|quantity|name) == "<observable>"`` only in the registry."""
    src = Path(__file__).resolve().parents[1] / "src"
    pat = re.compile(
        r'(obs|observable|quantity|name)\s*==\s*"(lambda|eta|self_weight|a_ii|entropy)"'
    )
    hits = [
        f"{p.relative_to(src)}:{k}"
        for p in src.rglob("*.py")
        if p.name != "observables.py" or p.parent.name != "layer"
        for k, line in enumerate(p.read_text().splitlines(), 1)
        if pat.search(line)
    ]
    assert hits == []


def test_a_route_without_the_accumulator_says_so_and_gives_nan():
    X = tokens.near_simplex(40, 6, 0.5, np.random.default_rng(SEED))
    betas = np.array([1.0, 5.0])
    with pytest.warns(UserWarning, match="no accumulator on this route"):
        lam, diag = angle_ratio_grid(
            X, betas, return_diagnostics=True, causal=True, observables=[get("entropy")]
        )
    assert np.isnan(diag["observables"]["entropy"]).all()
    assert np.array_equal(lam, angle_ratio_grid(X, betas, causal=True))
