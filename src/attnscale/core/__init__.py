"""Shared by every other package: argument checks (:mod:`attnscale.core.validation`), random
streams derived from a job's identity (:mod:`attnscale.core.seeding`) and the mean over draws
with its standard error (:mod:`attnscale.core.stats`, docs/pipeline.md#statistics).

Imports nothing else of attnscale (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
