# attnscale: reproduce and extend the figures of two papers on attention scaling.
#   Paper A: Chen, Lin, Polyanskiy, Rigollet (ICLR 2026), docs/paper-a.md
#   Paper B: Bruno et al. (2026), docs/paper-b.md
# Run everything:  snakemake --cores all        Smoke run:  snakemake --cores all --configfile tests/smoke.yaml
# Every rule calls one library function through workflow/scripts/entry.py (docs/pipeline.md).
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")
sys.path.insert(0, str(Path(workflow.basedir) / "src"))  # this checkout's library first


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/paper_a.smk"
include: "workflow/rules/paper_a_eta.smk"
include: "workflow/rules/benchmark.smk"
include: "workflow/rules/paper_b.smk"
include: "workflow/rules/paper_b_limits.smk"
include: "workflow/rules/paper_a_scaling_rules.smk"
include: "workflow/rules/finite_d.smk"
include: "workflow/rules/finite_d_eta.smk"
include: "workflow/rules/causal.smk"
include: "workflow/rules/realistic.smk"
include: "workflow/rules/paper_b_exponent.smk"
include: "workflow/rules/regimes.smk"
include: "workflow/rules/sharpness.smk"
include: "workflow/rules/sharpness_fixed_norm.smk"
include: "workflow/rules/transformer.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/training_heads.smk"
include: "workflow/rules/explorer.smk"
include: "workflow/rules/findings.smk"


rule all:
    default_target: True
    input:
        rules.paper_a_lambda_figure.output,
        expand(rules.paper_a_grid_figure.output, observable=GRID_OBSERVABLES),
        rules.paper_a_critical_check_figure.output,
        rules.paper_a_eta_figure.output,
        rules.paper_a_theorem_table_figure.output,
        rules.paper_a_finite_size_figure.output,
        rules.paper_a_scaling_rules_figure.output,
        rules.finite_d_transition_figure.output,
        rules.finite_d_intermediate_figure.output,
        rules.causal_figure.output,
        rules.causal_rules_simulated_figure.output,
        rules.realistic_learned_qk_figure.output,
        rules.realistic_sink_figure.output,
        rules.realistic_depth_figure.output,
        rules.paper_b_vector_fields_figure.output,
        rules.paper_b_phase_diagram_figure.output,
        rules.paper_b_profile_figure.output,
        rules.paper_b_critical_laws_figure.output,
        rules.paper_b_heat_drift_figure.output,
        rules.paper_b_output_law_figure.output,
        rules.paper_b_exponent_figure.output,
        rules.paper_b_exponent_rope_figure.output,
        rules.regimes_figure.output,
        rules.sharpness_figure.output,
        rules.transformer_phase_figure.output,
        rules.transformer_curves_figure.output,
        rules.transformer_widths_figure.output,
        rules.training_retrieval_figure.output,
        rules.training_lm_figure.output,
        rules.training_lm_probes_figure.output,
        rules.training_heads_figure.output,
        rules.explorer_data.output,
        rules.findings.output,
