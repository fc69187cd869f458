"""Ecosystem conventions (docs/pipeline.md#ecosystem): the forge CI workflow lints clean with
actionlint, the workflow-catalogue metadata is valid, and the conda route works by construction
(the pinned environment covers every third-party import of the library, and a rule runs from a
checkout whose library is not installed)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from conftest import REPO, copy_repo

# import name -> distribution name, for the library's third-party imports
DIST = {"PIL": "pillow", "yaml": "pyyaml", "snakemake": "snakemake", "jsonschema": "jsonschema"}
STDLIB = set(sys.stdlib_module_names)


def test_forge_workflow_lints_clean_and_runs_the_ci_entry_point():
    exe = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    files = sorted((REPO / ".github/workflows").glob("*.yml"))
    assert files
    proc = subprocess.run([exe, *map(str, files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wf = yaml.safe_load(files[0].read_text())
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "bash .ci/run" in runs
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert "figures/" in upload["with"]["path"] and "report.html" in upload["with"]["path"]


def test_actionlint_catches_a_broken_workflow(tmp_path):
    """Negative control: the lint step is not a no-op."""
    exe = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  t:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - run: echo ${{ github.nosuchthing }}\n"
    )
    assert subprocess.run([exe, str(bad)], capture_output=True).returncode != 0


def test_catalog_metadata():
    meta = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())
    assert meta["usage"]["software-stack-deployment"]["conda"] is True
    assert (REPO / "config/README.md").is_file()


def _third_party_imports() -> set[str]:
    out = set()
    for p in (REPO / "src/attnscale").rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for n in names:
                top = n.split(".")[0]
                if top and top not in STDLIB and top != "attnscale":
                    out.add(top)
    return out


def test_conda_environment_covers_every_library_import():
    env = yaml.safe_load((REPO / "envs/environment.yaml").read_text())
    pip = next(x for x in env["dependencies"] if isinstance(x, dict))["pip"]
    pinned = {line.split("==")[0].lower() for line in pip}
    missing = {m for m in _third_party_imports() if DIST.get(m, m) not in pinned}
    assert not missing, f"imported by the library but not in envs/environment.yaml: {missing}"


def test_every_rule_declares_the_conda_environment():
    for smk in (REPO / "workflow/rules").glob("*.smk"):
        text = smk.read_text()
        assert text.count("\nrule ") == text.count('"../../envs/environment.yaml"'), smk.name


def test_a_rule_runs_from_a_checkout_whose_library_is_not_installed(tmp_path):
    """What ``--sdm conda`` relies on: entry.py finds this checkout's src/ by itself."""
    work = copy_repo(tmp_path / "repo")
    out = work / "results/rules.csv"
    code = textwrap.dedent(f"""
        import runpy, sys
        sys.path[:] = [p for p in sys.path if not p.rstrip("/").endswith("src")]
        try:
            import attnscale  # noqa: F401
        except ImportError:
            pass
        else:
            raise SystemExit("attnscale importable without the checkout: test is void")

        class NL(dict):
            def __getattr__(self, k):
                return self[k]

        class SM:
            scriptdir = {str(work / "workflow/scripts")!r}
            rule = "paper_a_scaling_rules_data"
            threads = 1
            log = [{str(work / "rules.log")!r}]
            input = NL()
            output = NL(csv={str(out)!r})
            params = NL(entry="experiments.paper_a_scaling_rules:scaling_rules_data",
                        ns=[1024.0, 4096.0], overlay_n=2048.0)

        runpy.run_path({str(work / "workflow/scripts/entry.py")!r}, init_globals={{"snakemake": SM()}})
        import attnscale
        print(attnscale.__file__)
    """)
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().startswith(str(work / "src")), proc.stdout
    assert out.stat().st_size > 100
