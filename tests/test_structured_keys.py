"""Samplers of :mod:`attnscale.sphere.structured_keys` against exact laws
(docs/paper-b-beyond.md#keys-on-a-submanifold, docs/paper-b-beyond.md#rope-like-keys).

Statistical checks use fixed seeds and tolerances from the statistics: Kolmogorov-Smirnov
distances below the 0.1% critical value ``1.949 / sqrt(N)`` (two-sample: ``1.949 sqrt(1/N + 1/M)``),
means within 4 standard errors. Each law test has a negative control showing the check can fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from attnscale.sphere import structured_keys as sk

KS_C = 1.949  # Kolmogorov distribution: P(sqrt(N) D_N > 1.949) = 0.001


def rng(*ids):
    return np.random.default_rng(np.random.SeedSequence(20261130, spawn_key=ids))


def beta_cdf(k):
    """Exact D2Q law of keys uniform on S^{k-1} through q: T/2 ~ Beta((k-1)/2, (k-1)/2)."""
    a = (k - 1) / 2
    return lambda t: stats.beta.cdf(np.asarray(t) / 2, a, a)


def ks(x, cdf) -> float:
    return stats.kstest(x, cdf).statistic


# --------------------------------------------------------------------------- sub-sphere
@pytest.mark.parametrize("d,k", [(7, 3), (7, 5), (4, 4)])
def test_subsphere_keys_have_the_intrinsic_beta_law(d, k):
    q = np.ones(d) / np.sqrt(d)
    X = sk.sample_subsphere(20_000, q, k, rng(1, d, k))
    assert X.shape == (20_000, d)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-12)
    sv = np.linalg.svd(X, compute_uv=False)
    assert np.sum(sv > 1e-8 * sv[0]) == k  # the keys span a k-dimensional subspace ...
    P = np.linalg.lstsq(X.T, q, rcond=None)  # ... that contains q
    assert np.linalg.norm(X.T @ P[0] - q) < 1e-8
    T = 1.0 - X @ q
    crit = KS_C / np.sqrt(T.size)
    assert ks(T, beta_cdf(k)) < crit
    if k < d:  # negative control: the ambient law S^{d-1} is rejected
        assert ks(T, beta_cdf(d)) > crit


def test_subsphere_frame_is_orthonormal_and_starts_at_q():
    q = np.array([0.6, 0.0, 0.8, 0.0, 0.0])
    F = sk.subsphere_frame(q, 3, rng(2))
    np.testing.assert_allclose(F @ F.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(F[0], q, atol=1e-12)


@pytest.mark.parametrize("d,k,word", [(5, 6, "k"), (5, 1, "k"), (1, 1, "d")])
def test_subsphere_bad_dimensions_name_the_argument(d, k, word):
    with pytest.raises(ValueError, match=rf"\b{word}\b"):
        sk.check_subsphere(d, k)


def test_subsphere_rejects_k_above_d_and_non_unit_q():
    with pytest.raises(ValueError, match=r"k \(dimension of the sub-space\)"):
        sk.sample_subsphere(10, np.eye(4)[0], 5, rng(3))
    with pytest.raises(ValueError, match="q must be a unit vector"):
        sk.sample_subsphere(10, np.ones(4), 2, rng(3))


# --------------------------------------------------------------------------- cap sampler
@pytest.mark.parametrize("k,t_c", [(3, 0.3), (10, 0.4), (2, 0.05), (5, 1.5)])
def test_cap_sampler_matches_the_truncated_law_and_binomial_counts(k, t_c):
    size, n = 400, 500
    T, owner, counts = sk.sample_d2q_cap(size, n, k, t_c, rng(4, k))
    p = float(sk.d2q_cdf(t_c, k))
    assert np.all(T <= t_c) and np.all(np.diff(owner) >= 0)
    np.testing.assert_array_equal(np.bincount(owner, minlength=size), counts)
    # counts ~ Binomial(n, p): mean within 4 SE
    se = np.sqrt(n * p * (1 - p) / size)
    assert abs(counts.mean() - n * p) < 4 * se
    # values ~ F restricted to the cap (i.i.d. given the counts)
    cdf = lambda t: sk.d2q_cdf(t, k) / p  # noqa: E731
    assert ks(T, cdf) < KS_C / np.sqrt(T.size)
    # negative control: a cap twice as large is rejected
    cdf2 = lambda t: sk.d2q_cdf(t, k) / float(sk.d2q_cdf(min(2.0, 2 * t_c), k))  # noqa: E731
    assert ks(T, cdf2) > KS_C / np.sqrt(T.size)


def test_cap_sampler_nearest_key_has_the_exact_minimum_law():
    """P(min T > t) = (1 - F(t))^n whenever the cap holds the nearest key (t_c large enough)."""
    k, n, size = 6, 10_000, 3000
    T, owner, counts = sk.sample_d2q_cap(size, n, k, 0.2, rng(5))
    assert counts.min() > 0
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    tmin = np.minimum.reduceat(T, starts)
    exact = lambda t: 1.0 - (1.0 - sk.d2q_cdf(t, k)) ** n  # noqa: E731
    assert ks(tmin, exact) < KS_C / np.sqrt(size)
    assert ks(tmin, lambda t: 1.0 - (1.0 - sk.d2q_cdf(t, k)) ** (2 * n)) > KS_C / np.sqrt(size)


def test_cap_sampler_bad_input():
    with pytest.raises(ValueError, match="t_c"):
        sk.sample_d2q_cap(2, 10, 3, 0.0, rng(6))
    with pytest.raises(ValueError, match="k must be >= 2"):
        sk.sample_d2q_cap(2, 10, 1, 0.5, rng(6))


# --------------------------------------------------------------------------- RoPE
def rotation_matrix(m, d, base):
    """Explicit block-diagonal RoPE rotation R_m (brute force)."""
    R = np.zeros((d, d))
    for ell in range(d // 2):
        a = m * base ** (-2.0 * ell / d)
        R[2 * ell : 2 * ell + 2, 2 * ell : 2 * ell + 2] = [
            [np.cos(a), -np.sin(a)],
            [np.sin(a), np.cos(a)],
        ]
    return R


def test_rope_frequencies_and_rotation_against_explicit_matrices():
    d, base = 8, 10000.0
    th = sk.rope_frequencies(d, base)
    np.testing.assert_allclose(th, [1.0, 0.1, 0.01, 0.001], rtol=1e-14)
    X = rng(7).standard_normal((5, d))
    m = np.array([0, 1, 7, 1000, -3])
    got = sk.rope_rotate(X, m, base)
    want = np.stack([rotation_matrix(mi, d, base) @ x for mi, x in zip(m, X, strict=True)])
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), np.linalg.norm(X, axis=1), rtol=1e-13)
    # group law R_a R_b = R_{a+b}
    two = sk.rope_rotate(sk.rope_rotate(X, [3] * 5, base), [4] * 5, base)
    np.testing.assert_allclose(two, sk.rope_rotate(X, [7] * 5, base), atol=1e-12)


@pytest.mark.parametrize(
    "d,base,word",
    [
        (8, 1.0, "base"),
        (8, 0.5, "base"),
        (8, float("nan"), "base"),
        (8, float("inf"), "base"),
        (7, 10000.0, "d must be even"),
        (0, 10000.0, "d"),
    ],
)
def test_rope_bad_parameters_name_the_argument(d, base, word):
    with pytest.raises(ValueError, match=word):
        sk.rope_frequencies(d, base)


def test_rope_repeated_key_equals_explicit_rotation_and_keeps_the_uniform_law():
    d, n, base = 8, 50, 500.0
    C = rng(8).standard_normal((4000, d))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    T = sk.rope_repeated_d2q(C, n, base, block=16)  # several position blocks
    q = sk.rope_query(d)
    for i in (0, 1, 3999):
        want = 1.0 - sk.rope_rotate(np.repeat(C[i : i + 1], n, 0), np.arange(n), base) @ q
        np.testing.assert_allclose(T[i], want, atol=1e-12)
    # each rotated key R_m x of a uniform x is uniform: exact Beta law at a fixed position
    crit = KS_C / np.sqrt(C.shape[0])
    assert ks(T[:, 37], beta_cdf(d)) < crit
    assert ks(T[:, 37], beta_cdf(d + 4)) > crit  # negative control


def test_rope_query_is_a_unit_vector_with_equal_weight_per_plane():
    q = sk.rope_query(16)
    assert np.isclose(np.linalg.norm(q), 1.0)
    np.testing.assert_allclose(np.hypot(q[0::2], q[1::2]), np.sqrt(2 / 16))


def vmf_cosine_cdf(d, kappa):
    """CDF of w = <mu, x>, density ∝ e^{kappa w} (1 - w^2)^{(d-3)/2}, by quadrature."""
    f = lambda w: np.exp(kappa * (w - 1)) * (1 - w * w) ** ((d - 3) / 2)  # noqa: E731
    Z = integrate.quad(f, -1, 1, epsabs=0, epsrel=1e-12)[0]
    grid = np.linspace(-1, 1, 4001)
    vals = np.concatenate(
        [
            [0.0],
            np.cumsum(
                [
                    integrate.quad(f, a, b, epsrel=1e-12)[0]
                    for a, b in zip(grid[:-1], grid[1:], strict=True)
                ]
            ),
        ]
    )
    return lambda w: np.interp(w, grid, vals / Z)


@pytest.mark.parametrize("d,kappa", [(8, 32.0), (5, 2.0), (16, 0.0)])
def test_vmf_cosine_law_and_mean(d, kappa):
    w = sk.sample_vmf_cosine(20_000, d, kappa, rng(9, d))
    crit = KS_C / np.sqrt(w.size)
    assert ks(w, vmf_cosine_cdf(d, kappa)) < crit
    assert ks(w, vmf_cosine_cdf(d, kappa + 4.0)) > crit  # negative control
    # E w = I_{d/2}(kappa) / I_{d/2-1}(kappa) (0 at kappa = 0), within 4 SE
    mean = 0.0 if kappa == 0 else special.ive(d / 2, kappa) / special.ive(d / 2 - 1, kappa)
    assert abs(w.mean() - mean) < 4 * w.std() / np.sqrt(w.size)


def test_rope_vmf_d2q_matches_brute_force_keys():
    """The exact-in-law score formula against explicit vMF keys rotated by explicit matrices."""
    d, n, kappa, base, size = 8, 6, 12.0, 10000.0, 3000
    r = rng(10)
    mu = np.tile(r.standard_normal(d), (size, 1))  # one mean direction: a sharp law per position
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    T = sk.rope_vmf_d2q(mu, kappa, n, r, base)
    # brute force: x = w mu + sqrt(1 - w^2) v, v uniform on the unit sphere of mu-perp
    w = sk.sample_vmf_cosine((size, n), d, kappa, r)
    V = r.standard_normal((size, n, d))
    V -= np.einsum("snd,sd->sn", V, mu)[..., None] * mu[:, None, :]
    V /= np.linalg.norm(V, axis=2, keepdims=True)
    X = w[..., None] * mu[:, None, :] + np.sqrt(1 - w * w)[..., None] * V
    q = sk.rope_query(d)
    Tb = np.stack([1.0 - sk.rope_rotate(X[:, m], np.full(size, m), base) @ q for m in range(n)], 1)
    crit = KS_C * np.sqrt(2.0 / size)
    for m in (0, 5):
        assert stats.ks_2samp(T[:, m], Tb[:, m]).statistic < crit
    # negative control: another concentration is rejected
    Tc = sk.rope_vmf_d2q(mu, 3.0, n, r, base)
    assert stats.ks_2samp(Tc[:, 5], Tb[:, 5]).statistic > crit


def test_rope_vmf_limits_uniform_and_repeated():
    d, n, size = 16, 40, 3000
    mu = rng(11).standard_normal((size, d))
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    T0 = sk.rope_vmf_d2q(mu, 0.0, n, rng(12))  # kappa = 0: uniform keys, RoPE changes nothing
    crit = KS_C / np.sqrt(size)
    assert ks(T0[:, 11], beta_cdf(d)) < crit
    assert ks(T0[:, 11], beta_cdf(d - 4)) > crit
    np.testing.assert_array_equal(
        sk.rope_vmf_d2q(mu, np.inf, n, rng(13)), sk.rope_repeated_d2q(mu, n)
    )


@pytest.mark.parametrize("kappa", [-1.0, float("nan")])
def test_bad_kappa_names_kappa(kappa):
    with pytest.raises(ValueError, match="kappa"):
        sk.check_kappa(kappa)


def test_rope_orbit_dimension():
    assert [sk.rope_orbit_dimension(d, 10000.0) for d in (8, 16, 32, 64, 128)] == [1, 2, 4, 8, 16]
    assert sk.rope_orbit_dimension(8, 2.0**20) == 1  # 2^{-40/8 l}: theta_l = 2^{-5 l}
    assert sk.rope_orbit_dimension(8, 12.0) is None  # 12 = 2^2 3 is not c^g with c square-free
    assert sk.rope_orbit_dimension(8, 10.5) is None


def test_rope_orbit_dimension_one_is_a_closed_curve():
    """d = 8, base 10^4: theta_l = 10^{-l}, so R_{m + 2000 pi} = R_m: the keys of one repeated
    content key lie on one closed curve (r = 1), while d = 16 has no such period."""
    x = np.array([[0.3, 0.1, -0.5, 0.2, 0.4, -0.3, 0.5, 0.3]])
    x /= np.linalg.norm(x)
    P = 2000 * np.pi  # the period of the curve t -> R_t x
    m = 12345
    k1 = sk.rope_rotate(x, [m])
    k2 = sk.rope_rotate(x, [m + P])
    np.testing.assert_allclose(k1, k2, atol=1e-9)
    y = np.tile(x, 2) / np.sqrt(2)  # d = 16: theta_1 = 10^{-1/2} breaks the period
    assert np.linalg.norm(sk.rope_rotate(y, [m]) - sk.rope_rotate(y, [m + P])) > 0.1
