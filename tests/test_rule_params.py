"""Every value a rule's code uses reaches it through ``params:`` (docs/pipeline.md#rule-anatomy).

Snakemake reruns a job when its params change, so a configuration value that reaches the code
any other way is a value whose change reruns nothing. Four checks, each with a negative control:

1. every keyword an entry function receives is an input or a param of its rule, and every
   keyword it needs is given (the adapter passes inputs and params and nothing else);
2. every wildcard of a rule reaches its entry function through a param (the job's identity is
   stated, e.g. ``n``/``d`` of ``paper_a_lambda``, and checked against its inputs);
3. configuration (``CFG``, ``config``, ``ROOT_SEED``, ...) in a rule body sits in ``params:``, or in
   ``input:`` and ``resources:``, which choose files and scheduling, not values;
4. the adapter reads no configuration key but ``backend`` and ``backend_memory_gb``, which choose
   how a job computes (numpy or JAX, the memory plan), not what (docs/gpu.md: numpy is the
   reference and JAX matches it to 1e-10).

Rules are read from the parsed workflow (Snakemake's API, in a process forked from the warm
Snakemake process of tests/warm_snakemake.py, on a copy of the repository); the rule files' text
for check 3.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import textwrap

import pytest

from attnscale.pipeline.adapter import entry_function
from conftest import REPO, copy_repo, hermetic_env
from warm_snakemake import snakemake as warm_snakemake

pytestmark = pytest.mark.workflow

#: dump every rule of the parsed workflow: named inputs, wildcards, params (for a callable
#: param, the names its code uses), the entry and whether it runs
DUMP = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (ConfigSettings, OutputSettings, ResourceSettings,
                                          StorageSettings)

    def names(code):
        out = set(code.co_names)
        for c in code.co_consts:
            if hasattr(c, "co_names"):
                out |= names(c)
        return out

    work = Path(sys.argv[1])
    with SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                          config_settings=ConfigSettings(), storage_settings=StorageSettings(),
                          snakefile=work / "Snakefile", workdir=work)._workflow
        rules = [{"rule": r.name, "runs": not r.norun,
                  "inputs": [k for k, _ in r.input._allitems() if k],
                  "wildcards": sorted(r.wildcard_names),
                  "params": {k: sorted(names(v.__code__)) if callable(v) else None
                             for k, v in r.params.items()}}
                 for r in wf.rules]
    print(json.dumps(rules))
""")


