"""Public names stay put (docs/pipeline.md#the-package-layout).

* Every public module of ``attnscale`` (no name part starting with ``_``) declares ``__all__``:
  the functions, classes and constants meant for users, the list the API reference renders
  (docs/api.md). Every name in it exists, is not private and appears once.
* What the library itself uses of another of its modules is in that module's ``__all__`` (read
  from the ``import`` statements and attribute accesses with :mod:`ast`), and so is every entry
  function a workflow rule names.
* The names earlier issues documented import from where they were documented: the old flat
  path (with a ``DeprecationWarning`` naming the new home) and the new home.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import warnings

import pytest

from attnscale import _moved
from conftest import REPO

SRC = REPO / "src"


def _module_name(path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


ALL_MODULES = sorted(_module_name(p) for p in (SRC / "attnscale").rglob("*.py"))
PUBLIC = [m for m in ALL_MODULES if not any(part.startswith("_") for part in m.split("."))]


def _file(module: str):
    base = SRC.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _declared_all(module: str) -> list[str] | None:
    """``__all__`` as written in the source (a literal list), or ``None``."""
    for node in ast.parse(_file(module).read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value:
            return ast.literal_eval(node.value)
    return None


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_module_declares_its_public_names(module):
    names = _declared_all(module)
    assert names is not None, f"{module} has no __all__ (a literal list of its public names)"
    assert len(names) == len(set(names)), f"{module}.__all__ repeats a name"
    assert not [n for n in names if n.startswith("_")], f"{module}.__all__ names a private name"
    mod = importlib.import_module(module)
    assert list(mod.__all__) == names
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"


def _uses(module: str) -> set[tuple[str, str]]:
    """``(other module, name)`` for every name ``module`` takes from another attnscale module:
    ``from other import name`` and ``other.name`` after ``from pkg import other`` or
    ``import other as alias``."""
    package = module if _file(module).name == "__init__.py" else module.rpartition(".")[0]
    bound: dict[str, str] = {}  # local name -> attnscale module
    used: set[tuple[str, str]] = set()
    tree = ast.parse(_file(module).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("attnscale"):
                continue
            for alias in node.names:
                if f"{target}.{alias.name}" in ALL_MODULES:
                    bound[alias.asname or alias.name] = f"{target}.{alias.name}"
                else:
                    used.add((target, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("attnscale") and alias.asname:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound):  # fmt: skip
            target = bound[node.value.id]
            if f"{target}.{node.attr}" not in ALL_MODULES:
                used.add((target, node.attr))
    return {(t, n) for t, n in used if t != module}


def test_what_the_library_uses_of_its_modules_is_public():
    bad = []
    for module in ALL_MODULES:
        for target, name in sorted(_uses(module)):
            if name.startswith("_") or target not in PUBLIC:
                continue  # private names across modules: tests/test_layout.py
            if name not in (_declared_all(target) or []):
                bad.append(f"{module} uses {target}.{name}, which is not in its __all__")
    assert not bad, "\n".join(bad)


def test_every_rule_entry_is_public():
    entries = set()
    for smk in (REPO / "workflow").rglob("*.smk"):
        entries |= set(re.findall(r'entry="([\w.]+):(\w+)"', smk.read_text()))
    assert len(entries) > 40
    bad = [f"{m}:{f}" for m, f in sorted(entries) if f not in _declared_all(f"attnscale.{m}")]
    assert not bad, f"entry functions missing from their module's __all__: {bad}"


#: Names earlier issues documented, at their old flat path (the new home is _moved.MOVED's).
DOCUMENTED = {
    "attention": ["forward", "angle_ratio", "angle_ratio_grid"],
    "jacobian": ["jvp", "eta_hutchinson", "eta_exact"],
    "tokens": ["near_simplex"],
    "finite_d": ["self_weight", "critical_beta"],
}
CASES = [(old, name) for old, names in DOCUMENTED.items() for name in names]


@pytest.mark.parametrize("old, name", CASES)
def test_documented_names_import_from_the_new_home(old, name):
    new = f"attnscale.{_moved.MOVED[old]}"
    mod = importlib.import_module(new)
    assert callable(getattr(mod, name))
    assert name in mod.__all__
    namespace: dict = {}
    exec(f"from {new} import {name}", namespace)  # the documented spelling
    assert namespace[name] is getattr(mod, name)


@pytest.mark.parametrize("old, name", CASES)
def test_documented_names_import_from_the_old_path_with_a_warning(old, name):
    new = f"attnscale.{_moved.MOVED[old]}"
    sys.modules.pop(f"attnscale.{old}", None)
    namespace: dict = {}
    with pytest.warns(DeprecationWarning, match=re.escape(f"moved to {new}")):
        exec(f"from attnscale.{old} import {name}", namespace)
    assert namespace[name] is getattr(importlib.import_module(new), name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old_module = importlib.import_module(f"attnscale.{old}")
    assert getattr(old_module, name) is namespace[name]


#: The public names of modules later split by concern (their ``__all__`` before the split); each
#: still imports from the old path, with a warning, as the object at its new home.
SPLIT_DOCUMENTED = {
    "layer.score_regimes": [
        "LEVEL", "gap_top_weight", "gap_critical_beta", "copy_cosines", "copy_factor",
        "ties_critical_beta", "ties_shift", "ties_for_shift", "gaussian_tail_scale",
        "rem_freezing_beta", "pd_top_weight_mean", "pd_critical_alpha", "rem_top_weight_mean",
        "rem_critical_beta", "rem_top_weight_slope", "rem_scores", "rem_scores_above",
        "rem_truncation_bias", "rem_truncation_threshold", "gaussian_token_draw",
        "gaussian_token_row", "group_weight", "group_weight_grid", "finite_d_critical_beta",
        "log_n_breakdown",
    ],
    "experiments.regimes": [
        "REM_STREAM", "TOKEN_STREAM", "GRID_WIDTHS", "GRID_FRACTION", "MAX_ATTEMPTS", "PROV",
        "ties_k", "beta_grid", "curve_root", "rem_points", "token_points", "read_off_points",
        "theory_table", "read_off_theory", "theory", "SUMMARY_COLUMNS", "critical_scale_table",
    ],
}  # fmt: skip


@pytest.mark.parametrize("old", sorted(SPLIT_DOCUMENTED))
def test_split_module_names_import_from_the_old_path_with_a_warning(old):
    full = f"attnscale.{old}"
    homes = [importlib.import_module(h) for h in _moved.split_homes(full)]
    for name in SPLIT_DOCUMENTED[old]:
        at_home = [getattr(h, name) for h in homes if name in h.__all__]
        assert len(at_home) == 1, f"{name} should be public in exactly one new home of {full}"
        sys.modules.pop(full, None)
        namespace: dict = {}
        with pytest.warns(DeprecationWarning, match=re.escape(f"{full} was split into")):
            exec(f"from {full} import {name}", namespace)
        assert namespace[name] is at_home[0]


def test_the_command_line_and_estimator_are_public():
    """The names of issue 21 (docs/ask-the-theory.md)."""
    from attnscale import cli
    from attnscale.layer import finite_d, tokens

    assert {"critical_report", "estimate_report", "main"} <= set(cli.__all__)
    assert {"estimate_rho_q", "TokenEstimate"} <= set(tokens.__all__)
    assert "first_order_crossover_log_n" in finite_d.__all__


@pytest.mark.parametrize("old", sorted(["workflow_jobs", "check_workflow"]))
def test_backend_functions_that_moved_to_the_pipeline_warn_and_still_work(old):
    """Issue 26: the workflow's keys left the backend; the old names still import."""
    import attnscale.backend as backend
    from attnscale.pipeline import config_checks

    module, new = backend.MOVED_TO_PIPELINE[old]
    with pytest.warns(DeprecationWarning, match=re.escape(f"moved to {module}.{new}")):
        namespace: dict = {}
        exec(f"from attnscale.backend import {old}", namespace)
    assert namespace[old] is getattr(config_checks, new)
    assert new in config_checks.__all__
