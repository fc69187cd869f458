"""Sampled rows (docs/long-context.md): lambda, eta and the theorem table's quantities from a
sample of ``m`` query rows, each row computed exactly against all its keys.

The row-sample design (:mod:`.rows`), pair means over a row sample and their standard errors
(:mod:`.pairs`), the sampled angle ratio lambda (:mod:`.angle_ratio`; the module is not named
``lambda``, a Python keyword), the sampled eta (:mod:`.eta`, its exact route :mod:`.eta_exact`),
three observables in one pass (:mod:`.observables`), the theorem table's statistics
(:mod:`.stats`) and the JAX twins (``*_jax``).
"""

__all__: list[str] = []
