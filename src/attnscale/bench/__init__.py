"""Benchmarks: the kernels against the GEMM peak measured in the same run, and the default run's
counted work against its measured time (docs/pipeline.md#pipeline-efficiency)."""

__all__: list[str] = []
