"""One truth for what depends on what (docs/pipeline.md#what-depends-on-what).

Each rule's library inputs are computed when the workflow is parsed, from the imports of its
entry module and of the adapter (``attnscale.pipeline.deps``, an :mod:`ast` walk). These tests check them
against an independent computation (:mod:`modulefinder`, which scans byte code), for every rule
and every library module, and end to end: after a content change of a library file, a dry run
marks exactly the rules whose code imports it."""

from __future__ import annotations

import functools
import hashlib
import json
import modulefinder
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from attnscale.pipeline import deps
from conftest import REPO, SMOKE, snakemake

SRC = REPO / "src"
MODULES = sorted(
    ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
    for p in (SRC / "attnscale").rglob("*.py")
)


class _Finder(modulefinder.ModuleFinder):
    """:class:`modulefinder.ModuleFinder` that compiles each source file, and reads the imports
    of each code object from its byte code, once per session: a closure is computed for each of
    ~200 modules, and each walk would otherwise compile and scan again every module it reaches
    (~27 CPU-s of the ~28 this module took). Which modules it finds is modulefinder's own walk."""

    _compiled: dict[tuple[str, str], object] = {}  # (path, source) -> code object
    _opcodes: dict[object, list] = {}  # code object -> what scan_opcodes yields for it

    def load_module(self, fqname, fp, pathname, file_info):
        if file_info[2] != modulefinder._PY_SOURCE:
            return super().load_module(fqname, fp, pathname, file_info)
        key = (pathname, fp.read())
        if key not in self._compiled:
            self._compiled[key] = compile(key[1], pathname, "exec")
        m = self.add_module(fqname)  # as ModuleFinder.load_module does for a source file
        m.__file__ = pathname
        m.__code__ = self._compiled[key]
        self.scan_code(m.__code__, m)
        return m

    def scan_opcodes(self, co):
        if co not in self._opcodes:
            self._opcodes[co] = list(super().scan_opcodes(co))
        return iter(self._opcodes[co])


@functools.cache
def finder_closure(module: str) -> frozenset[str]:
    """attnscale modules reachable from ``module`` by imports, found by modulefinder (byte code
    of every function included; the search path holds only src/, so no third-party package is
    loaded)."""
    mf = _Finder(path=[str(SRC)])
    mf.import_hook(module)
    return frozenset(m for m in mf.modules if m == "attnscale" or m.startswith("attnscale."))


@pytest.mark.parametrize("module", MODULES)
def test_ast_closure_equals_modulefinder(module):
    assert set(deps.closure(module, SRC)) == finder_closure(module)


def test_closure_follows_relative_and_function_level_imports(tmp_path):
    pkg = tmp_path / "attnscale"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "def f():\n    from .sub import b\n    return b\n",
        "sub/__init__.py": "",
        "sub/b.py": "from .. import c\n",
        "c.py": "import numpy\n",
        "unused.py": "from . import a\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    got = deps.closure("attnscale.a", tmp_path)
    assert got == ("attnscale", "attnscale.a", "attnscale.c", "attnscale.sub", "attnscale.sub.b")
    assert deps.lib_files("a:f", src=tmp_path, root=tmp_path) == [
        "attnscale/__init__.py",
        "attnscale/a.py",
        "attnscale/c.py",
        "attnscale/sub/__init__.py",
        "attnscale/sub/b.py",
    ]
    with pytest.raises(ValueError, match="no module"):
        deps.lib_files("nope:f", src=tmp_path, root=tmp_path)


def test_import_cache_is_keyed_by_content_and_kept_between_processes(tmp_path):
    """The parsed imports are kept in ``.snakemake/attnscale-imports.json`` beside ``src``'s
    parent, by the SHA-256 of each file's bytes: a second process reads them instead of parsing,
    and an edited file (other bytes) is parsed afresh whatever its time stamp."""
    pkg = tmp_path / "src" / "attnscale"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("")
    (pkg / "c.py").write_text("")
    code = (
        "import sys; from pathlib import Path; from attnscale.pipeline import deps; "
        "print(','.join(deps.closure('attnscale.a', Path(sys.argv[1]))))"
    )
    run = [sys.executable, "-c", code, str(tmp_path / "src")]
    first = subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip()
    assert first == "attnscale,attnscale.a,attnscale.b"
    cache = json.loads((tmp_path / ".snakemake/attnscale-imports.json").read_text())
    key = hashlib.sha256(b"from . import b\n").hexdigest()
    assert cache[key] == [[None, 1, ["b"]]]
    # a planted entry for a's bytes is what the next process reads: no parse
    cache[key] = [[None, 1, ["c"]]]
    (tmp_path / ".snakemake/attnscale-imports.json").write_text(json.dumps(cache))
    second = subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip()
    assert second == "attnscale,attnscale.a,attnscale.c"
    # other bytes: parsed afresh
    (pkg / "a.py").write_text("from . import b  # edited\n")
    third = subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip()
    assert third == "attnscale,attnscale.a,attnscale.b"


