"""The README's "How to add a rule" recipe, followed literally in a copy of a finished smoke run:
a new figure from an existing table (docs/pipeline.md#adding-a-figure). It must build, touch at
most five files, and rerun nothing but itself."""

from __future__ import annotations

import hashlib
import re
import shutil
import textwrap

import pytest

from conftest import SMOKE, snakemake

pytestmark = pytest.mark.workflow

SOURCES = ("src", "workflow", "Snakefile", "README.md", "config.yaml", "config", "tests", "envs")

FUNCTION = '''

def plot_lambda_profile(*, data: pd.DataFrame, caption: str):
    """lambda against gamma at the middle rho of Figure 1's grid, one line per d
    (docs/paper-a.md#the-angle-ratio-lambda)."""
    apply_style()
    rho = np.sort(data["rho"].unique())[len(data["rho"].unique()) // 2]
    fig, ax = plt.subplots(figsize=(4, 3))
    for d, g in data[data["rho"] == rho].groupby("d"):
        ax.plot(g["gamma"], g["lambda_mean"], marker="o", label=f"d = {d}")
    ax.set_xscale("log")
    ax.set_xlabel("gamma")
    ax.set_ylabel("lambda")
    ax.legend()
    add_caption(fig, caption)
    return fig
'''

RULE = '''

rule paper_a_lambda_profile_figure:
    """lambda against gamma at one rho (recipe test)."""
    input:
        data=rules.paper_a_lambda_summary.output.figure1,
        lib=lib("figures.paper_a"),
    output:
        png=report(
            "figures/paper_a/lambda_profile.png",
            caption="../report/paper_a_lambda_profile_figure.rst",
            category="Paper A",
        ),
        pdf="figures/paper_a/lambda_profile.pdf",
    log:
        "logs/paper_a/lambda_profile.log",
    conda:
        "../../envs/environment.yaml"
    params:
        entry="figures.paper_a:plot_lambda_profile",
        caption=f"n = {CFG.value('paper_a.n')} [choice].",
    script:
        ENTRY
'''


def _hashes(root):
    out = {}
    for top in SOURCES:
        base = root / top
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for p in files:
            if "__pycache__" not in p.parts:
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_recipe_adds_a_figure_touching_at_most_five_files(smoke_run, tmp_path):
    work = tmp_path / "repo"
    shutil.copytree(smoke_run["dir"], work, symlinks=True)
    before = _hashes(work)
    # 1. library function
    fig_mod = work / "src/attnscale/figures/paper_a.py"
    fig_mod.write_text(fig_mod.read_text() + FUNCTION)
    # 2. rule
    smk = work / "workflow/rules/paper_a.smk"
    smk.write_text(smk.read_text() + RULE)
    # 3. caption
    (work / "workflow/report/paper_a_lambda_profile_figure.rst").write_text(
        "lambda against gamma at one rho (recipe test).\n"
    )
    # 4. target in rule all
    snakefile = work / "Snakefile"
    text = snakefile.read_text()
    text, k = re.subn(
        r"(rule all:\n(?:.*\n)*?    input:\n)",
        r"\1        rules.paper_a_lambda_profile_figure.output,\n",
        text,
    )
    assert k == 1
    snakefile.write_text(text)
    # 5. README row
    readme = work / "README.md"
    readme.write_text(
        readme.read_text()
        + textwrap.dedent("""
        | lambda profile (recipe test) | `paper_a_lambda_profile_figure` | `figures/paper_a/lambda_profile.{png,pdf}` | ours |
        """)
    )
    after = _hashes(work)
    touched = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert len(touched) <= 5, touched

    # the run lists its jobs as a dry run would (no separate dry run: one parse less)
    run = snakemake(work, "--cores", "2", "paper_a_lambda_profile_figure", *SMOKE)
    jobs = re.findall(r"^\s*(?:local)?rule (\w+):", run.stdout + run.stderr, flags=re.M)
    assert jobs == ["paper_a_lambda_profile_figure"], jobs  # the existing table is reused
    png = work / "figures/paper_a/lambda_profile.png"
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    assert (work / "figures/paper_a/lambda_profile.pdf").is_file()
    lint = snakemake(work, "--lint", *SMOKE, check=False)
    assert "paper_a_lambda_profile_figure" not in lint.stdout + lint.stderr, lint.stdout[-3000:]
