# Findings (issue 21; docs/pipeline.md#numbers-in-the-prose): every number the documentation
# states about a result, computed from the summary tables of the figure families by one library
# function. Rule files hold rules only: inputs are the other rules' outputs, values come via params.


rule findings:
    """Findings of the run computed from its tables: results/findings.json (key -> value,
    SE, unit, source, what +- means) and its rendering results/findings.md."""
    input:
        lambda_critical=rules.paper_a_lambda_summary.output.critical,
        theorem=rules.paper_a_theorem_table_summary.output.csv,
        finite_size=rules.paper_a_finite_size_summary.output.csv,
        scaling_rules=rules.paper_a_scaling_rules_data.output.csv,
        phase=rules.paper_b_phase_diagram_figure.input.phase,
        poisson_limit=rules.paper_b_phase_diagram_figure.input.limit,
        profiles=rules.paper_b_profile_figure.input.csvs,
        critical_laws=rules.paper_b_critical_laws_figure.input.summary,
        heat_drift=rules.paper_b_heat_drift_summary.output.summary,
        heat_drift_curve=rules.paper_b_heat_drift_summary.output.curve,
        output_law=rules.paper_b_output_law_figure.input.summary,
        exponent_fits=rules.paper_b_exponent_fits.output.fits,
        exponent_points=rules.paper_b_exponent_fits.output.points,
        transition=rules.finite_d_transition_figure.input.data,
        transition_theory=rules.finite_d_transition_figure.input.theory,
        intermediate=rules.finite_d_intermediate_figure.input.data,
        eta_check=ETA_CHECK_TABLES,
        # the per-draw tables (the figure reads their summary, which the findings do not use)
        causal_lambda=rules.causal_summary.input.data,
        causal_self_weight=rules.causal_summary.input.self_weight,
        rules_simulated=rules.causal_rules_simulated_summary.input.data,
        learned_curves=rules.realistic_learned_qk_figure.input.curves,
        learned_critical=rules.realistic_learned_qk_figure.input.critical,
        sink_curves=rules.realistic_sink_summary.input.curves,
        sink_critical=rules.realistic_sink_summary.input.critical,
        depth=rules.realistic_depth_summary.input.data,
        regimes_table=rules.regimes_summary.output.table,
        regimes_read_off=rules.regimes_summary.output.read_off,
        regimes_simulations=rules.regimes_summary.input.simulations,
        regimes_exponent=rules.regimes_summary.output.exponent,
        regimes_rem_orders=rules.regimes_theory.output.rem_orders,
        sharpness_transitions=rules.sharpness_summary.output.transitions,
        sharpness_trends=rules.sharpness_summary.output.trends,
        sharpness_curves=rules.sharpness_summary.output.curves,
        sharpness_calibration=CALIBRATION_TABLES,
        sharpness_fixed_norm=FIXED_NORM_TABLES,
        z0_spread=Z0_SPREAD_TABLES,
        transformer_heads=rules.transformer_summary.output.heads,
        transformer_layers=rules.transformer_summary.output.layers,
        transformer_global=rules.transformer_summary.output.global_,
        transformer_calibration=rules.transformer_summary.output.calibration,
        transformer_definitions=rules.transformer_summary.output.definitions,
        transformer_positions=rules.transformer_summary.output.positions,
        transformer_widths=rules.transformer_widths_figure.input.widths,
        training_summary=rules.training_retrieval_summary.output.summary,
        training_comparisons=rules.training_retrieval_summary.output.comparisons,
        training_theory=rules.training_retrieval_summary.output.theory,
        training_lm_summary=rules.training_lm_summary.output.summary,
        training_lm_comparisons=rules.training_lm_summary.output.comparisons,
        training_probes_summary=rules.training_lm_probes_summary.output.summary,
        training_heads_summary=rules.training_retrieval_probes_summary.output.summary,
        training_heads_critical=rules.training_retrieval_probes_summary.output.critical,
        lib=lib("experiments.findings"),
    output:
        json="results/findings.json",
        md="results/findings.md",
    log:
        "logs/findings.log",
    benchmark:
        "benchmarks/findings.tsv"
    conda:
        "../../envs/environment.yaml"
    params:
        entry="experiments.findings:findings",
        configuration=CONFIG_SOURCE,
    script:
        ENTRY
