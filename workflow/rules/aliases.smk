# Old rule names (issue 26, docs/pipeline.md#rule-names): each is a target-only rule whose input
# is the renamed rule's output, so `snakemake --cores all paper_a_figure1` builds what it always
# built (and nothing else). Not part of `all`; no job of its own runs (no script).

#: old rule name -> the rule's name now
RENAMED_RULES = {
    "paper_a_figure1": "paper_a_lambda_figure",
    "paper_a_critical_check": "paper_a_critical_check_figure",
    "paper_a_figure2": "paper_a_eta_figure",
    "paper_a_theorem_table_data": "paper_a_theorem_table_summary",
    "paper_a_theorem_table": "paper_a_theorem_table_figure",
    "paper_a_finite_size_data": "paper_a_finite_size_summary",
    "paper_a_finite_size": "paper_a_finite_size_figure",
    "paper_a_scaling_rules": "paper_a_scaling_rules_figure",
    "paper_b_plot_vector_fields": "paper_b_vector_fields_figure",
    "paper_b_plot_phase_diagram": "paper_b_phase_diagram_figure",
    "paper_b_plot_profile": "paper_b_profile_figure",
    "paper_b_plot_critical_laws": "paper_b_critical_laws_figure",
    "paper_b_plot_heat_drift": "paper_b_heat_drift_figure",
    "paper_b_plot_output_law": "paper_b_output_law_figure",
    "paper_b_rope_figure": "paper_b_exponent_rope_figure",
    "finite_d_transition": "finite_d_transition_figure",
    "finite_d_intermediate": "finite_d_intermediate_figure",
    "regimes_table": "regimes_summary",
}

for _old, _new in RENAMED_RULES.items():

    rule:
        """Old name of a renamed rule; builds that rule's outputs (docs/pipeline.md#rule-names)."""
        name:
            _old
        input:
            getattr(rules, _new).output,
        localrule: True