@pytest.fixture(scope="module")
def workflow_rules(tmp_path_factory):
    work = copy_repo(tmp_path_factory.mktemp("rules") / "repo")
    # DUMP run from the warm Snakemake process (tests/warm_snakemake.py), with argv [.., work]
    proc = warm_snakemake(
        work, str(work), env=hermetic_env(work), code=DUMP, check=False, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rules = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len([r for r in rules if r["runs"]]) > 50
    return rules


def _entry(rule: dict) -> str:
    """The entry of a rule that runs (its params' ``entry``, a literal)."""
    text = "".join(p.read_text() for p in (REPO / "workflow/rules").glob("*.smk"))
    block = re.search(
        rf"^(?:rule {rule['rule']}:|use rule \w+ as {rule['rule']} with:)\n"
        r"(?:(?:    .*)?\n)*?        entry=\"([\w.:]+)\"",
        text,
        re.M,
    )
    if block is None:  # a `use rule` without its own params: the entry of the rule it reuses
        base = re.search(rf"^use rule (\w+) as {rule['rule']} with:", text, re.M).group(1)
        return _entry({"rule": base})
    return block.group(1)


def keyword_problems(fn, given: set[str]) -> list[str]:
    """What is wrong between an entry function's signature and the names a rule passes."""
    ps = inspect.signature(fn).parameters
    if any(p.kind == p.VAR_KEYWORD for p in ps.values()):
        return [f"{fn.__name__} takes **kwargs: the names it uses are not visible"]
    out = [f"passes {k!r}, which {fn.__name__} does not take" for k in sorted(given - set(ps))]
    out += [
        f"does not pass {k!r}, which {fn.__name__} needs"
        for k, p in ps.items()
        if k not in given and p.default is p.empty
    ]
    return out


def undeclared_wildcards(rule: dict) -> list[str]:
    """Wildcards of a rule that no param passes on (by name, or inside a param's function)."""
    used = set(rule["params"]) | {n for v in rule["params"].values() for n in (v or [])}
    return [w for w in rule["wildcards"] if w not in used]


def test_every_entry_keyword_comes_from_the_rules_inputs_and_params(workflow_rules):
    bad = []
    for rule in (r for r in workflow_rules if r["runs"]):
        given = (set(rule["inputs"]) - {"lib"}) | (set(rule["params"]) - {"entry"})
        bad += [
            f"{rule['rule']}: {p}" for p in keyword_problems(entry_function(_entry(rule)), given)
        ]
    assert not bad, "\n".join(bad)


def test_keyword_check_catches_a_missing_and_an_unknown_name():
    def entry(*, data, n, caption="x"):
        return data, n, caption

    assert keyword_problems(entry, {"data", "n"}) == []
    assert keyword_problems(entry, {"data", "d"}) == [
        "passes 'd', which entry does not take",
        "does not pass 'n', which entry needs",
    ]


def test_every_wildcard_reaches_the_entry_function_through_params(workflow_rules):
    bad = {r["rule"]: undeclared_wildcards(r) for r in workflow_rules if r["runs"]}
    assert not {k: v for k, v in bad.items() if v}


def test_wildcard_check_catches_a_job_identity_left_to_the_inputs():
    """Issue 26: ``paper_a_lambda`` read ``n`` and ``d`` from its token files only."""
    rule = {
        "wildcards": ["d", "n", "part"],
        "params": {"entry": None, "rhos": ["RHO_PARTS", "int", "part"], "gammas": None},
    }
    assert undeclared_wildcards(rule) == ["d", "n"]
    rule["params"]["n"] = ["int", "n"]
    assert undeclared_wildcards(rule) == ["d"]


#: where a rule may read configuration: params (values), input (which files), resources
#: (scheduling); a `use rule ... with:` restates params
ALLOWED = {"params", "input", "resources"}
CONFIG = re.compile(r"\b(CFG\.|config\b|ROOT_SEED\b|CONFIG_SOURCE\b|RHO_PARTS\b)")


def config_outside_params(text: str) -> list[str]:
    """``rule: directive`` for every configuration read in a rule body outside :data:`ALLOWED`
    (a rule's docstring, before its first directive, is prose)."""
    out, rule, directive = [], None, None
    for line in text.splitlines():
        head = re.match(r"^(?:rule (\w+):|use rule \w+ as (\w+) with:)", line)
        if head:
            rule, directive = head.group(1) or head.group(2), None
            continue
        if re.match(r"^\S", line):
            rule = None  # top-level code: helpers and constants, not a rule body
            continue
        m = re.match(r"^    (\w+):", line)
        if rule and m:
            directive = m.group(1)
        code = line.split("#")[0]
        if rule and directive is not None and directive not in ALLOWED and CONFIG.search(code):
            out.append(f"{rule}: {directive}")
    return out


def test_configuration_in_rule_bodies_sits_in_params_inputs_or_resources():
    bad = []
    for smk in sorted((REPO / "workflow/rules").glob("*.smk")):
        bad += [f"{smk.name}: {b}" for b in config_outside_params(smk.read_text())]
    assert not bad, bad


def test_configuration_check_catches_a_value_in_a_log_path():
    text = textwrap.dedent("""
        rule x:
            input:
                draws=token_draws(CFG.value("paper_a.trials")),
            log:
                f"logs/x_{CFG.value('paper_a.n')}.log",
            params:
                n=CFG.value("paper_a.n"),
    """)
    assert config_outside_params(text) == ["x: log"]


class _Recorded(dict):
    """A configuration that records every key read."""

    def __init__(self, *a):
        super().__init__(*a)
        self.read = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def test_the_adapter_reads_only_the_backend_keys_of_the_configuration(tmp_path):
    """A job's values come from its params; of the configuration the adapter reads only the
    backend choice (check 4 of the module doc), whatever the configuration holds."""
    from attnscale.pipeline.adapter import run_rule

    class NL(dict):
        def __getattr__(self, k):
            return self[k]

    cfg = _Recorded({"seed": 1, "paper_a": {"n": 8}, "backend": "numpy"})
    sm = type("SM", (), {})()
    sm.rule, sm.threads, sm.config = "paper_a_scaling_rules_data", 1, cfg
    sm.log = [str(tmp_path / "job.log")]
    sm.input, sm.output = NL(), NL(csv=str(tmp_path / "rules.csv"))
    sm.params = NL(
        entry="experiments.paper_a_scaling_rules:scaling_rules_data",
        ns=[1024.0, 4096.0],
        overlay_n=2048.0,
    )
    run_rule(sm)
    assert (tmp_path / "rules.csv").stat().st_size > 100
    assert cfg.read == {"backend", "backend_memory_gb"}


def test_the_adapter_refuses_a_table_without_its_provenance_columns(monkeypatch, tmp_path):
    """A results table without its provenance columns is refused, naming the rule and the columns
    (docs/pipeline.md#reliability-and-provenance); the job's provenance, added by the entry with
    ``with_job_provenance``, is the job's params hash and the seeds its inputs record."""
    import types

    import pandas as pd

    from attnscale.pipeline.adapter import call
    from attnscale.pipeline.io import job_provenance, params_hash, with_job_provenance

    mod = types.ModuleType("attnscale._provenance_probe")
    mod.bare = lambda *, x, root_seed: pd.DataFrame({"x": [x]})
    mod.stamped = lambda *, data: with_job_provenance(data[["x"]])
    mod.unseeded = lambda *, x, root_seed: pd.DataFrame({"x": [x], **job_provenance({})})
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    with pytest.raises(ValueError, match=r"rule 'probe'.*\['params_hash', 'attnscale_version'"):
        call("_provenance_probe:bare", {}, {"x": 1, "root_seed": 7}, "probe")
    seeded = tmp_path / "seeded.csv"
    pd.DataFrame({"x": [1], "root_seed": ["5"]}).to_csv(seeded, index=False)
    out = call("_provenance_probe:stamped", {"data": str(seeded)}, {}, "probe")
    assert list(out.columns) == ["x", "params_hash", "attnscale_version", "git_commit", "root_seed"]
    assert out["params_hash"].iloc[0] == params_hash({}) and out["root_seed"].iloc[0] == "5"
    with pytest.raises(ValueError, match=r"\['root_seed'\]"):  # a seeded job records its seed
        call("_provenance_probe:unseeded", {}, {"x": 1, "root_seed": 7}, "probe")
    assert "root_seed" not in job_provenance()  # outside a job: no params, no seeds
