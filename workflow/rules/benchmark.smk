# Benchmark suite (not part of `all`): snakemake --cores all benchmark_suite


rule benchmark_suite:
    """Kernels against the machine's GEMM/exp throughput; time and memory against n."""
    input:
        lib=lib("benchmark", "attention", "jacobian", "tokens", "keys"),
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
        lambda_n=config["benchmark"]["lambda"]["n"],
        lambda_d=config["benchmark"]["lambda"]["d"],
        lambda_gammas=config["benchmark"]["lambda"]["gammas"],
        eta_n=config["benchmark"]["eta"]["n"],
        eta_d=config["benchmark"]["eta"]["d"],
        eta_probes=config["benchmark"]["eta"]["probes"],
        scaling_ns=config["benchmark"]["scaling"]["n"],
        scaling_d=config["benchmark"]["scaling"]["d"],
    script:
        "../scripts/benchmark_suite.py"
