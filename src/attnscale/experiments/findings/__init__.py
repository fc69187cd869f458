"""Findings computed from the results tables (rule ``findings``; docs/pipeline.md#numbers-in-the-prose).

:func:`findings` is the entry function of the rule: it takes the summary tables of every figure
family, runs one small function per family (``paper_a``, ``paper_b``, ``exponent``,
``finite_d``, ``causal``, ``realistic``, ``regimes``, ``sharpness``, ``transformer``, and ``theory_points``: the
library's theory at the points the theory pages discuss) and returns the JSON document
(``results/findings.json``: key -> value, standard error, unit, source tables, what "+-" means)
and its Markdown rendering (``results/findings.md``, published as ``docs/findings.md``). Every number is computed from the
tables; a family whose tables lack a grid point reports that finding as "not computed at this
configuration", so the same keys exist at every configuration (the smoke run included).

``python -m attnscale.experiments.findings publish`` copies a run's findings into ``docs/``.
"""

from __future__ import annotations

import pandas as pd

from attnscale.experiments.findings import (
    causal,
    exponent,
    finite_d,
    finite_d_eta,
    paper_a,
    paper_b,
    quadrature,
    realistic,
    regimes,
    sharpness,
    sharpness_baseline,
    sharpness_fixed_norm,
    theory_points,
    training,
    training_heads,
    transformer,
    transformer_definitions,
)
from attnscale.experiments.findings.record import SCHEMA, frame, render_markdown

__all__ = [
    "SECTIONS",
    "document",
    "findings",
]

