"""Tokens (docs/paper-a.md) and seeding (docs/pipeline.md#reproducibility)."""

import numpy as np
import pytest

from attnscale.core import seeding
from attnscale.layer import tokens


def test_simplex_exact_gram():
    for n, rho, q in [(5, 0.3, 1.0), (64, 0.8, 2.5), (200, 0.05, 0.7)]:
        X = tokens.simplex_exact(n, rho, q)
        G = X @ X.T
        expected = q * ((1 - rho) * np.eye(n) + rho)
        np.testing.assert_allclose(G, expected, atol=1e-12 * q * n)
        assert tokens.mean_cosine(X) == pytest.approx(rho, abs=1e-12)
        assert tokens.mean_sq_norm(X) == pytest.approx(q, rel=1e-12)


def test_mean_cosine_matches_pairwise_mean():
    X = tokens.near_simplex(40, 7, 0.4, np.random.default_rng(3))
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    G = Y @ Y.T
    brute = (G.sum() - np.trace(G)) / (40 * 39)
    assert tokens.mean_cosine(X) == pytest.approx(brute, abs=1e-13)


def test_near_simplex_moments():
    """E||x||^2 = 1 and E<x_i, x_j> = rho (docs/paper-a.md#gaussian-near-simplex-tokens), checked over many independent draws.

    Each draw's mean inner product is dominated by the shared z_0 term, so the statistics use
    one value per draw; tolerances are 4 standard errors of the draw-to-draw spread."""
    n, d, rho, draws = 20, 16, 0.6, 400
    sq, inner = [], []
    for k in range(draws):
        X = tokens.near_simplex(n, d, rho, np.random.default_rng(k))
        G = X @ X.T
        sq.append(np.mean(np.diag(G)))
        inner.append((G.sum() - np.trace(G)) / (n * (n - 1)))
    sq, inner = np.array(sq), np.array(inner)
    se_sq = sq.std(ddof=1) / np.sqrt(draws)
    se_in = inner.std(ddof=1) / np.sqrt(draws)
    assert abs(sq.mean() - 1.0) < 4 * se_sq
    assert abs(inner.mean() - rho) < 4 * se_in


def test_common_random_numbers_across_rho():
    a = tokens.near_simplex(10, 4, 0.2, np.random.default_rng(7))
    b = tokens.near_simplex(10, 4, 0.7, np.random.default_rng(7))
    # x = sqrt(rho) z0 + sqrt(1 - rho) z: recover z from both and compare
    za = (a - a.mean(0)) / np.sqrt(0.8)
    zb = (b - b.mean(0)) / np.sqrt(0.3)
    np.testing.assert_allclose(za, zb, atol=1e-12)


@pytest.mark.parametrize(
    "args, match",
    [
        ((1, 4, 0.5), "n must be >= 2"),
        ((10, 0, 0.5), "d must be >= 1"),
        ((10, 4, 0.0), r"rho must lie in \(0, 1\)"),
        ((10, 4, 1.0), r"rho must lie in \(0, 1\)"),
        ((10, 4, float("nan")), "rho must be finite"),
        ((10.5, 4, 0.5), "n must be an integer"),
    ],
)
def test_near_simplex_rejects_bad_input(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        tokens.near_simplex(*args, np.random.default_rng(0))


def test_near_simplex_requires_generator():
    with pytest.raises(TypeError, match="rng"):
        tokens.near_simplex(4, 2, 0.5, 0)


def test_spawn_key_equals_spawn_tree():
    """SeedSequence(root, spawn_key=(a, b)) is the b-th child of the a-th child of root."""
    root = 2**100 + 12345
    a, b = 3, 5
    direct = np.random.SeedSequence(root, spawn_key=(a, b)).generate_state(4)
    tree = np.random.SeedSequence(root).spawn(a + 1)[a].spawn(b + 1)[b].generate_state(4)
    np.testing.assert_array_equal(direct, tree)


def test_job_rng_depends_only_on_identity():
    root = 271828182845904523536028747135266249775
    k1 = seeding.spawn_key("paper_a/tokens", 64, 16, 0)
    k2 = seeding.spawn_key("paper_a/tokens", 64, 16, 1)
    x1 = seeding.job_rng(root, k1).standard_normal(5)
    seeding.job_rng(root, k2).standard_normal(100)  # another job in between changes nothing
    np.testing.assert_array_equal(x1, seeding.job_rng(root, k1).standard_normal(5))
    assert not np.array_equal(x1, seeding.job_rng(root, k2).standard_normal(5))
    assert seeding.stable_id("paper_a/tokens") == seeding.stable_id("paper_a/tokens")
    assert seeding.value_id(0.05) == 50000


@pytest.mark.parametrize("bad", [-1, 2**128, 1.5, "7", True])
def test_job_rng_rejects_bad_seed(bad):
    with pytest.raises((ValueError, TypeError), match="root_seed"):
        seeding.job_rng(bad, (1,))
