#!/usr/bin/env python3
"""One GPU session of the JAX backend (issue 19; docs/gpu.md#gpu-run-script), in under 10 minutes.

    python tools/gpu_run.py                      # on a GPU machine; results in $OUT or results-gpu/
    python tools/gpu_run.py --tiny --out DIR     # the same steps at tiny sizes (a CPU try-out)

Steps, each under its share of the time budget (``--budget``, default 540 s):

1. ``machine.json``: device, driver (``nvidia-smi``), JAX version; then the benchmark
   (``python -m attnscale.bench.kernels --backend jax``: float64 GEMM peak of the run, each kernel's
   fraction of it at n = 8192, d = 512, time against n up to 2^20) into ``benchmark/``; the
   measured GEMM peak is copied into ``machine.json``.
2. As much of ``config/paper-scale.yaml`` as fits (in a copy of the repository): first one job of
   every heavy kernel at paper scale (a lambda and an eta chunk per d, the finite-d transition,
   the causal rules at the largest n, Paper B's beta*(n)), then the figures they feed. JAX jobs
   run one at a time on the GPU (``--resources gpu=1``), the CPU jobs beside them. Whatever
   finished is copied to ``paper-scale/`` (results, figures, logs, per-job ``benchmarks/``),
   with ``job_times.csv`` (measured seconds per job) and ``projection.json`` (the measured mean
   time per rule times the rule's job count in the full DAG: a projection of the full run).
3. ``summary.json``: what ran, what finished, the exit codes.

``--tiny`` (or ``ATTNSCALE_GPU_RUN_TINY=1``) overlays ``tests/smoke.yaml`` and
``tests/gpu_tiny.yaml`` on the paper-scale configuration, runs the benchmark with ``--tiny`` and
draws only the figures of Paper A and the finite-d transition: the same steps in a few minutes on a
CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKIP = {
    ".git",
    ".venv",
    "results",
    "figures",
    ".snakemake",
    "logs",
    "benchmarks",
    "build",
    "results-gpu",
    "mutants",
    ".pytest_cache",
    ".ruff_cache",
    "report.html",
}
#: Rules whose jobs run JAX kernels: one at a time on the one GPU.
GPU_RULES = [
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
    "paper_b_vector_fields",
    "paper_b_phase_column",
    "paper_b_profile",
    "paper_b_critical_laws",
]


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), *filter(None, [e.get("PYTHONPATH")])])
    e.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # several processes may share the GPU
    e.setdefault("ATTNSCALE_GIT_COMMIT", "gpu-run")
    return e


def run(cmd, timeout: float, log: Path, cwd=REPO, environ=None) -> int:
    """Run ``cmd`` with a timeout, stdout+stderr to ``log``; the exit code (124 on timeout)."""
    t0 = time.time()
    with open(log, "w") as fh:
        try:
            proc = subprocess.run(
                cmd,
                cwd=cwd,
                stdout=fh,
                stderr=subprocess.STDOUT,
                timeout=max(1.0, timeout),
                env=environ or env(),
            )
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = 124
    print(f"[{time.time() - t0:6.1f} s] rc={rc} {' '.join(map(str, cmd))[:160]}", flush=True)
    return rc


def merged_config(files: list[str]) -> dict:
    """config.yaml with ``files`` merged over it, as Snakemake merges ``--configfile``."""
    import yaml
    from snakemake.utils import update_config

    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    for f in files:
        update_config(cfg, yaml.safe_load((REPO / f).read_text()))
    return cfg


#: the figures a ``--tiny`` run draws (tests/test_backend_jax.py::test_gpu_run_script_at_tiny_size)
TINY_FIGURES = ("paper_a_lambda_figure", "paper_a_eta_figure", "finite_d_transition_figure")


def targets(cfg: dict) -> tuple[list[str], list[str]]:
    """``(one job of every heavy kernel, the figures)`` for a configuration."""
    sys.path.insert(0, str(REPO / "src"))
    from attnscale.pipeline.config import load

    c = load(cfg, schema=REPO / "workflow/schemas/config.schema.yaml")
    n = c.value("paper_a.n")
    first = []
    for d in sorted(c.ints("paper_a.d")):
        first += [
            f"results/paper_a/lambda/n{n}/d{d}/part0.csv",
            f"results/paper_a/eta/n{n}/d{d}/part0.csv",
        ]
    first += [
        f"results/finite_d/transition/d{d}.csv" for d in sorted(c.ints("finite_d.transition.d"))
    ]
    first.append(
        f"results/realistic/rules_simulated/n{max(c.ints('causal.rules_simulated.n'))}.csv"
    )
    first.append("results/paper_b_exponent/sphere.csv")
    figures = [
        "paper_a_lambda_figure",
        "paper_a_eta_figure",
        "finite_d_transition_figure",
        "causal_rules_simulated_figure",
        "paper_b_exponent_figure",
    ]
    return first, figures


def copy_repo(dest: Path) -> Path:
    def ignore(directory, names):
        top = Path(directory) == REPO
        return [x for x in names if (top and x in SKIP) or x == "__pycache__"]

    shutil.copytree(REPO, dest, ignore=ignore)
    for sub in ("results", "figures"):
        (dest / sub).mkdir(exist_ok=True)
    return dest


def job_times(work: Path) -> list[dict]:
    """Measured seconds of every finished job (Snakemake's per-job benchmark files)."""
    rows = []
    for tsv in sorted((work / "benchmarks").rglob("*.tsv")):
        lines = tsv.read_text().splitlines()
        if len(lines) >= 2:
            head, vals = lines[0].split("\t"), lines[1].split("\t")
            rec = dict(zip(head, vals, strict=False))
            rows.append(
                {
                    "job": str(tsv.relative_to(work / "benchmarks")),
                    "seconds": float(rec.get("s", "nan")),
                }
            )
    return rows


def benchmark_patterns() -> dict:
    """Rule name -> regex of its ``benchmark:`` path (relative to ``benchmarks/``)."""
    import re

    pats = {}
    for f in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for m in re.finditer(r"^rule (\w+):(.*?)(?=^rule |\Z)", f.read_text(), re.S | re.M):
            b = re.search(r'benchmark:\s*\n\s*"([^"]+)"', m.group(2))
            if b:
                path = re.escape(b.group(1).removeprefix("benchmarks/"))
                pats[m.group(1)] = re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", path) + "$")
    return pats


def gpu_missing(machine: dict, tiny: bool) -> str | None:
    """Why a GPU session cannot run on this machine (JAX sees no GPU: the CUDA plugin missing, or
    no GPU), or None; a ``--tiny`` try-out runs on the CPU (docs/pipeline.md#optional-pieces)."""
    if tiny or machine.get("platform") not in (None, "cpu"):
        return None
    why = machine.get("error") or f"JAX sees {machine.get('device_kind', 'no GPU')}, no GPU"
    return (
        f"tools/gpu_run.py: no GPU for the JAX backend ({why.strip()[-300:]}); on an NVIDIA GPU "
        'install the CUDA plugin, e.g. pip install "jax[cuda12]==0.10.2" '
        "(docs/gpu.md#installing-jax), or run with --tiny for the same steps at tiny sizes on the CPU"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "results-gpu"))
    ap.add_argument(
        "--tiny",
        action="store_true",
        default=os.environ.get("ATTNSCALE_GPU_RUN_TINY", "") not in ("", "0"),
    )
    ap.add_argument("--budget", type=float, default=540.0, help="seconds for the whole script")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    t0 = time.time()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)

    def left() -> float:
        return args.budget - (time.time() - t0)

    summary = {"tiny": args.tiny, "budget_s": args.budget, "steps": {}}
    py = sys.executable
    # ---- 1. machine and benchmark
    info = subprocess.run(
        [
            py,
            "-c",
            "import json; from attnscale.bench.jax import machine_info;"
            " print(json.dumps(machine_info()))",
        ],
        capture_output=True,
        text=True,
        env=env(),
        cwd=REPO,
    )
    machine = json.loads(info.stdout) if info.returncode == 0 else {"error": info.stderr[-2000:]}
    why = gpu_missing(machine, args.tiny)
    if why is not None:  # not 9 minutes of paper-scale jobs on a CPU recorded as a GPU session
        print(why, file=sys.stderr)
        (out / "summary.json").write_text(json.dumps({**summary, "refused": why}, indent=2) + "\n")
        return 2
    bench = [
        py,
        "-m",
        "attnscale.bench.kernels",
        "--backend",
        "jax",
        "--out",
        str(out / "benchmark"),
    ]
    if args.tiny:
        bench.append("--tiny")
    rc = run(bench, min(240.0, 0.4 * left()), out / "benchmark.log")
    summary["steps"]["benchmark"] = rc
    bm = out / "benchmark" / "machine.json"
    if bm.is_file():
        machine["gemm_peak_gflops_float64"] = json.loads(bm.read_text())["gemm_peak_gflops_float64"]
    (out / "machine.json").write_text(json.dumps(machine, indent=2) + "\n")
    # ---- 2. paper scale, as much as fits
    tiny = ["tests/smoke.yaml", "tests/gpu_tiny.yaml"]
    configs = ["config/paper-scale.yaml"] + (tiny if args.tiny else [])
    first, figures = targets(merged_config(configs))
    if args.tiny:  # the figures its test checks; the others add jobs, not checks
        figures = [f for f in figures if f in TINY_FIGURES]
    work = copy_repo(Path(tempfile.mkdtemp(prefix="attnscale-gpu-")) / "repo")
    sm = [str(Path(py).parent / "snakemake"), "--configfile", *configs]
    wenv = env()
    wenv["PYTHONPATH"] = os.pathsep.join([str(work / "src"), os.environ.get("PYTHONPATH", "")])
    dry = subprocess.run(
        [*sm, "-n", "--quiet", "rules"], cwd=work, capture_output=True, text=True, env=wenv
    )
    sys.path.insert(0, str(REPO / "src"))
    from attnscale.pipeline.deps import jobs_to_run

    counts = jobs_to_run(dry.stdout)
    setres = [f"{r}:gpu=1" for r in GPU_RULES]
    common = [
        "--cores",
        str(args.cores),
        "--resources",
        "gpu=1",
        "--set-resources",
        *setres,
        "--keep-going",
        "--rerun-incomplete",
    ]
    ps = out / "paper-scale"
    ps.mkdir(exist_ok=True)
    rc1 = run(
        [*sm, *common, "--prioritize", *first, "--", *first],
        left() - 60.0,
        ps / "snakemake-first.log",
        cwd=work,
        environ=wenv,
    )
    rc2 = (
        run(
            [*sm, *common, "--", *figures],
            left() - 45.0,
            ps / "snakemake-figures.log",
            cwd=work,
            environ=wenv,
        )
        if left() > 90
        else None
    )
    summary["steps"]["paper_scale_first"] = rc1
    summary["steps"]["paper_scale_figures"] = rc2
    # ---- 3. collect
    for sub in ("results", "figures", "logs", "benchmarks"):
        if (work / sub).is_dir():
            shutil.copytree(work / sub, ps / sub, dirs_exist_ok=True)
    times = job_times(work)
    with open(ps / "job_times.csv", "w") as fh:
        fh.write("job,seconds\n" + "".join(f"{r['job']},{r['seconds']:.3f}\n" for r in times))  # noqa
    pats = benchmark_patterns()
    by_rule: dict[str, list[float]] = {}
    for r in times:
        rule = next((k for k, pat in pats.items() if pat.match(r["job"])), "unknown")
        r["rule"] = rule
        by_rule.setdefault(rule, []).append(r["seconds"])
    projection = {
        "note": "projection, not a measurement: mean measured seconds per job of a rule times its "
        "job count in the full DAG, summed over the rules measured in this run (jobs of one rule "
        "differ in size: the first jobs run are one chunk per d)",
        "job_counts": counts,
        "measured_mean_seconds": {k: sum(v) / len(v) for k, v in by_rule.items()},
    }
    projection["projected_job_seconds"] = sum(
        counts.get(k, 0) * v for k, v in projection["measured_mean_seconds"].items()
    )
    (ps / "projection.json").write_text(json.dumps(projection, indent=2) + "\n")
    done = [t for t in first if (work / t).is_file()]
    summary.update(
        first_targets=first,
        first_done=done,
        figures=figures,
        figures_done=sorted(p.name for p in (work / "figures").rglob("*.png")),
        elapsed_s=time.time() - t0,
        machine=machine,
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(
        json.dumps(
            {k: summary[k] for k in ("steps", "first_done", "figures_done", "elapsed_s")}, indent=2
        )
    )
    shutil.rmtree(work.parent, ignore_errors=True)
    return 0 if summary["steps"]["benchmark"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
