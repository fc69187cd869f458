"""Public names stay put (docs/pipeline.md#the-package-layout).

* Every public module of ``attnscale`` (no name part starting with ``_``) declares ``__all__``:
  the functions, classes and constants meant for users, the list the API reference renders
  (docs/api.md). Every name in it exists, is not private and appears once.
* What the library itself uses of another of its modules is in that module's ``__all__`` (read
  from the ``import`` statements and attribute accesses with :mod:`ast`), and so is every entry
  function a workflow rule names.
* The public API (docs/api.md#public-api): each module offers the names listed, and the old paths
  kept (``attnscale._moved.MOVED``, the one deprecation mechanism) are exactly the table's, each
  importing the new module with a ``DeprecationWarning`` naming it.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import re
import sys

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
    return copy.copy(_parsed_all(module))  # a copy: the cached value stays as written


@functools.cache
def _parsed_all(module: str) -> list[str] | None:
    """:func:`_declared_all`, each file parsed once per session (the check of what the library
    uses asks for the same module's ``__all__`` once per name it takes from it)."""
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
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
        ):
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


def public_api() -> dict[str, dict]:
    """The table of docs/api.md#public-api: module -> {"names": [...], "old": [old paths]}."""
    text = (REPO / "docs" / "api.md").read_text()
    section = text[text.index("## Public API") :]
    out = {}
    for row in re.findall(
        r"^\|[^|\n]*\| `(attnscale[\w.]*)` \|([^|\n]*)\|([^|\n]*)\|$", section, re.M
    ):
        module, names, old = row
        out[module] = {
            "names": re.findall(r"`(\w+)`", names.split("(")[0]),
            "old": re.findall(r"`(attnscale[\w.]*)`", old),
        }
    return out


PUBLIC_API = public_api()
OLD_PATHS = [(old, module) for module, row in PUBLIC_API.items() for old in row["old"]]


def test_the_public_api_table_is_read():
    assert len(PUBLIC_API) >= 12
    assert "attnscale.layer.dense.attention" in PUBLIC_API


@pytest.mark.parametrize("module", sorted(PUBLIC_API))
def test_every_public_api_module_offers_its_names(module):
    mod = importlib.import_module(module)
    names = PUBLIC_API[module]["names"]
    assert names, module
    assert set(names) <= set(mod.__all__), sorted(set(names) - set(mod.__all__))


def test_the_old_paths_kept_are_exactly_those_of_the_public_api():
    """One deprecation mechanism (``attnscale._moved.MOVED``), for the public API only: its table
    and the docs' column of old paths are the same list."""
    moved = {f"attnscale.{old}": f"attnscale.{new}" for old, new in _moved.MOVED.items()}
    assert moved == dict(OLD_PATHS)


@pytest.mark.parametrize("old, module", OLD_PATHS)
def test_an_old_path_of_the_public_api_imports_the_module_with_a_warning(old, module):
    new = importlib.import_module(module)
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(f"{old} moved to {module}")):
        mod = importlib.import_module(old)
    assert mod is new
    for name in PUBLIC_API[module]["names"]:
        sys.modules.pop(old, None)
        namespace: dict = {}
        with pytest.warns(DeprecationWarning, match=re.escape(f"moved to {module}")):
            exec(f"from {old} import {name}", namespace)  # the documented spelling
        assert namespace[name] is getattr(new, name)


#: Names earlier issues promised at their old flat paths (kept through 0.2.x).
PROMISED = {
    "attnscale.attention": ["forward", "angle_ratio", "angle_ratio_grid"],
    "attnscale.jacobian": ["jvp", "eta_hutchinson", "eta_exact"],
    "attnscale.tokens": ["near_simplex"],
    "attnscale.finite_d": ["self_weight", "critical_beta"],
}


@pytest.mark.parametrize("old", sorted(PROMISED))
def test_the_promised_old_names_are_in_the_public_api(old):
    module = dict(OLD_PATHS)[old]
    assert set(PROMISED[old]) <= set(PUBLIC_API[module]["names"])


def test_the_command_line_and_estimator_are_public():
    """The names of issue 21 (docs/ask-the-theory.md)."""
    from attnscale import cli
    from attnscale.layer import finite_d, tokens

    assert {"critical_report", "estimate_report", "main"} <= set(cli.__all__)
    assert {"estimate_rho_q", "TokenEstimate"} <= set(tokens.__all__)
    assert "first_order_crossover_log_n" in finite_d.__all__
