"""The phase-diagram explorer's data (issue 29; docs/explorer.md).

* :mod:`attnscale.experiments.explorer.grid`: the theory grid of ``beta*(n, d, rho)`` (entries of
  rules ``explorer_theory_nodes`` and ``explorer_heldout``) and its interpolant, the Python twin
  of the page's script (docs/_static/explorer.js);
* :mod:`attnscale.experiments.explorer.data`: the page's data document (entry of rule
  ``explorer_data``) and its publication into ``docs/``.

Publish a default run's data for the docs build::

    python -m attnscale.experiments.explorer publish

The package imports neither module, so that a rule's library closure (docs/pipeline.md#what-depends-on-what)
holds only the module it runs: editing the data module does not rerun the theory's jobs.
"""

__all__: list[str] = []
