# attnscale: reproduce and extend the figures of two papers on attention scaling.
#   Paper A: Chen, Lin, Polyanskiy, Rigollet (ICLR 2026), spec ../shared/spec/paper-a.md
#   Paper B: Bruno et al. (2026), spec ../shared/spec/paper-b.md
# Run everything:  snakemake --cores all        Smoke run:  snakemake --cores all --configfile tests/smoke.yaml


from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")
# validate() does not fill the defaults of $ref'd section schemas: fill them section by section
for _section in ("paper_a", "benchmark", "paper_b"):
    validate(config[_section], f"workflow/schemas/{_section}.schema.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/paper_a.smk"
include: "workflow/rules/paper_a_eta.smk"
include: "workflow/rules/benchmark.smk"
include: "workflow/rules/paper_b.smk"
include: "workflow/rules/paper_a_rules.smk"


rule all:
    default_target: True
    input:
        PAPER_A_TARGETS,
        PAPER_A_ETA_TARGETS,
        PAPER_B_TARGETS,
        PAPER_A_RULES_TARGETS,
