"""Defaults of every rule, stated once (docs/pipeline.md#rule-anatomy).

A rule of the workflow states ``threads`` and ``resources`` only where they differ from the
defaults: ``threads`` is Snakemake's own default, 1 (every job limits BLAS to its rule's threads,
:func:`attnscale.pipeline.runtime.job`), and ``mem_mb``/``runtime`` come from
``RULE_DEFAULTS`` in ``workflow/rules/common.smk`` through :func:`install`.

Snakemake copies its default resources into each rule when the rule is defined, then applies the
rule's own ``resources:`` and the command line's ``--set-resources`` on top. :func:`install`,
called by ``common.smk`` before the first rule, puts the workflow's defaults into that copy, above
``--default-resources`` and ``default-resources`` of a profile. So a rule gets exactly what it
would get if it stated the defaults itself: its own values win, ``--set-resources RULE:mem_mb=...``
wins over both, and ``--default-resources slurm_partition=... slurm_account=...`` (which replaces a
profile's whole list, docs/pipeline.md#scaling-out) loses nothing.
"""

from __future__ import annotations

__all__ = ["install"]


def install(workflow, resources: dict) -> None:
    """Make ``resources`` (name -> value, e.g. ``{"mem_mb": 1000, "runtime": 5}``) the resources
    of every rule that ``workflow`` (Snakemake's ``workflow`` object of a Snakefile) defines after
    this call and that does not state them itself.

    Raises
    ------
    RuntimeError
        Snakemake keeps its parsed default resources elsewhere than the pinned version does
        (``ResourceSettings._parsed_default_resources``, Snakemake 9); the rules would otherwise
        run without memory and time limits on a cluster.
    ValueError
        A value is not a positive number.
    """
    for name, value in resources.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"rule default {name} must be a number > 0; got {value!r}")
    from snakemake.resources import Resources

    settings = getattr(workflow, "resource_settings", None)
    parsed = getattr(settings, "_parsed_default_resources", None)
    if not isinstance(parsed, Resources):
        raise RuntimeError(
            "attnscale: cannot set the rule defaults (threads, mem_mb, runtime) with this "
            "Snakemake version; use the version pinned in envs/requirements.txt "
            "(docs/pipeline.md#rule-anatomy)"
        )
    parsed.update(Resources.from_mapping(dict(resources)))
