"""The ``attnscale`` command line and its page (docs/ask-the-theory.md).

* Every example on the page is run, in the page's order (Python blocks too, in a temporary
  folder), and its output must be the output the page shows: the page cannot go stale. Numbers
  may differ by one unit in their last shown digit (rounding on another machine), nothing else.
* ``critical_report`` gives the numbers of the library functions it names (one home per fact).
* Bad arguments exit with status 2 and one line naming the argument and its range.
* ``estimate_rho_q`` is the pipeline's estimator (mean cosine, mean squared norm), checked
  against a brute-force computation.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess
import sys
import tomllib

import numpy as np
import pytest

from attnscale import cli
from attnscale.layer import finite_d, tokens
from attnscale.layer.scores import scaling_rules
from conftest import REPO

PAGE = REPO / "docs" / "ask-the-theory.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def page_blocks() -> list[tuple[str, str]]:
    """``(kind, text)`` of every ``python`` and ``console`` block of the page, in order."""
    return [
        (m.group(1), m.group(2))
        for m in FENCE.finditer(PAGE.read_text(encoding="utf-8"))
        if m.group(1) in ("python", "console")
    ]


def run_main(argv: list[str], capsys) -> tuple[int, str, str]:
    """``attnscale <argv>`` in this process: exit status, stdout, stderr."""
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse's own errors
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def _unit(token: str) -> float:
    """One unit in the last shown digit of a number as printed."""
    mant, _, exp = token.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 10.0 ** (-decimals + (int(exp) if exp else 0))


def same_output(shown: str, actual: str) -> str | None:
    """``None`` if ``actual`` is ``shown`` up to a last-digit difference in numbers, else the
    first differing line."""
    a_lines, b_lines = shown.rstrip().splitlines(), actual.rstrip().splitlines()
    if len(a_lines) != len(b_lines):
        return f"{len(a_lines)} lines shown, {len(b_lines)} printed"
    for a, b in zip(a_lines, b_lines, strict=True):
        if a == b:
            continue
        na, nb = NUMBER.findall(a), NUMBER.findall(b)
        if NUMBER.sub("#", a) != NUMBER.sub("#", b) or len(na) != len(nb):
            return f"shown:   {a!r}\nprinted: {b!r}"
        for x, y in zip(na, nb, strict=True):
            if x != y and abs(float(x) - float(y)) > 1.01 * _unit(x):
                return f"shown:   {a!r}\nprinted: {b!r}"
    return None


def test_the_page_has_the_examples_the_issue_asked_for():
    commands = [text.splitlines()[0] for kind, text in page_blocks() if kind == "console"]
    for wanted in [
        "$ attnscale critical --d 128 --n 131072",
        "$ attnscale critical --d 128 --n 131072 --rho 0.5",
        "$ attnscale critical --d 64 --n 32768",
        "$ attnscale estimate-rho keys.npy",
    ]:
        assert wanted in commands, wanted
    assert any(kind == "python" and "near_simplex" in text for kind, text in page_blocks())


def test_every_example_on_the_page_is_the_commands_output(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    ran = 0
    for kind, text in page_blocks():
        if kind == "python":
            exec(compile(text, f"{PAGE.name} (python block)", "exec"), {"__name__": "__page__"})
            continue
        first, _, shown = text.partition("\n")
        assert first.startswith("$ attnscale "), (
            f"a console block must start with '$ attnscale': {first!r}"
        )
        rc, out, err = run_main(shlex.split(first[2:])[1:], capsys)
        diff = same_output(shown, out + err)
        assert diff is None, f"{first}: the page is stale\n{diff}"
        assert (rc == 0) == (err == ""), (first, rc, err)
        ran += 1
    assert ran >= 6


def test_python_m_runs_the_command_line():
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": ""}
    ok = subprocess.run(
        [sys.executable, "-m", "attnscale", "critical", "--d", "16", "--n", "1000", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["d"] == 16
    bad = subprocess.run(
        [sys.executable, "-m", "attnscale", "critical", "--d", "16", "--n", "1"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert "n must be an integer in [2, 1e+07], got 1" in bad.stderr


def test_console_script_is_declared():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["attnscale"] == "attnscale.cli:main"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["critical", "--d", "2", "--n", "100"], "d must be an integer in [3, 4096], got 2"),
        (["critical", "--d", "64.5", "--n", "100"], "d must be an integer in [3, 4096], got 64.5"),
        (["critical", "--d", "64", "--n", "1"], "n must be an integer in [2, 1e+07], got 1"),
        (["critical", "--d", "64", "--n", "2e7"], "n must be an integer in [2, 1e+07]"),
        (["critical", "--d", "64", "--n", "10.5"], "n must be an integer in [2, 1e+07]"),
        (
            ["critical", "--d", "64", "--n", "lots"],
            "n must be an integer in [2, 1e+07], got 'lots'",
        ),
        (
            ["critical", "--d", "64", "--n", "100", "--rho", "1"],
            "rho must be a real number in [0, 1)",
        ),
        (
            ["critical", "--d", "64", "--n", "100", "--rho", "-0.2"],
            "rho must be a real number in [0, 1)",
        ),
        (
            ["critical", "--d", "64", "--n", "100", "--rho", "nan"],
            "rho must be a real number in [0, 1)",
        ),
        (["critical", "--d", "64"], "the following arguments are required: --n"),
        (["estimate-rho", "missing.npy"], "tokens must be a readable .npy file"),
        ([], "the following arguments are required: command"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_main(argv, capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize(
    "array, message",
    [
        (np.zeros(5), "tokens must be a 2-D array (n, d)"),
        (np.ones((1, 4)), "tokens must have at least 2 rows"),
        (np.array([[1.0, 0.0], [0.0, 0.0]]), "tokens has a zero row (index 1)"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), "tokens must contain only finite values"),
    ],
)
def test_estimate_rho_rejects_bad_token_files(array, message, capsys, tmp_path):
    path = tmp_path / "t.npy"
    np.save(path, array)
    rc, out, err = run_main(["estimate-rho", str(path)], capsys)
    assert rc == 2 and out == "" and message in err and err.count("\n") == 1, err
    assert cli.SAVE_HINT in err and "allow_pickle" not in err, err


def _write_text(path):
    path.write_text("0.1,0.2\n0.3,0.4\n")


def _write_pickle(path):
    import pickle

    path.write_bytes(pickle.dumps(np.ones((3, 2))))


def _write_npz(path):
    with path.open("wb") as fh:
        np.savez(fh, x=np.ones((3, 2)))


def _write_objects(path):
    np.save(path, np.array([[1.0, {"a": 1}], [2.0, 3.0]], dtype=object), allow_pickle=True)


@pytest.mark.parametrize(
    "write, message",
    [
        (_write_text, "is not one: it looks like text"),
        (_write_pickle, "is not one: it looks like a Python pickle"),
        (_write_npz, "is not one: it looks like a zip archive"),
        (_write_objects, "are Python objects (dtype object), not numbers"),
        (
            lambda p: np.save(p, np.array([["a", "b"], ["c", "d"]])),
            "must be real numbers, got dtype <U1",
        ),
        (
            lambda p: np.save(p, np.ones((3, 2), dtype=complex)),
            "must be real numbers, got dtype complex128",
        ),
        (lambda p: np.save(p, np.ones(5)), "tokens must be a 2-D array (n, d), got shape (5,)"),
        (
            lambda p: np.save(p, np.array([[1.0, np.inf], [0.0, 1.0]])),
            "tokens must contain only finite values",
        ),
        (lambda p: p.write_bytes(b""), "is not one: it looks like empty"),
        (lambda p: p.write_bytes(b"\x93NUMPY\x01"), "is a damaged .npy file"),
    ],
)
def test_estimate_rho_says_what_is_wrong_with_a_file_and_how_to_save_tokens(
    write, message, capsys, tmp_path
):
    """Files that are not a numeric ``.npy`` array (issue 25): one line saying what the file is,
    how to write one (``numpy.save``), never numpy's hint to unpickle (``allow_pickle``)."""
    path = tmp_path / "tokens.npy"
    write(path)
    rc, out, err = run_main(["estimate-rho", str(path)], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert message in err and "numpy.save" in err and "allow_pickle" not in err, err


def test_version_is_the_package_version(capsys):
    import importlib.metadata

    import attnscale

    rc, out, _ = run_main(["--version"], capsys)
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert rc == 0 and out == f"attnscale {meta['project']['version']}\n"
    assert attnscale.__version__ == meta["project"]["version"]
    assert importlib.metadata.version("attnscale") == attnscale.__version__


#: Modules a subcommand must not load (docs/ask-the-theory.md#start-up-time): the command line
#: starts in a few hundredths of a second for --help, and ``critical`` needs NumPy and
#: scipy.special only (scipy.stats and scipy.optimize cost ~0.5 s more).
HEAVY = {
    "--help": {"numpy", "scipy", "pandas", "matplotlib"},
    "--version": {"numpy", "scipy", "pandas", "matplotlib"},
    "critical": {"scipy.stats", "scipy.optimize", "scipy.integrate", "pandas", "matplotlib", "jax"},
}


@pytest.mark.parametrize("command", sorted(HEAVY))
def test_start_up_loads_only_what_the_command_needs(command):
    """A structural check of the start-up time (not a timing: timings belong in benchmarks)."""
    argv = [command]
    if command == "critical":
        argv += ["--d", "64", "--n", "1000", "--rho", "0.3"]
    code = (
        f"import sys\nfrom attnscale import cli\ntry:\n    cli.main({argv!r})\n"
        "except SystemExit:\n    pass\nprint('LOADED', ' '.join(sorted(sys.modules)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": ""},
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.rsplit("LOADED ", 1)[1].split())
    assert not HEAVY[command] & loaded, sorted(HEAVY[command] & loaded)


