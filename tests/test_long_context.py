"""Paper A's pipeline at long contexts (docs/long-context.md#the-pipeline-at-long-contexts): the
rows choice of the lambda, eta and theorem-table entries, the two parts of a cell's SE, the
common component of norm 1 and what it does to the draw-to-draw spread, token draws made in
place (the same numbers) and draws made inside the job instead of cached (the same numbers)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnscale.core.seeding import job_rng
from attnscale.experiments import paper_a as pa
from attnscale.experiments import paper_a_eta as pe
from attnscale.experiments import paper_a_theorem as pth
from attnscale.experiments import paper_a_tokens as ptok
from attnscale.experiments.summaries import se_components
from attnscale.layer import tokens
from attnscale.layer.dense import attention
from attnscale.layer.sampled import angle_ratio as sampled_lambda
from attnscale.layer.sampled import eta as sampled_eta
from attnscale.layer.sampled import stats as sampled_stats
from attnscale.layer.sampled.rows import row_sample

SEED = 20261201


def draws(n, d, trials=2):
    return [ptok.draw_tokens(n=n, d=d, trial=t, root_seed=SEED) for t in range(trials)]


# --------------------------------------------------------------------------- token draws
def test_draws_in_place_are_the_same_numbers(monkeypatch):
    """gaussian_draw scales in place, from_draw builds X without temporaries (also over Z), and
    mean_cosine forms its normalised rows in chunks beyond COSINE_CHUNK rows: every number equals
    the formula written with temporaries, to the bit (d = 2, 32; rho = 0, 0.3)."""
    for n, d in ((1000, 2), (700, 32)):
        rng = np.random.default_rng(5)
        z0, Z = tokens.gaussian_draw(n, d, np.random.default_rng(5))
        scale = 1.0 / np.sqrt(d)
        assert np.array_equal(z0, rng.standard_normal(d) * scale)
        assert np.array_equal(Z, rng.standard_normal((n, d)) * scale)
        for rho in (0.0, 0.3):
            want = Z.copy() if rho == 0.0 else np.sqrt(rho) * z0[None, :] + np.sqrt(1 - rho) * Z
            assert np.array_equal(tokens.from_draw(z0, Z, rho), want)
            assert np.array_equal(tokens.from_draw(z0, Z.copy(), rho, out=Z.copy()), want)
            Y = want / np.linalg.norm(want, axis=1, keepdims=True)
            s = Y.sum(axis=0)
            ref = float((s @ s - n) / (n * (n - 1)))
            monkeypatch.setattr(tokens, "COSINE_CHUNK", 64)
            assert tokens.mean_cosine(want) == ref
            monkeypatch.undo()
    with pytest.raises(ValueError, match="out must be a float64 array"):
        tokens.from_draw(z0, Z, 0.3, out=np.empty((3, 3)))


def test_regenerated_draws_equal_the_cached_ones():
    """Without input draws (n >= paper_a.regenerate_n) the entries make the draws from their
    seeds, one at a time: the same tables as from the cached draws (lambda dense and sampled,
    eta sampled, theorem rows sampled, the last built in place over each draw)."""
    n, d, cached = 256, 8, draws(256, 8)
    regen = {"draws": [], "n": n, "d": d, "trials": 2, "root_seed": SEED}
    for rows in ("all", 40):
        kw = {"rhos": [0.3, 0.6], "gammas": [1.0, 3.0], "alpha": 0.0, "rows": rows}
        pd.testing.assert_frame_equal(
            pa.lambda_rows(draws=cached, n=n, d=d, **kw), pa.lambda_rows(**regen, **kw)
        )
    kw = {
        "rhos": [0.5],
        "gammas": [1.0, 3.0],
        "alpha": 0.0,
        "method": "auto",
        "probes": 2,
        "probe_kind": "rademacher",
        "rows": 40,
    }
    pd.testing.assert_frame_equal(
        pe.eta_rows(draws=cached, n=n, d=d, root_seed=SEED, **kw), pe.eta_rows(**regen, **kw)
    )
    kw = {"rho": 0.5, "gamma_factors": [1.0], "alphas": [0.0], "rows": 40, "z0": "fixed_norm"}
    pd.testing.assert_frame_equal(
        pth.theory_rows_all(draws=cached, n=n, d=d, **kw), pth.theory_rows_all(**regen, **kw)
    )
    seq = ptok.job_draws([], n=n, d=d, trials=2, root_seed=SEED)
    assert len(seq) == 2 and np.array_equal(seq[1]["Z"], cached[1]["Z"])
    with pytest.raises(ValueError, match="at least one token draw"):
        ptok.job_draws([], n=n, d=d)


def test_fixed_norm_common_component():
    """z0="fixed_norm" rescales z_0 to norm 1, keeps its direction and every z_i."""
    draw = draws(64, 16, 1)[0]
    tok = ptok.tokens_at(draw, 0.4, z0="fixed_norm")
    u = draw["z0"] / np.linalg.norm(draw["z0"])
    assert np.allclose(tok["X"], np.sqrt(0.4) * u + np.sqrt(0.6) * draw["Z"], rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="z0 must be one of"):
        ptok.tokens_at(draw, 0.4, z0="unit")


def test_fixed_norm_removes_most_of_the_draw_to_draw_spread():
    """At the transition (rho = 0.5, gamma = gamma_c = 2; n = 512, d = 128) the draw-to-draw
    variance of lambda over 16 draws is more than 16 times smaller with ||z_0|| = 1 than with the
    Gaussian z_0 (the ratio measured 78, 104 and 256 with three root seeds; docs/long-context.md
    has it at larger n). With 16 draws per mode the observed ratio is the true one times an
    F(15, 15) variate, which is above 0.29 with probability 0.99: a true ratio of 78 shows above
    22 with probability 0.99."""
    beta = 2.0 * np.log(512)
    lam = {}
    for mode in ptok.Z0_MODES:
        lam[mode] = np.array(
            [
                attention.angle_ratio_grid(ptok.tokens_at(dr, 0.5, z0=mode)["X"], [beta])[0]
                for dr in draws(512, 128, 16)
            ]
        )
    ratio = lam["gaussian"].var(ddof=1) / lam["fixed_norm"].var(ddof=1)
    assert ratio > 16.0, ratio


# --------------------------------------------------------------------------- the rows choice
def test_sampled_lambda_rows_are_the_library_estimator_with_the_documented_key():
    """rows = m: each draw's lambda is angle_ratio_sampled with the rows drawn from the job's
    generator under key rows_key("paper_a/lambda_rows", n, d, trial), the same rows for every
    rho (common random numbers); the within-draw SE and m are columns, the row generator's key
    the provenance."""
    n, d = 300, 16
    dr = draws(n, d)
    df = pa.lambda_rows(
        draws=dr, rhos=[0.2, 0.7], gammas=[1.0, 2.5], alpha=0.5, rows=50, z0="fixed_norm"
    )
    assert list(df.columns[df.columns.get_loc("lambda") :][:3]) == [
        "lambda",
        "lambda_se_within",
        "rows",
    ]
    for (rho, trial), g in df.groupby(["rho", "trial"]):
        tok = ptok.tokens_at(dr[trial], rho, z0="fixed_norm")
        key = pa.rows_key(pa.ROWS_STREAM, n, d, trial)
        ref = sampled_lambda.angle_ratio_sampled(
            tok["X"], g["beta"].to_numpy(), 0.5, rows=50, rng=job_rng(SEED, key)
        )
        assert np.array_equal(g["lambda"].to_numpy(), ref.estimate)
        assert np.array_equal(g["lambda_se_within"].to_numpy(), ref.se)
        assert (g["rows"] == 50).all() and (g["spawn_key"] == "-".join(map(str, key))).all()
    with pytest.raises(ValueError, match="rows must be 'all' or an integer m with 2 <= m < n"):
        pa.lambda_rows(draws=dr, rhos=[0.2], gammas=[1.0], alpha=0.0, rows=n)


def test_cell_se_has_a_within_and_a_between_part():
    """Figure 1's cell from sampled rows: lambda_se is the SE over draws (it holds both parts),
    lambda_se_within = sqrt(sum_t s_t^2) / T and lambda_se_between = sqrt(max(se^2 - within^2,
    0)), by hand; Figure 2 the same for eta; the dense tables have none of these columns."""
    dr = draws(200, 8, 3)
    rows = pa.lambda_rows(draws=dr, rhos=[0.5], gammas=[1.0, 4.0], alpha=0.0, rows=30)
    fig = pa.lambda_summary(csvs=[rows])["figure1"]
    for gamma, g in rows[rows["gamma_kind"] == "grid"].groupby("gamma"):
        cell = fig[fig["gamma"] == gamma].iloc[0]
        se = g["lambda"].std(ddof=1) / np.sqrt(3)
        within = np.sqrt(np.sum(g["lambda_se_within"] ** 2)) / 3
        assert cell["lambda_se"] == pytest.approx(se, rel=1e-12)
        assert cell["lambda_se_within"] == pytest.approx(within, rel=1e-12)
        assert cell["lambda_se_between"] == pytest.approx(
            np.sqrt(max(se**2 - within**2, 0)), rel=1e-9, abs=1e-15
        )
    assert list(fig.columns[5:10]) == [
        "lambda_mean",
        "lambda_se",
        "lambda_se_within",
        "lambda_se_between",
        "rows",
    ]
    dense = pa.lambda_summary(csvs=[pa.lambda_rows(draws=dr, rhos=[0.5], gammas=[1.0], alpha=0.0)])[
        "figure1"
    ]
    assert not {"rows", "lambda_se_within", "lambda_se_between"} & set(dense.columns)
    eta = pe.eta_rows(
        draws=dr,
        rhos=[0.5],
        gammas=[1.0, 4.0],
        alpha=0.0,
        method="auto",
        probes=2,
        probe_kind="rademacher",
        root_seed=SEED,
        rows=30,
    )
    assert (eta["method"] == "sampled").all() and (eta["rows"] == 30).all()
    fig2 = pe.eta_summary(csvs=[eta])["figure2"]
    grid = eta[eta["gamma_kind"] == "grid"]
    parts = se_components(grid.groupby(pa.CELL_KEYS), "eta", "eta_se_within")
    np.testing.assert_allclose(fig2["eta_se_within"], parts["eta_se_within"], rtol=1e-15)
    np.testing.assert_allclose(
        fig2["eta_se_within"],
        grid.groupby("gamma")["eta_se_within"]
        .apply(lambda s: np.sqrt(np.sum(s**2)) / 3)
        .to_numpy(),
        rtol=1e-12,
    )


def test_theorem_quantities_from_sampled_rows():
    """layer_statistics_sampled with every row gives the dense self-weight, output cosine and
    lambda to 1e-12 (SE 0) and the sampled eta of the same rows and probes exactly; the theorem
    rows from sampled rows carry the within-draw SEs, and the table splits sim_se in two."""
    X = tokens.near_simplex(120, 12, 0.5, np.random.default_rng(2))
    betas, alphas = np.array([0.5, 4.0, 15.0]), np.array([0.0, 0.5])
    out = sampled_stats.layer_statistics_sampled(
        X, betas, alphas, rows=np.arange(120), rng=np.random.default_rng(9)
    )
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    for k, beta in enumerate(betas):
        A = attention.softmax_rows(beta * (Y @ Y.T))
        for ia, alpha in enumerate(alphas):
            assert out["self_weight"][ia, k] == pytest.approx(np.mean(np.diag(A)), abs=1e-12)
            assert out["cosine"][ia, k] == pytest.approx(
                tokens.mean_cosine(A @ Y + alpha * X), abs=1e-12
            )
            lam = attention.angle_ratio_grid(X, [beta], alpha)[0]
            assert out["lambda"][ia, k] == pytest.approx(lam, abs=1e-12)
            eta = sampled_eta.eta_sampled(
                X, [beta], alpha, rows=row_sample(120, np.arange(120)), rng=np.random.default_rng(9)
            )
            assert out["eta"][ia, k] == pytest.approx(eta.estimate[0], rel=1e-13)
    assert np.all(out["lambda_se"] == 0) and np.all(out["cosine_se"] == 0)
    rows = pth.theory_rows_all(
        draws=draws(300, 16, 3),
        rho=0.5,
        gamma_factors=[1.0],
        alphas=[0.0, 0.5],
        rows=60,
        z0="fixed_norm",
    )
    table = pth.theorem_table(rows)
    for _, rec in table.iterrows():
        g = rows[rows["alpha"] == rec["alpha"]]
        within = np.sqrt(np.sum(g[f"{rec['quantity']}_se_within"] ** 2)) / 3
        assert rec["sim_se_within"] == pytest.approx(within, rel=1e-12)
        assert rec["rows"] == 60
    key = pa.rows_key(pth.ROWS_STREAM, 300, 16, 2)
    assert (rows["rows"] == 60).all()
    assert rows.loc[rows["trial"] == 2, "spawn_key"].eq("-".join(map(str, key))).all()


# --------------------------------------------------------------------------- the configuration
@pytest.mark.workflow
def test_long_context_configuration_dry_runs(tmp_path):
    """``snakemake -n --configfile config/long-context.yaml`` builds the whole DAG on the numpy
    backend: Figures 1 and 2 at n = 32768 for d = 512, 128, 32 on the full grid with >= 2 draws
    and sampled rows, the theorem table at n = 131072 whose draws are made in its jobs (no token
    job at that n: only Figure 1's and the finite-size panel's draws are cached), and the
    explorer shows Figure 1's table."""
    import yaml

    from attnscale.bench.long_context import load_overlay
    from conftest import REPO, copy_repo, hermetic_env, jobs_to_run
    from warm_snakemake import snakemake

    work = copy_repo(tmp_path / "repo")
    proc = snakemake(  # from the warm Snakemake process: tests/warm_snakemake.py
        work,
        *("-n", "--quiet", "rules", "--configfile", "config/long-context.yaml"),
        env=hermetic_env(work),
    )
    jobs = jobs_to_run(proc.stdout)
    over = yaml.safe_load((REPO / "config/long-context.yaml").read_text())
    assert "backend" not in over
    cfg = load_overlay(REPO / "config/long-context.yaml", REPO)
    pa_ = cfg.get("paper_a")
    assert pa_["n"] == 32768 and pa_["d"] == [512, 128, 32] and pa_["rows"] != "all"
    assert min(pa_["trials"], pa_["eta"]["trials"]) >= 2
    assert len(cfg.grid("paper_a.rho")) == 35 and len(cfg.grid("paper_a.gamma")) == 48
    assert pa_["theorem_table"]["n"] == 131072 >= pa_["regenerate_n"]
    assert jobs["paper_a_lambda"] == jobs["paper_a_eta"] == 3 * 5
    assert jobs["paper_a_theorem_rows"] == 3 * len(pa_["theorem_table"]["rho"])
    fs = pa_["finite_size"]
    assert jobs["paper_a_tokens"] == 3 * pa_["trials"] + 3 * len(fs["n"]) * fs["trials"]
    assert "explorer_data" in jobs and "all" in jobs


