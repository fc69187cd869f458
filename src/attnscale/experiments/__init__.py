"""The function behind every compute rule (a tidy table from tables, arrays and parameters), and
the findings computed from those tables (:mod:`attnscale.experiments.findings`;
docs/pipeline.md#how-a-rule-runs, docs/pipeline.md#numbers-in-the-prose).

Imports :mod:`attnscale.core`, :mod:`attnscale.layer`, :mod:`attnscale.sphere`,
:mod:`attnscale.regimes` (the score models of the regimes figure), :mod:`attnscale.transformer`
(the pretrained model and its probes), :mod:`attnscale.training` (trained models) and
:mod:`attnscale.pipeline` (I/O, provenance, progress logging), nothing else of attnscale (docs/pipeline.md#the-package-layout)."""

__all__: list[str] = []
