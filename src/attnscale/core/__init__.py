"""Shared by every other package: argument checks (:mod:`attnscale.core.validation`), random
streams derived from a job's identity (:mod:`attnscale.core.seeding`) and Brent's root finder
without SciPy's optimize package (:mod:`attnscale.core.roots`). Imports nothing else of
attnscale (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