def test_critical_report_is_the_library_numbers():
    n, d, rho = 32768, 64, 0.5
    r = cli.critical_report(n, d, rho)
    assert r["beta_star"] == finite_d.critical_beta(n, d, rho)
    assert r["gamma_star"] == pytest.approx(finite_d.critical_gamma(n, d, rho), rel=1e-12)
    assert r["gamma_c"] == pytest.approx(2.0)
    a = r["approximations"]
    assert a["annealed"]["beta"] == finite_d.annealed_critical_beta(n, d, rho)
    assert a["first_order"]["beta"] == finite_d.first_order_critical_beta(n, d, rho)
    assert a["paper_a_asymptote"]["beta"] == pytest.approx(2.0 * math.log(n))
    assert a["power_law"]["beta"] == pytest.approx(float(finite_d.power_law_beta(n, d)))
    assert not a["power_law"]["derived_for_this_rho"]
    beta_star = r["beta_star"]
    for key in a:
        assert a[key]["rel_diff"] == pytest.approx(a[key]["beta"] / beta_star - 1)
    rules = {x["key"]: x for x in r["scaling_rules"]}
    assert set(rules) == set(scaling_rules.RULE_KEYS)
    for key, x in rules.items():
        rule = scaling_rules.RULE_KEYS[key]
        if rule.calibration == "A":  # beta_n = gamma_c ln L m(n)
            beta_n = 2.0 * math.log(rule.L) * float(rule.m(float(n)))
        else:
            beta_n = float(rule.m(float(n)))
        assert x["gamma_eff"] == pytest.approx(beta_n / math.log(n), rel=1e-12)
        assert x["gamma_eff_over_gamma_star"] == pytest.approx(beta_n / beta_star, rel=1e-12)
    # Qwen's log_L n rule is exactly Paper A's line, so the ratio is gamma_c / gamma*
    assert rules["qwen"]["gamma_eff_over_gamma_star"] == pytest.approx(2.0 / r["gamma_star"])


