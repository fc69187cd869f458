"""The workflow's plumbing: the adapter every rule runs, the checked configuration, the library
files a rule depends on, atomic I/O and provenance, job logging, the lineage of an output, the
rules' default resources and the scheduler fix (docs/pipeline.md).

Imports :mod:`attnscale.backend` (the adapter sets each job's kernel backend; the configuration
checks its name), nothing else of attnscale. The adapter loads the experiment or figure function
a rule names at run time, by its name and not by an import statement, so it sits below them
(docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
