"""The cluster configuration (config/cluster.yaml, docs/pipeline.md#scaling-out): a dry run
through the Slurm profile builds the whole DAG (no job is submitted in a dry run), and the job
counts follow the sizes the file sets."""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import REPO, copy_repo, snakemake

pytestmark = pytest.mark.workflow


def _jobs(stdout: str) -> dict[str, int]:
    """rule -> job count from a dry run's job table."""
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if m and m.group(1) != "total":
            out[m.group(1)] = int(m.group(2))
    return out


def test_cluster_configuration_dry_runs_through_the_slurm_profile(tmp_path):
    work = copy_repo(tmp_path / "repo")
    proc = snakemake(work, "-n", "--quiet", "rules", "--workflow-profile", "profiles/slurm",
                     "--configfile", "config/cluster.yaml", check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    jobs = _jobs(proc.stdout)
    base = yaml.safe_load((REPO / "config.yaml").read_text())
    over = yaml.safe_load((REPO / "config/cluster.yaml").read_text())
    fs = {**base["paper_a"]["finite_size"], **over.get("paper_a", {}).get("finite_size", {})}
    assert jobs["paper_a_finite_size_rows"] == len(fs["n"]) * len(base["paper_a"]["d"]) * len(
        fs["rho"]
    )
    assert "all" in jobs


def test_every_grouped_rule_is_sized_as_a_bundle_and_names_a_real_rule():
    """A rule in a group of profiles/slurm needs ``bundle_slots`` in set-resources (else the
    group job asks for its members' runtime per layer, not their sum: see the profile's
    comment); every group has a ``group-components`` entry; every rule named is a rule of the
    workflow (a renamed rule would silently fall out of its group)."""
    prof = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    rules = set(re.findall(r"^(?:rule|use rule \w+ as) (\w+)", "".join(
        p.read_text() for p in (REPO / "workflow/rules").glob("*.smk")), re.M))  # fmt: skip
    groups = prof["groups"]
    assert set(groups) <= rules, sorted(set(groups) - rules)
    assert {r for r, res in prof["set-resources"].items() if "bundle_slots" in res} == set(groups)
    assert set(groups.values()) == set(prof["group-components"])


#: Rules that run the heavy kernels: one GPU each in profiles/slurm-gpu (docs/gpu.md).
GPU_RULES = {"paper_a_lambda", "paper_a_eta", "paper_a_theorem_rows", "paper_a_finite_size_rows",
             "finite_d_transition_points", "finite_d_intermediate_rows", "causal_lambda",
             "causal_self_weight", "causal_rules_simulated", "realistic_learned_qk",
             "realistic_sink", "realistic_depth"}  # fmt: skip


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
    rules = set(re.findall(r"^(?:rule|use rule \w+ as) (\w+)", "".join(
        p.read_text() for p in (REPO / "workflow/rules").glob("*.smk")), re.M))  # fmt: skip
    assert GPU_RULES <= rules
    cpu_text = yaml.safe_dump(cpu)
    assert "gpu" not in cpu_text.replace("docs/gpu.md", "") and "gres" not in cpu_text


def test_paper_scale_dry_runs_through_the_gpu_profile(tmp_path):
    work = copy_repo(tmp_path / "repo")
    proc = snakemake(work, "-n", "--workflow-profile", "profiles/slurm-gpu", "--configfile",
                     "config/paper-scale.yaml", check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    job = out[out.index("rule paper_a_lambda:") :]
    assert "gpu=1" in job[: job.index("Shell command")]
    job = out[out.index("rule paper_b_exponent_sphere:") :]
    assert "gpu=" not in job[: job.index("Shell command")]
