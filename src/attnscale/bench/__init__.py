"""Benchmarks: the kernels against the GEMM peak measured in the same run, and the default run's
counted work against its measured time (docs/pipeline.md#pipeline-efficiency).

Imports :mod:`attnscale.core`, :mod:`attnscale.backend`, :mod:`attnscale.layer`,
:mod:`attnscale.sphere`, :mod:`attnscale.pipeline`, :mod:`attnscale.training` (the training steps) and
:mod:`attnscale.experiments` (the rules'
work, counted from the configuration), nothing else of attnscale
(docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
