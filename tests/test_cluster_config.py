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
    rules = set(re.findall(r"^rule (\w+):", "".join(
        p.read_text() for p in (REPO / "workflow/rules").glob("*.smk")), re.M))  # fmt: skip
    groups = prof["groups"]
    assert set(groups) <= rules, sorted(set(groups) - rules)
    assert {r for r, res in prof["set-resources"].items() if "bundle_slots" in res} == set(groups)
    assert set(groups.values()) == set(prof["group-components"])