def test_default_rho_is_zero_and_says_so(capsys):
    r = cli.critical_report(1000, 16)
    assert r["rho"] == 0.0 and not r["rho_given"] and "rho = 0" in r["rho_note"]
    assert r["beta_star"] == finite_d.critical_beta(1000, 16, 0.0)
    assert r["beta_star"] < cli.critical_report(1000, 16, 0.2)["beta_star"]  # the smallest
    rc, out, _ = run_main(["critical", "--d", "16", "--n", "1000"], capsys)
    assert rc == 0 and "rho = 0 (default)" in out and "attnscale estimate-rho" in out
    assert cli.critical_report(1000, 16, 0.2)["rho_note"] is None


def test_first_order_without_root_is_reported(capsys):
    """Beyond the crossover ln(n - 1) = d / 2 (rho = 0) the first-order equation has no root
    (docs/finite-d.md#asymptotic-regimes): null in JSON, a dash and 'no root' in the text."""
    rc, out, _ = run_main(["critical", "--d", "8", "--n", "2048", "--json"], capsys)
    fo = json.loads(out)["approximations"]["first_order"]
    assert rc == 0 and fo["beta"] is None and fo["rel_diff"] is None
    assert fo["crossover_ln_n_minus_1"] == pytest.approx(4.0)
    assert math.isnan(finite_d.first_order_critical_beta(2048, 8, 0.0))
    rc, out, _ = run_main(["critical", "--d", "8", "--n", "2048"], capsys)
    assert "no root" in out
    # the crossover is where the root disappears
    ln_x = finite_d.first_order_crossover_log_n(64, 0.3)
    below, above = math.floor(math.exp(ln_x)) - 1000, math.ceil(math.exp(ln_x)) + 1000
    if above <= finite_d.N_MAX:
        assert math.isnan(finite_d.first_order_critical_beta(above, 64, 0.3))
    assert math.isfinite(finite_d.first_order_critical_beta(min(below, 10**6), 64, 0.3))