def test_benchmark_and_cost_estimate_run_at_tiny_sizes(tmp_path, capsys):
    """``python -m attnscale.bench.sampled --tiny`` writes its table (every (n, d) within the
    memory cap, both kernels, flops counted as documented) and
    ``python -m attnscale.bench.long_context --tiny`` extrapolates the long-context overlay's
    units (counts from the configuration); no timing is checked."""
    from attnscale.bench import long_context, sampled
    from conftest import REPO

    assert sampled.main(["--tiny", "--out", str(tmp_path)]) == 0
    df = pd.read_csv(tmp_path / "sampled.csv")
    kern = df[df["benchmark"] != "gemm_peak"]
    assert len(kern) == 2 * len(sampled.TINY["ns"]) * len(sampled.TINY["ds"])
    flops = (
        2.0
        * kern["m"]
        * kern["n"]
        * kern["d"]
        * np.where(kern["benchmark"] == "sampled_lambda", kern["betas"] + 1, 3 * kern["betas"] + 2)
    )
    np.testing.assert_allclose(kern["gflops"], flops / kern["seconds"] / 1e9, rtol=1e-9)
    assert (kern["fraction_of_gemm_peak"] > 0).all()
    cfg = long_context.load_overlay(REPO / "config/long-context.yaml", REPO)
    counts = {(u["part"], u["d"]): u["count"] for u in long_context.units(cfg)}
    assert counts[("Figure 1 (lambda)", 512)] == 35 * 2 and ("token draw", 512) in counts
    assert counts[("theorem table", 32)] == 3 * 8
    out = tmp_path / "estimate.csv"
    assert (
        long_context.main([str(REPO / "config/long-context.yaml"), "--tiny", "--out", str(out)])
        == 0
    )
    est = pd.read_csv(out)
    assert set(est["part"]) == {p for p, _ in counts} and (est["cpu_seconds"] > 0).all()
    assert "CPU-s" in capsys.readouterr().out


def test_z0_spread_table_checks_and_adds_the_se():
    """Rule ``paper_a_z0_spread``'s entry: the bench's table with each mode's SE of the mean;
    the row sample of a draw is the same in both modes (so their difference is the z_0 norm's);
    bad arguments named before any work."""
    from attnscale.bench.long_context import z0_spread_table

    t = z0_spread_table(n=256, d=32, rho=0.5, gamma=[2.0], draws=3, rows=16, root_seed=3)
    assert t["se_gaussian"].iloc[0] == pytest.approx(t["sd_gaussian"].iloc[0] / np.sqrt(3))
    assert t.equals(
        z0_spread_table(n=256, d=32, rho=0.5, gamma=[2.0], draws=3, rows=16, root_seed=3)
    )
    for bad, msg in (({"rows": 512}, "rows"), ({"draws": 2}, "draws"), ({"gamma": [0.0]}, "gamma")):
        with pytest.raises((ValueError, TypeError), match=msg):
            z0_spread_table(
                **{**dict(n=256, d=32, rho=0.5, gamma=[2.0], draws=3, rows=16, root_seed=3), **bad}
            )
