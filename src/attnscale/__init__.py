"""attnscale: numerics for attention scaling in long-context transformers.

The folder tree is the architecture (docs/pipeline.md#the-package-layout). A package imports only
packages above it in this list, not another one of its floor (core and backend, layer and
sphere, the four of regimes, pipeline, transformer, training, figures and bench), and
:mod:`attnscale._moved` (old module paths):

core
    argument checks, random streams from a job's identity, the mean and its standard error,
    Gauss-Legendre rules, the Laplace-identity integral and Brent's root finder
backend
    the kernel backend (numpy or JAX) of a job and its memory sizing
layer
    one attention layer over n tokens: Paper A, the finite-d theory, causal masks, learned
    scores, sinks, depth, the scaling rules of real models
sphere
    one query against n keys on the sphere: Paper B and its limits
regimes
    what sets the order of the critical scale: score models (gap, near-ties, the random-energy
    model), their samplers and the top-group weight
transformer
    a pretrained transformer on the phase diagram: model loader, architecture adapters (the
    float64 forward pass), real text, the multiplier probes of every head, the block bootstrap
training
    attention models trained with and without the log n rule: tasks, the causal decoder and its
    adapter, the trainer, hashed checkpoints, evaluation, the theory's predicted curves
pipeline
    the workflow's plumbing: adapter, configuration, dependencies, I/O, lineage
experiments
    the function behind every compute rule (tables)
figures
    the function behind every plot rule (figures), and the figure style
bench
    benchmarks against the GEMM peak measured in the same run

The command line ``attnscale`` (:mod:`attnscale.cli`, docs/ask-the-theory.md) is a top-level
module outside this list: it imports ``layer`` only, and no module imports it. Every public
module lists its public names in ``__all__`` (docs/pipeline.md#the-package-layout).

Old paths of the public API (docs/api.md#public-api) still import for one minor version, with a
DeprecationWarning naming the new home (:mod:`attnscale._moved`, the one deprecation mechanism;
CHANGELOG.md lists what moved).
"""

from attnscale import _moved

__all__: list[str] = []

__version__ = "0.2.0"

_moved.install()
