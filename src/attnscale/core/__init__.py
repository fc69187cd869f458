"""Shared by every other package: argument checks (:mod:`attnscale.core.validation`) and random
streams derived from a job's identity (:mod:`attnscale.core.seeding`). Imports nothing else of
attnscale (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