def test_json_keys_are_the_documented_ones(capsys):
    rc, out, _ = run_main(
        ["critical", "--d", "32", "--n", "4096", "--rho", "0.3", "--json"], capsys
    )
    r = json.loads(out)
    documented = set(re.findall(r"^\| ((?:`\w+`(?:, )?)+) \|", PAGE.read_text(), re.M))
    keys = {k for cell in documented for k in re.findall(r"`(\w+)`", cell)}
    assert set(r) <= keys, set(r) - keys
    assert set(r["approximations"]) == {"annealed", "first_order", "paper_a_asymptote", "power_law"}
    assert set(r["scaling_rules"][0]) == {
        "key",
        "name",
        "calibration",
        "L",
        "m",
        "gamma_eff",
        "gamma_eff_over_gamma_star",
        "side",
    }
    # rounded to SIGNIFICANT digits, as documented
    assert r["beta_star"] == float(f"{cli.critical_report(4096, 32, 0.3)['beta_star']:.6g}")


def test_estimate_rho_q_is_the_pipelines_estimator():
    rng = np.random.default_rng(7)
    X = tokens.near_simplex(300, 16, 0.4, rng)
    est = tokens.estimate_rho_q(X)
    assert est.rho_hat == tokens.mean_cosine(X) and est.q_hat == tokens.mean_sq_norm(X)
    assert (est.n, est.d) == (300, 16)
    # brute force over all pairs
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    G = Y @ Y.T
    assert est.rho_hat == pytest.approx((G.sum() - np.trace(G)) / (300 * 299), rel=1e-12)
    assert est.q_hat == pytest.approx(np.mean(np.sum(X**2, axis=1)), rel=1e-12)
    rho_hat, q_hat, n, d = est  # a tuple
    assert (rho_hat, q_hat) == (est.rho_hat, est.q_hat)


def test_estimate_rho_command_reads_a_file(tmp_path, capsys):
    X = tokens.near_simplex(500, 32, 0.3, np.random.default_rng(1))
    np.save(tmp_path / "k.npy", X)
    rc, out, _ = run_main(["estimate-rho", str(tmp_path / "k.npy"), "--json"], capsys)
    r = json.loads(out)
    assert rc == 0 and (r["n"], r["d"]) == (500, 32) and r["note"] is None
    assert r["rho_hat"] == pytest.approx(tokens.mean_cosine(X), rel=1e-5)
    np.save(tmp_path / "anti.npy", np.array([[1.0, 0.0], [-1.0, 0.0]]))
    rc, out, _ = run_main(["estimate-rho", str(tmp_path / "anti.npy")], capsys)
    assert rc == 0 and "rho_hat < 0" in out
