"""Old module paths, kept importable (docs/pipeline.md#the-package-layout).

Until the library was grouped by domain every module sat directly under ``attnscale``
(``attnscale.attention``, ``attnscale.sphere_theory``, ...). Code and documentation written
against those paths keep working: importing an old path returns the module at its new home (the
same module object, so attributes and monkeypatches are shared) and emits a
:class:`DeprecationWarning` that names the new path. ``python -m <old path>`` runs the new
module's command line. Modules renamed inside their package, to be named like their workflow
family (``attnscale.experiments.paper_a_rules`` -> ``attnscale.experiments.paper_a_scaling_rules``,
docs/pipeline.md#rule-names), are kept importable the same way.

A module later split by concern into several (:data:`SPLIT`) keeps its path too: importing it
gives a module that re-exports every public name (``__all__``) of the modules that hold its
contents now (the same objects), with a :class:`DeprecationWarning` that names them. A module
split whose old path stays a small module of its own (``attnscale.layer.jax_kernels``) calls
:func:`deprecated` when imported; the old dispatch modules call :func:`old_jax_kernel`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

#: old module (under ``attnscale``; a dotted key is a module renamed inside its package) -> its
#: home now
MOVED: dict[str, str] = {
    "validation": "core.validation",
    "seeding": "core.seeding",
    "tokens": "layer.tokens",
    "attention": "layer.dense.attention",
    "causal": "layer.causal.attention",
    "causal_theory": "layer.causal.theory",
    "jacobian": "layer.dense.jacobian",
    "eta_exact": "layer.dense.eta_exact",
    "theory": "layer.theory",
    "finite_d": "layer.finite_d",
    "learned_scores": "layer.scores.learned",
    "score_attention": "layer.scores.attention",
    "sink": "layer.scores.sink",
    "depth": "layer.scores.depth",
    "scaling_rules": "layer.scores.scaling_rules",
    "weight_stats": "layer.scores.weight_stats",
    "keys": "sphere.keys",
    "structured_keys": "sphere.structured_keys",
    "sphere_theory": "sphere.theory",
    "sphere_quadrature": "sphere.quadrature",
    "poisson_limit": "sphere.poisson_limit",
    "marked_poisson": "sphere.marked_poisson",
    "critical_exponent": "sphere.critical_exponent",
    "adapter": "pipeline.adapter",
    "config": "pipeline.config",
    "deps": "pipeline.deps",
    "io": "pipeline.io",
    "runtime": "pipeline.runtime",
    "provenance": "pipeline.lineage",
    "scheduler_fix": "pipeline.scheduler_fix",
    "pipeline_cost": "bench.pipeline_cost",
    "benchmark": "bench.kernels",
    "benchmark_causal": "bench.causal",
    "plotting": "figures.style",
    # renamed within their package (issue 26: modules named like their workflow family)
    "experiments.paper_a_rules": "experiments.paper_a_scaling_rules",
    "figures.paper_a_rules": "figures.paper_a_scaling_rules",
    "experiments.rules_simulated": "experiments.causal_rules_simulated",
    "figures.rules_simulated": "figures.causal_rules_simulated",
}


#: old module (full name under ``attnscale``) that was split by concern -> the modules that hold
#: its public names now (docs/pipeline.md#the-package-layout)
SPLIT: dict[str, tuple[str, ...]] = {
    "layer.score_regimes": (
        "regimes.common",
        "regimes.gap",
        "regimes.ties",
        "regimes.rem",
        "regimes.rem_samplers",
        "regimes.token_samplers",
        "regimes.observable",
    ),
    "experiments.regimes": (
        "experiments.regimes_common",
        "experiments.regimes_simulation",
        "experiments.regimes_rem",
        "experiments.regimes_tokens",
        "experiments.regimes_theory",
        "experiments.regimes_summary",
    ),
}


def split_homes(old: str) -> tuple[str, ...]:
    """The full names of the modules that hold what the split module ``old`` (a full name,
    ``attnscale.layer.score_regimes``) held, or ``()`` if ``old`` was not split."""
    rest = old.removeprefix("attnscale.")
    if rest == old or rest not in SPLIT:
        return ()
    return tuple(f"attnscale.{m}" for m in SPLIT[rest])


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
            f"{self.old} moved to {self.new}; import it from there",
            DeprecationWarning,
            stacklevel=3,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module):
        # the module is the new one, already executed; register it under the old name too
        sys.modules[self.old] = module

    def get_code(self, fullname):
        # ``python -m attnscale.benchmark``: run the new module as __main__
        src = f"import runpy\nrunpy.run_module({self.new!r}, run_name='__main__', alter_sys=True)\n"
        return compile(src, f"<{self.old} -> {self.new}>", "exec")

    def is_package(self, fullname):
        return False


class _SplitLoader(importlib.abc.Loader):
    def __init__(self, old: str, homes: tuple[str, ...]):
        self.old, self.homes = old, homes

    def create_module(self, spec):
        warnings.warn(
            f"{self.old} was split into {', '.join(self.homes)}; import from there",
            DeprecationWarning,
            stacklevel=3,
        )
        return None  # a fresh module, filled by exec_module

    def exec_module(self, module):
        names: list[str] = []
        for home in self.homes:
            mod = importlib.import_module(home)
            for name in mod.__all__:
                setattr(module, name, getattr(mod, name))
                names.append(name)
        module.__all__ = names
        module.__doc__ = f"Deprecated: {self.old} was split into {', '.join(self.homes)}."


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is not None:
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(fullname, new))
        homes = split_homes(fullname)
        if homes:
            return importlib.machinery.ModuleSpec(fullname, _SplitLoader(fullname, homes))
        return None


def install() -> None:
    """Put the finder of old paths on :data:`sys.meta_path` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())


