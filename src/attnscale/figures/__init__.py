"""The function behind every plot rule (a matplotlib figure from figure data) and the figure
style; a plot function reads figure data only: fits and reductions over draws are compute rules
(docs/pipeline.md#adding-a-figure).

Imports :mod:`attnscale.layer` and :mod:`attnscale.sphere` (closed-form theory lines) and
nothing else of attnscale (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