#: The page's sections: id, title, figure, theory page, and the function with its inputs.
SECTIONS = [
    (
        "paper-a-critical",
        "Paper A: lambda at the critical line",
        "figures/paper_a/lambda_critical_check.png",
        "paper-a.md#gaussian-near-simplex-tokens",
        paper_a.critical_lambda_findings,
        {"critical": "lambda_critical"},
    ),
    (
        "paper-a-theorems",
        "Paper A: theorem table (simplex and finite-d theory)",
        "figures/paper_a/theorem_table.png",
        "finite-d.md#mean-field-for-cosine-and-lambda",
        paper_a.theorem_findings,
        {"theorem": "theorem"},
    ),
    (
        "paper-a-finite-size",
        "Paper A: critical values against n",
        "figures/paper_a/finite_size.png",
        "paper-a.md#gaussian-near-simplex-tokens",
        paper_a.finite_size_findings,
        {"finite_size": "finite_size"},
    ),
    (
        "paper-a-simplex",
        "Paper A: the finite-n simplex map at the points the docs discuss",
        "figures/paper_a/theorem_table.png",
        "paper-a.md#finite-n-simplex-map",
        theory_points.simplex_findings,
        {"critical": "lambda_critical", "theorem": "theorem"},
    ),
    (
        "scaling-rules",
        "Scaling rules of real models (calibration A)",
        "figures/paper_a/scaling_rules.png",
        "scaling-rules.md#calibration-a",
        paper_a.scaling_rules_findings,
        {"rules": "scaling_rules"},
    ),
    (
        "paper-b-phase",
        "Paper B: phase diagram of the top weight",
        "figures/paper_b/phase_diagram.png",
        "paper-b.md#poisson-limit",
        paper_b.phase_findings,
        {"phase": "phase", "limit": "poisson_limit"},
    ),
    (
        "paper-b-profile",
        "Paper B: subcritical profile",
        "figures/paper_b/weight_profile.png",
        "paper-b.md#subcritical-profile",
        paper_b.profile_findings,
        {"profiles": "profiles"},
    ),
    (
        "paper-b-laws",
        "Paper B: critical laws",
        "figures/paper_b/critical_laws.png",
        "paper-b.md#poisson-limit",
        paper_b.critical_laws_findings,
        {"laws": "critical_laws"},
    ),
    (
        "paper-b-drift",
        "Paper B: heat-equation drift",
        "figures/paper_b/heat_drift.png",
        "paper-b.md#heat-equation-drift",
        paper_b.heat_drift_findings,
        {"summary": "heat_drift", "curve": "heat_drift_curve"},
    ),
    (
        "paper-b-output-law",
        "Paper B: critical output law",
        "figures/paper_b/output_law.png",
        "paper-b-beyond.md#critical-output-law",
        paper_b.output_law_findings,
        {"summaries": "output_law"},
    ),
    (
        "critical-exponent",
        "Critical exponent of beta*(n): uniform keys, sub-spheres, RoPE",
        "figures/paper_b_exponent/exponent.png",
        "paper-b-beyond.md#critical-exponent-across-dimensions",
        exponent.exponent_findings,
        {"fits": "exponent_fits", "points": "exponent_points"},
    ),
    (
        "finite-d-transition",
        "Finite d: where the transition is",
        "figures/finite_d/transition.png",
        "finite-d.md#where-each-approximation-fails",
        finite_d.transition_findings,
        {"data": "transition", "theory": "transition_theory"},
    ),
    (
        "finite-d-points",
        "Finite d: the theory at the points the docs discuss",
        "figures/finite_d/transition.png",
        "finite-d.md#finite-d-critical-point",
        theory_points.finite_d_points_findings,
        {"theory": "transition_theory"},
    ),
    (
        "finite-d-eta-quadrature",
        "Finite d: the quadrature error of eta's mean field",
        "figures/paper_a/figure2_eta.png",
        "finite-d.md#mean-field-for-eta",
        quadrature.quadrature_findings,
        {"theory": "transition_theory"},
    ),
    (
        "finite-d-eta-check",
        "Finite d: eta's mean field against the exact eta",
        None,
        "finite-d.md#mean-field-eta-against-the-exact-eta",
        finite_d_eta.eta_check_findings,
        {"data": "eta_check"},
    ),
    (
        "finite-d-intermediate",
        "Finite d: the intermediate phase",
        "figures/finite_d/intermediate.png",
        "finite-d.md#finite-d-critical-point",
        finite_d.intermediate_findings,
        {"data": "intermediate"},
    ),
    (
        "causal",
        "Causal mask: global against per-position scaling",
        "figures/realistic/causal.png",
        "realistic-attention.md#causal-mask",
        causal.causal_findings,
        {"data": "causal_lambda", "self_weight": "causal_self_weight"},
    ),
    (
        "rules-simulated",
        "Real models' scaling rules, simulated under a causal mask",
        "figures/realistic/rules_simulated.png",
        "realistic-attention.md#real-models-scaling-rules-simulated",
        causal.rules_simulated_findings,
        {"data": "rules_simulated"},
    ),
    (
        "learned-qk",
        "Learned query-key matrix",
        "figures/realistic/learned_qk.png",
        "realistic-attention.md#learned-query-key-matrix",
        realistic.learned_qk_findings,
        {"curves": "learned_curves", "critical": "learned_critical"},
    ),
    (
        "sink",
        "Attention sink",
        "figures/realistic/sink.png",
        "realistic-attention.md#attention-sink",
        realistic.sink_findings,
        {"curves": "sink_curves", "critical": "sink_critical"},
    ),
    (
        "depth",
        "Depth",
        "figures/realistic/depth.png",
        "realistic-attention.md#depth",
        realistic.depth_findings,
        {"data": "depth"},
    ),
    (
        "regimes",
        "Regimes of the critical scale: gap, REM, finite d, near-ties",
        "figures/regimes/critical_scale.png",
        "regimes.md#results",
        regimes.regimes_findings,
        {
            "table": "regimes_table",
            "read_off": "regimes_read_off",
            "simulations": "regimes_simulations",
            "exponent": "regimes_exponent",
            "rem_orders": "regimes_rem_orders",
        },
    ),
    (
        "sharpness",
        "Transition sharpness against context length",
        "figures/sharpness/sharpness.png",
        "long-context.md#transition-sharpness-against-context-length",
        sharpness.sharpness_findings,
        {
            "transitions": "sharpness_transitions",
            "trends": "sharpness_trends",
            "curves": "sharpness_curves",
        },
    ),
    (
        "sharpness-baseline",
        "The width's slope over a long baseline, and the widths against the theory jointly",
        "figures/sharpness/rows/width.png",
        "long-context.md#the-width-explained",
        sharpness_baseline.baseline_findings,
        {"transitions": "sharpness_transitions"},
    ),
    (
        "sharpness-fixed-norm",
        "The widths on fixed-norm tokens against the finite-d theory's",
        None,
        "long-context.md#the-width-on-fixed-norm-tokens",
        sharpness_fixed_norm.fixed_norm_findings,
        {"data": "sharpness_fixed_norm"},
    ),
    (
        "sharpness-calibration",
        "Calibration of the crossing SEs",
        None,
        "long-context.md#calibration-of-the-crossing-ses",
        sharpness.calibration_findings,
        {"calibration": "sharpness_calibration"},
    ),
    (
        "variance-reduction",
        "Variance reduction at long contexts: the common component's norm",
        None,
        "long-context.md#variance-reduction",
        paper_a.variance_reduction_findings,
        {"z0_spread": "z0_spread"},
    ),
    (
        "transformer",
        "A real transformer: every head of all-MiniLM-L6-v2 on the phase diagram",
        "figures/transformer/phase.png",
        "real-transformer.md#findings",
        transformer.transformer_findings,
        {
            "heads": "transformer_heads",
            "layers": "transformer_layers",
            "global_": "transformer_global",
            "calibration": "transformer_calibration",
        },
    ),
    (
        "transformer-definitions",
        "A real transformer: s* under three definitions, transition widths, query positions",
        "figures/transformer/widths.png",
        "real-transformer.md#findings",
        transformer_definitions.definition_findings,
        {
            "heads": "transformer_heads",
            "definitions": "transformer_definitions",
            "positions": "transformer_positions",
            "widths": "transformer_widths",
        },
    ),
    (
        "training",
        "Does the log n rule help a trained model? (retrieval)",
        "figures/training/retrieval.png",
        "training.md#findings",
        training.retrieval_findings,
        {
            "summary": "training_summary",
            "comparisons": "training_comparisons",
            "theory": "training_theory",
        },
    ),
    (
        "training-lm",
        "Does the log n rule help a trained model? (language model)",
        "figures/training/lm.png",
        "training.md#findings",
        training.lm_findings,
        {"summary": "training_lm_summary", "comparisons": "training_lm_comparisons"},
    ),
    (
        "training-probes",
        "Does the log n rule help a trained model? (the trained heads on the phase diagram)",
        "figures/training/probes.png",
        "training.md#the-trained-heads-on-the-phase-diagram",
        training.probe_findings,
        {"summary": "training_probes_summary"},
    ),
    (
        "training-heads",
        "Does the log n rule help a trained model? (the retrieval heads; the critical scale)",
        "figures/training/heads.png",
        "training.md#the-retrieval-heads-on-the-phase-diagram",
        training_heads.heads_findings,
        {"summary": "training_heads_summary", "critical": "training_heads_critical"},
    ),
]