def renamed(module: str, names: dict[str, str]):
    """A module ``__getattr__`` that serves each old public name of ``module`` (``names``: old ->
    new) as the new object, with a :class:`DeprecationWarning` naming the new name."""

    def __getattr__(name: str):
        if name in names:
            new = names[name]
            warnings.warn(
                f"{module}.{name} was renamed {module}.{new}", DeprecationWarning, stacklevel=2
            )
            return getattr(sys.modules[module], new)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def moved_names(module: str, names: dict[str, str]):
    """A module ``__getattr__`` for a module that was split: each public name that moved out of
    ``module`` (``names``: name -> its new module) is served as the object at its new home, with
    a :class:`DeprecationWarning` naming it (docs/pipeline.md#the-package-layout)."""

    def __getattr__(name: str):
        if name in names:
            new = names[name]
            warnings.warn(
                f"{module}.{name} moved to {new}.{name}; import it from there",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(importlib.import_module(new), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def renamed_keywords(**old_to_new: str):
    """A decorator for a public function whose keyword arguments were renamed
    (docs/glossary.md): each old keyword (``old="new"``) is still accepted, as the new one, with a
    :class:`DeprecationWarning` naming the new keyword; giving both is a ``TypeError``."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(
                            f"{fn.__name__}() got {old!r} (renamed {new!r}) and {new!r}"
                        )
                    warnings.warn(
                        f"{fn.__module__}.{fn.__qualname__}: keyword {old!r} was renamed {new!r}",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        for attr in ("cache_clear", "cache_info"):  # an lru_cache'd function keeps its handles
            if hasattr(fn, attr):
                setattr(inner, attr, getattr(fn, attr))
        return inner

    return wrap


def deprecated(module: str, instead: str) -> None:
    """Warn (:class:`DeprecationWarning`, at the importing line) that ``module`` is deprecated and
    what to use ``instead``; called by an old module when it is imported."""
    warnings.warn(f"{module} is deprecated: {instead}", DeprecationWarning, stacklevel=3)


def old_jax_kernel(package: str, backend, name: str):
    """What ``jax_kernel(backend, name)`` of the old ``attnscale.<package>.dispatch`` returns: the
    JAX implementation ``attnscale.<package>.jax_kernels.<name>`` (old signature) if ``backend``
    resolves to ``"jax"`` (:func:`attnscale.backend.uses_jax`), else ``None``."""
    from attnscale.backend import uses_jax

    if not uses_jax(backend):
        return None
    return getattr(importlib.import_module(f"attnscale.{package}.jax_kernels"), name)
