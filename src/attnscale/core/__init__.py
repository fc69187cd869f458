"""Shared by every other package: argument checks (:mod:`attnscale.core.validation`), random
streams derived from a job's identity (:mod:`attnscale.core.seeding`), the mean over draws with its
standard error (:mod:`attnscale.core.stats`, docs/pipeline.md#statistics), Brent's root finder
without SciPy's optimize package (:mod:`attnscale.core.roots`), and two quadratures used on both
sides of the library: the Gauss-Legendre rules (:mod:`attnscale.core.quadrature`) and the
Laplace-identity integral (:mod:`attnscale.core.laplace`); the row softmax
(:mod:`attnscale.core.softmax`).

Imports nothing else of attnscale (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