def rule_entries() -> dict[str, str]:
    """rule name -> entry module, read from the rule files' text (independent of the parser)."""
    out = {}
    for smk in sorted((REPO / "workflow/rules").glob("*.smk")):
        # "rule X:" and "use rule Y as X with:" blocks (the latter restate their params.entry)
        for block in re.split(r"^rule |^use rule \w+ as ", smk.read_text(), flags=re.M)[1:]:
            name = block.split(":", 1)[0].split()[0].strip()
            m = re.search(r'entry="([\w.]+):\w+"', block)
            if m:
                out[name] = "attnscale." + m.group(1)
    return out


def expected_lib(module: str) -> set[str]:
    mods = finder_closure(module) | finder_closure("attnscale.pipeline.adapter")
    return {str(deps.module_file(m, SRC).relative_to(REPO)) for m in mods}


@pytest.fixture(scope="module")
def summary(smoke_summary):
    """rule -> set of library inputs, from Snakemake's own detailed summary of the smoke DAG
    (conftest.smoke_summary, shared with test_workflow)."""
    lines = smoke_summary.splitlines()
    head = lines[0].split("\t")
    rule_i, in_i = head.index("rule"), head.index("input-file(s)")
    out: dict[str, set[str]] = {}
    for line in lines[1:]:
        cols = line.split("\t")
        if len(cols) <= in_i:
            continue
        libs = {f for f in cols[in_i].split(",") if f.startswith("src/")}
        out.setdefault(cols[rule_i], set()).update(libs)
    return out


def test_every_rule_names_an_entry_and_depends_on_its_closure(summary):
    entries = rule_entries()
    ran = set(summary) - {"all"}
    assert ran <= set(entries), f"rules without params.entry: {sorted(ran - set(entries))}"
    for rule in sorted(ran):
        assert summary[rule] == expected_lib(entries[rule]), rule


def test_each_module_marks_exactly_the_rules_that_import_it(summary):
    entries = rule_entries()
    ran = sorted(set(summary) - {"all"})
    for module in MODULES:
        path = str(deps.module_file(module, SRC).relative_to(REPO))
        marked = {r for r in ran if path in summary[r]}
        importing = {
            r
            for r in ran
            if module in finder_closure(entries[r])
            or module in finder_closure("attnscale.pipeline.adapter")
        }
        assert marked == importing, module


def _reasons(text: str) -> dict[str, str]:
    """rule -> reason line of each job in a dry run's output."""
    out, rule = {}, None
    for line in text.splitlines():
        m = re.match(r"^(?:localrule|rule) (\w+):", line.strip())
        if m:
            rule = m.group(1)
        elif rule and line.strip().startswith("reason:"):
            out.setdefault(rule, line.strip())
    return out


@pytest.mark.workflow
@pytest.mark.parametrize("module", ["attnscale.layer.theory", "attnscale.figures.paper_a"])
def test_content_change_reruns_exactly_the_importing_rules(smoke_run, summary, tmp_path, module):
    work = tmp_path / "repo"
    shutil.copytree(smoke_run["dir"], work, symlinks=True)
    path = deps.module_file(module, work / "src")
    path.write_text(path.read_text() + textwrap.dedent("\n# a content change\n"))
    proc = snakemake(work, "-n", "--cores", "1", *SMOKE)
    rel = str(path.relative_to(work))
    reasons = _reasons(proc.stdout)
    # Snakemake names the edited file as the reason of a job only when nothing upstream of the job
    # reruns too; downstream jobs say "input files updated by another job".
    direct = {r for r, why in reasons.items() if rel in why}
    entries = rule_entries()
    in_dag = set(summary) - {"all"}
    expected = {r for r, e in entries.items() if r in in_dag and module in finder_closure(e)}
    assert direct, "the change marked nothing"
    assert direct <= expected, f"marked without importing {module}: {direct - expected}"
    assert expected <= set(reasons), f"import {module} but do not rerun: {expected - set(reasons)}"
    # and nothing reruns that neither imports the module nor depends on a rule that does
    upstream_ok = {r for r in reasons if r in expected or "updated by another job" in reasons[r]}
    assert set(reasons) == upstream_ok | {"all"} & set(reasons)
