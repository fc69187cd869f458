"""The workflow's plumbing: the adapter every rule runs, the checked configuration, the library
files a rule depends on, atomic I/O and provenance, job logging, the lineage of an output, the
rules' default resources and the scheduler fix (docs/pipeline.md). Imports only :mod:`attnscale.core` statically; the adapter
loads the experiment or figure function a rule names at run time
(docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