def _provenance(tables: dict, configuration: str) -> dict:
    """Commit, version and root seed recorded in the input tables (sorted, distinct)."""
    seen = {"git_commit": set(), "attnscale_version": set(), "root_seed": set()}
    for t in tables.values():
        for df in t if isinstance(t, list) else [t]:
            for col, vals in seen.items():
                if col in df.columns:
                    vals.update(str(v) for v in df[col].dropna().unique())
    return {
        "configuration": configuration,
        "git_commit": sorted(seen["git_commit"]),
        "attnscale_version": ", ".join(sorted(seen["attnscale_version"])) or "unknown",
        "root_seed": ", ".join(sorted(seen["root_seed"])) or "unknown",
    }


def document(tables: dict, configuration: str) -> dict:
    """The findings document (JSON-ready) from the loaded tables, keyed like :data:`SECTIONS`'
    input names; a section whose inputs are all empty lists (a family the configuration does not
    run, such as the calibration outside config/long-context.yaml) is left out."""
    sections, entries = [], {}
    for sid, title, figure, doc, fn, inputs in SECTIONS:
        if all(isinstance(tables[n], list) and not tables[n] for n in inputs.values()):
            continue  # a family the configuration does not run (its inputs are empty lists)
        found = fn(**{arg: tables[name] for arg, name in inputs.items()})
        for f in found:
            if f.key in entries:
                raise ValueError(f"duplicate finding key {f.key!r}")
            entries[f.key] = f.to_json(sid)
        sections.append(
            {
                "id": sid,
                "title": title,
                "figure": figure,
                "doc": doc,
                "keys": [f.key for f in found],
            }
        )
    return {
        "schema": SCHEMA,
        "source": _provenance(tables, configuration),
        "sections": sections,
        "findings": entries,
    }


