# Benchmark suite (not part of `all`): snakemake --cores all benchmark_suite


rule benchmark_suite:
    """Kernels against the machine's GEMM/exp throughput; time and memory against n."""
    input:
        lib=lib("bench.kernels"),
    output:
        csv="results/benchmarks/suite.csv",
        md="results/benchmarks/suite.md",
        machine="results/benchmarks/machine.json",
    log:
        "logs/benchmarks/suite.log",
    benchmark:
        "benchmarks/benchmark_suite.tsv"
    conda:
        "../../envs/environment.yaml"
    threads: 2
    resources:
        mem_mb=6000,
        runtime=30,
    params:
        entry="bench.kernels:suite",
        lambda_n=CFG.get("benchmark.lambda.n"),
        lambda_d=CFG.get("benchmark.lambda.d"),
        lambda_gammas=CFG.get("benchmark.lambda.gammas"),
        eta_n=CFG.get("benchmark.eta.n"),
        eta_d=CFG.get("benchmark.eta.d"),
        eta_probes=CFG.get("benchmark.eta.probes"),
        scaling_ns=CFG.ints("benchmark.scaling.n"),
        scaling_d=CFG.get("benchmark.scaling.d"),
    script:
        ENTRY


rule benchmark_sampled:
    """Row-sampled lambda and eta at long contexts against the same run's GEMM peak
    (docs/long-context.md#benchmark)."""
    input:
        lib=lib("bench.sampled"),
    output:
        csv="results/benchmarks/sampled/sampled.csv",
        md="results/benchmarks/sampled/sampled.md",
        machine="results/benchmarks/sampled/machine.json",
    log:
        "logs/benchmarks/sampled.log",
    benchmark:
        "benchmarks/benchmark_sampled.tsv"
    conda:
        "../../envs/environment.yaml"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        entry="bench.sampled:suite",
        ns=CFG.ints("benchmark.sampled.n"),
        ds=CFG.ints("benchmark.sampled.d"),
        m=CFG.value("benchmark.sampled.m"),
        gammas=CFG.value("benchmark.sampled.gammas"),
        max_gib=CFG.value("benchmark.sampled.max_gib"),
    script:
        ENTRY


rule benchmark_training:
    """Benchmark suite (not part of `all`): one retrieval and one language-model training step
    at the configured sizes against the same run's float32 GEMM peak (docs/training.md#cost-measured-2026-12-03-shared-2-core-machine; issue 44).
    """
    input:
        lib=lib("bench.training"),
    output:
        csv="results/benchmarks/training/steps.csv",
        md="results/benchmarks/training/steps.md",
    log:
        "logs/benchmarks/training.log",
    conda:
        "../../envs/environment.yaml"
    threads: 2
    params:
        entry="bench.training:suite",
        retrieval={
            k: CFG.value(f"training.retrieval.{k}")
            for k in ("d", "heads", "keys", "values", "n_min", "n_train", "batch")
        },
        lm={
            k: CFG.value(f"training.lm.{k}")
            for k in ("d", "heads", "layers", "context", "batch")
        },
    script:
        ENTRY
