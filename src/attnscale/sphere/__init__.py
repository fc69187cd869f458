"""One query against n i.i.d. keys on the sphere S^{d-1}: Paper B's model (docs/paper-b.md,
docs/paper-b-beyond.md).

Key samplers, the closed forms and quadratures of Paper B, its Poisson and marked-Poisson limits
and the critical exponent.

Imports :mod:`attnscale.core`, :mod:`attnscale.backend` (the kernel backend of a job, for the
JAX twins), nothing else of attnscale (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