def findings(
    *,
    lambda_critical: pd.DataFrame,
    theorem: pd.DataFrame,
    finite_size: pd.DataFrame,
    scaling_rules: pd.DataFrame,
    phase: pd.DataFrame,
    poisson_limit: pd.DataFrame,
    profiles: list,
    critical_laws: list,
    heat_drift: pd.DataFrame,
    heat_drift_curve: pd.DataFrame,
    output_law: list,
    exponent_fits: pd.DataFrame,
    exponent_points: pd.DataFrame,
    transition: list,
    transition_theory: pd.DataFrame,
    intermediate: list,
    eta_check: list,
    causal_lambda: list,
    causal_self_weight: list,
    rules_simulated: list,
    learned_curves: list,
    learned_critical: list,
    sink_curves: list,
    sink_critical: list,
    depth: list,
    regimes_table: pd.DataFrame,
    regimes_read_off: pd.DataFrame,
    regimes_simulations: list,
    regimes_exponent: pd.DataFrame,
    regimes_rem_orders: pd.DataFrame,
    sharpness_transitions: pd.DataFrame,
    sharpness_trends: pd.DataFrame,
    sharpness_curves: pd.DataFrame,
    sharpness_calibration: list,
    sharpness_fixed_norm: list,
    z0_spread: list,
    transformer_heads: pd.DataFrame,
    transformer_layers: pd.DataFrame,
    transformer_global: pd.DataFrame,
    transformer_calibration: pd.DataFrame,
    transformer_definitions: pd.DataFrame,
    transformer_positions: pd.DataFrame,
    transformer_widths: list,
    training_summary: pd.DataFrame,
    training_comparisons: pd.DataFrame,
    training_theory: pd.DataFrame,
    training_lm_summary: pd.DataFrame,
    training_lm_comparisons: pd.DataFrame,
    training_probes_summary: pd.DataFrame,
    training_heads_summary: pd.DataFrame,
    training_heads_critical: pd.DataFrame,
    configuration: str,
) -> dict:
    """Entry of rule ``findings``: every finding of the run, computed from its tables.

    Parameters
    ----------
    lambda_critical, theorem, finite_size, scaling_rules, ... : DataFrame or list of DataFrame
        The summary tables of the figure families (the rule's inputs; see
        ``workflow/rules/findings.smk`` for the files).
    configuration : str
        The configuration files of the run (shown in the page's header).

    Returns
    -------
    dict
        ``{"json": document, "md": page}``: the JSON document of :func:`document` and its
        rendering by :func:`attnscale.experiments.findings.record.render_markdown`.
    """
    tables = {k: v for k, v in locals().items() if k != "configuration"}
    tables = {k: (v if isinstance(v, list) else frame(v)) for k, v in tables.items()}
    doc = document(tables, configuration)
    return {"json": doc, "md": render_markdown(doc)}
