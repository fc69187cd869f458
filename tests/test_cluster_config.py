"""The cluster configuration (config/cluster.yaml, docs/pipeline.md#scaling-out): a dry run
through the Slurm profile builds the whole DAG (no job is submitted in a dry run), and the job
counts follow the sizes the file sets."""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import REPO, copy_repo, hermetic_env, jobs_to_run
from warm_snakemake import snakemake

pytestmark = pytest.mark.workflow


def _jobs(stdout: str) -> dict[str, int]:
    """rule -> job count from a dry run's job table."""
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if m and m.group(1) != "total":
            out[m.group(1)] = int(m.group(2))
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """One copy of the repository for this module's runs (dry runs, and a run that stops before
    its first job: none writes an output). Snakemake runs from the warm process of
    tests/warm_snakemake.py: its start-up is paid once per test process, not once per run."""
    return copy_repo(tmp_path_factory.mktemp("cluster") / "repo")


def test_cluster_configuration_dry_runs_through_the_slurm_profile(work):
    proc = snakemake(
        work,
        "-n",
        "--quiet",
        "rules",
        "--workflow-profile",
        "profiles/slurm",
        "--configfile",
        "config/cluster.yaml",
        env=hermetic_env(work),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    jobs = _jobs(proc.stdout)
    base = yaml.safe_load((REPO / "config.yaml").read_text())
    over = yaml.safe_load((REPO / "config/cluster.yaml").read_text())
    fs = {**base["paper_a"]["finite_size"], **over.get("paper_a", {}).get("finite_size", {})}
    assert jobs["paper_a_finite_size_rows"] == len(fs["n"]) * len(base["paper_a"]["d"]) * len(
        fs["rho"]
    )
    assert "all" in jobs


def test_the_slurm_profile_without_slurm_stops_before_the_first_job(work):
    """Slurm is needed only by the Slurm profile: without its commands on PATH a real run stops
    after the DAG is built, before any job is submitted, with one message naming them
    (docs/pipeline.md#optional-pieces), instead of waiting on a cluster that is not there."""
    import os
    import sys
    from pathlib import Path

    from attnscale.pipeline.executors import executor_missing

    assert executor_missing("local", which=lambda c: None) is None
    assert executor_missing("slurm", which=lambda c: f"/usr/bin/{c}") is None
    import shutil

    bin_ = work.parent / "no-slurm-bin"  # the shell tools Snakemake calls, and no Slurm
    bin_.mkdir(exist_ok=True)
    for name in ("sh", "bash", "which", "git", "uname", "env"):
        if shutil.which(name) and not (bin_ / name).exists():
            (bin_ / name).symlink_to(shutil.which(name))
    env = hermetic_env(work)
    env["PATH"] = os.pathsep.join([str(bin_), str(Path(sys.executable).parent)])
    proc = snakemake(
        work,
        *("--workflow-profile", "profiles/slurm", "--configfile", "tests/smoke.yaml"),
        *("--jobs", "1", "--", "paper_b_profile_figure"),
        env=env,
        check=False,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "needs Slurm's commands on PATH; sbatch, squeue, scancel not found" in out, out[-3000:]
    assert not list((work / "results").rglob("*.csv")) and "Submitted" not in out


def test_every_grouped_rule_is_sized_as_a_bundle_and_names_a_real_rule():
    """A rule in a group of profiles/slurm needs ``bundle_slots`` in set-resources (else the
    group job asks for its members' runtime per layer, not their sum: see the profile's
    comment); every group has a ``group-components`` entry; every rule named is a rule of the
    workflow (a renamed rule would silently fall out of its group)."""
    prof = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    rules = set(
        re.findall(
            r"^(?:rule|use rule \w+ as) (\w+)",
            "".join(p.read_text() for p in (REPO / "workflow/rules").glob("*.smk")),
            re.M,
        )
    )
    groups = prof["groups"]
    assert set(groups) <= rules, sorted(set(groups) - rules)
    assert {r for r, res in prof["set-resources"].items() if "bundle_slots" in res} == set(groups)
    assert set(groups.values()) == set(prof["group-components"])


#: Rules that run the heavy kernels: one GPU each in profiles/slurm-gpu (docs/gpu.md).
GPU_RULES = {
    "paper_a_lambda",
    "paper_a_eta",
    "paper_a_theorem_rows",
    "paper_a_finite_size_rows",
    "finite_d_transition_points",
    "finite_d_intermediate_rows",
    "causal_lambda",
    "causal_self_weight",
    "causal_rules_simulated",
    "realistic_learned_qk",
    "realistic_sink",
    "realistic_depth",
}


def test_gpu_profile_is_the_cpu_profile_plus_one_gpu_per_heavy_rule():
    """profiles/slurm-gpu = profiles/slurm + ``gpu: 1`` for the heavy rules
    (docs/gpu.md#slurm-with-gpus); the CPU profile, which CI's Slurm stage uses, asks for no GPU
    anywhere."""
    cpu = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    gpu = yaml.safe_load((REPO / "profiles/slurm-gpu/config.yaml").read_text())
    assert {k: v for k, v in gpu.items() if k != "set-resources"} == {
        k: v for k, v in cpu.items() if k != "set-resources"
    }
    asked = {}
    for rule, res in gpu["set-resources"].items():
        assert {k: v for k, v in res.items() if k != "gpu"} == cpu["set-resources"].get(rule, {})
        if "gpu" in res:
            asked[rule] = res["gpu"]
    assert set(cpu["set-resources"]) <= set(gpu["set-resources"])
    assert set(asked) == GPU_RULES and set(asked.values()) == {1}
    rules = set(
        re.findall(
            r"^(?:rule|use rule \w+ as) (\w+)",
            "".join(p.read_text() for p in (REPO / "workflow/rules").glob("*.smk")),
            re.M,
        )
    )
    assert GPU_RULES <= rules
    cpu_text = yaml.safe_dump(cpu)
    assert "gpu" not in cpu_text.replace("docs/gpu.md", "") and "gres" not in cpu_text


def test_paper_scale_dry_runs_through_the_gpu_profile(work):
    """``config/paper-scale.yaml`` builds its whole DAG (docs/gpu.md#paper-scale-configuration)
    through the GPU profile, which asks a GPU for the JAX kernels' jobs only; the default
    configuration keeps numpy. (One dry run for both claims: a whole-DAG parse costs ~5 CPU-s.)"""
    proc = snakemake(
        work,
        "-n",
        "--workflow-profile",
        "profiles/slurm-gpu",
        "--configfile",
        "config/paper-scale.yaml",
        env=hermetic_env(work),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    job = out[out.index("rule paper_a_lambda:") :]
    assert "gpu=1" in job[: job.index("Shell command")]
    job = out[out.index("rule paper_b_exponent_sphere:") :]
    assert "gpu=" not in job[: job.index("Shell command")]
    jobs = jobs_to_run(proc.stdout)
    over = yaml.safe_load((REPO / "config/paper-scale.yaml").read_text())
    assert over["backend"] == "jax"
    assert yaml.safe_load((REPO / "config.yaml").read_text())["backend"] == "numpy"
    assert jobs["paper_a_lambda"] == len(over["paper_a"]["d"]) * 5  # 35 rho in chunks of 7
    assert jobs["paper_a_eta"] == jobs["paper_a_lambda"]
    assert jobs["finite_d_transition_points"] == len(over["finite_d"]["transition"]["d"])
    assert jobs["causal_rules_simulated"] == len(over["causal"]["rules_simulated"]["n"])
    assert (
        max(over["finite_d"]["transition"]["n"])
        == max(over["causal"]["rules_simulated"]["n"])
        == 2**20
    )
    assert "all" in jobs


def test_every_job_asks_for_its_rules_resources_whatever_the_site_defaults(work):
    """Threads, mem_mb and runtime come from the workflow (a rule's own, else RULE_DEFAULTS of
    workflow/rules/common.smk; docs/pipeline.md#rule-anatomy): with the site's
    ``--default-resources`` (which replaces the profile's list, docs/pipeline.md#scaling-out), and
    one that names mem_mb and runtime, every job still asks for them, and no job for more than
    one thread (determinism: BLAS follows a job's threads)."""
    proc = snakemake(
        work,
        "-n",
        "--workflow-profile",
        "profiles/slurm",
        "--configfile",
        "tests/smoke.yaml",
        "--default-resources",
        "slurm_partition=site",
        "slurm_account=me",
        "mem_mb=3",
        "runtime=1",
        env=hermetic_env(work),
    )
    jobs = re.findall(r"^\s*(?:local)?rule (\w+):\n((?:\s+\w+: .*\n)*)", proc.stdout, re.M)
    assert len(jobs) > 50
    res = {}
    for rule, body in jobs:
        assert "threads:" not in body, rule  # printed only when > 1
        line = re.search(r"resources: (.*)", body).group(1)
        got = dict(kv.split("=", 1) for kv in line.split(", "))
        assert got["slurm_partition"] == "site" and got["slurm_account"] == "me", rule
        res.setdefault(rule, set()).add((got["mem_mb"], got["runtime"]))
    assert res["paper_b_profile_figure"] == {("1000", "5")}  # the defaults
    assert res["paper_a_lambda"] == {("2000", "15")}  # its own
    assert res["finite_d_transition_theory"] == {("1000", "10")}  # its runtime, the default mem_mb


def test_rule_defaults_sit_between_the_site_defaults_and_the_rules_own_values():
    from snakemake.settings.types import ResourceSettings

    from attnscale.pipeline.rule_defaults import install

    class Workflow:
        resource_settings = ResourceSettings(
            default_resources={"mem_mb": 3, "slurm_partition": "site"}
        )

    install(Workflow, {"mem_mb": 1000, "runtime": 5})
    got = {k: v.value for k, v in Workflow.resource_settings._parsed_default_resources.items()}
    assert {k: got[k] for k in ("mem_mb", "runtime", "slurm_partition")} == {
        "mem_mb": 1000,
        "runtime": 5,
        "slurm_partition": "site",
    }
    with pytest.raises(ValueError, match="rule default runtime must be a number > 0; got 0"):
        install(Workflow, {"runtime": 0})
    with pytest.raises(RuntimeError, match="cannot set the rule defaults"):
        install(object(), {"runtime": 5})
