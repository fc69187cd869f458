"""The one deprecation mechanism: old module paths of the public API (docs/api.md#public-api).

A module of the public API that moves keeps its old path for one minor version: importing the old
path returns the module at its new home (the same module object, so attributes and monkeypatches
are shared) and emits a :class:`DeprecationWarning` that names the new path. :data:`MOVED` is the whole list; CHANGELOG.md says in which version
each entry was added and when it goes. Everything outside the public API moves without an alias.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

__all__ = ["MOVED", "new_name", "install"]

#: old module path (under ``attnscale``) -> its home now; only modules of the public API
MOVED: dict[str, str] = {
    # promised by earlier issues (the flat layout before 0.1.0's packages); kept through 0.2.x
    "attention": "layer.dense.attention",
    "jacobian": "layer.dense.jacobian",
    "tokens": "layer.tokens",
    "finite_d": "layer.finite_d",
    # moved in 0.2.0 (issue 34: the layer's rooms); kept through 0.2.x
    "layer.attention": "layer.dense.attention",
    "layer.jacobian": "layer.dense.jacobian",
    "layer.eta_exact": "layer.dense.eta_exact",
    "layer.sampled_lambda": "layer.sampled.angle_ratio",
    "layer.sampled_eta": "layer.sampled.eta",
    "layer.learned_scores": "layer.scores.learned",
    "layer.scaling_rules": "layer.scores.scaling_rules",
}


def new_name(old: str) -> str | None:
    """The current full name of an old full module name (``attnscale.finite_d.laws`` ->
    ``attnscale.layer.finite_d.laws``), or ``None`` if ``old`` is not an old path."""
    parts = old.split(".")
    if len(parts) < 2 or parts[0] != "attnscale":
        return None
    for k in range(len(parts), 1, -1):  # the longest old path that names a moved module
        key = ".".join(parts[1:k])
        if key in MOVED:
            return ".".join(["attnscale", MOVED[key], *parts[k:]])
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def create_module(self, spec):
        warnings.warn(
            f"{self.old} moved to {self.new}; import it from there (the old path goes in 0.3.0)",
            DeprecationWarning,
            stacklevel=3,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module):
        # the module is the new one, already executed; register it under the old name too
        sys.modules[self.old] = module

    def is_package(self, fullname):
        return False


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is not None:
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(fullname, new))
        return None


def install() -> None:
    """Put the finder of old paths on :data:`sys.meta_path` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
