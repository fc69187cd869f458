"""The one place where the workflow's configuration is checked and expanded (docs/pipeline.md).

``Snakefile`` calls :func:`load` once, at parse time, before any job runs. It

1. validates ``config.yaml`` against the JSON schemas in ``workflow/schemas/`` (types) and fills
   every default (each key has a description and a default there; unknown keys are rejected);
2. runs the range checks of :data:`GRIDS`, :data:`VALUES` and :data:`CHOICES` (a word or a
   number in a range), the one home of every allowed range (the schemas carry none), and the checks that involve several keys, :data:`CHECKS`, so
   that a bad value stops the run with ``config error: <key> must be <allowed range>; got
   <value>`` before any work;
3. returns a :class:`Config` whose :meth:`Config.grid`, :meth:`Config.labels` and
   :meth:`Config.exact` give rule files the expanded grids, their file-name labels and the exact
   value behind a label.

File names carry grid values as fixed-decimal labels (``label(0.05) == "0.0500"``). A value that
the label would round (``0.12345``) is refused with an error naming the key, so a file name never
stands for a value other than the one computed with (docs/pipeline.md#configuration).

To add a key: describe it (type, default) in the section's schema, add its range to
:data:`GRIDS` or :data:`VALUES` (or a function to :data:`CHECKS`), and read it in the rule file
through ``CFG``.

One module per concern, every name importable from here: the ranges and the grid expansion in
:mod:`attnscale.pipeline.config_ranges`, the checks of several keys in
:mod:`attnscale.pipeline.config_checks`, the JSON schemas in :mod:`attnscale.pipeline.config_schema`;
this module holds :class:`Config` and runs them (:func:`load`, :func:`check`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .config_checks import CHECKS
from .config_ranges import (
    CHOICES,
    GRIDS,
    LABEL_DIGITS,
    VALUES,
    ConfigError,
    Range,
    expand_grid,
    fail,
    label,
)
from .config_schema import SchemaError, read_schema, validate_schema

__all__ = [
    "ConfigError",
    "expand_grid",
    "label",
    "Config",
    "SchemaError",
    "read_schema",
    "validate_schema",
    "GRIDS",
    "VALUES",
    "CHOICES",
    "Range",
    "check",
    "load",
    "source_label",
    "LABEL_DIGITS",
    "CHECKS",
    "fail",
]


class Config:
    """A validated configuration: dotted-key access, checked grids and exact labelled values."""

    def __init__(self, raw: dict):
        self.raw = raw
        self._grids: dict[str, np.ndarray] = {}

    def get(self, key: str):
        """The raw value at a dotted key (``"paper_a.eta.trials"``)."""
        node = self.raw
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(f"config has no key {key!r}")
            node = node[part]
        return node

    def grid(self, key: str) -> np.ndarray:
        """The expanded, range-checked grid at ``key`` (ranges in :data:`GRIDS`)."""
        if key not in self._grids:
            rng = GRIDS.get(key, Range())
            vals = expand_grid(self.get(key), key, increasing=rng.increasing)
            for v in vals:
                if not rng.ok(float(v)):
                    fail(key, f"a grid of {rng.text()}", float(v))
            if rng.labelled:
                labs = [label(v) for v in vals]
                for v, lab in zip(vals, labs, strict=True):
                    if float(lab) != float(v):
                        fail(
                            key,
                            f"values with at most {LABEL_DIGITS} decimals (they name files)",
                            float(v),
                        )
            self._grids[key] = vals
        return self._grids[key]

    def ints(self, key: str) -> list[int]:
        """An integer grid as a list of ``int``."""
        return [int(round(v)) for v in self.grid(key)]

    def labels(self, key: str) -> list[str]:
        """File-name labels of a labelled grid (exact by construction, see :meth:`grid`)."""
        return [label(v) for v in self.grid(key)]

    def exact(self, key: str, lab: str) -> float:
        """The grid value at ``key`` whose label is ``lab`` (raises if there is none)."""
        for v in self.grid(key):
            if label(v) == lab:
                return float(v)
        raise KeyError(f"{key} has no value labelled {lab!r}")

    def chunks(self, key: str, size: int) -> list[list[float]]:
        """The grid at ``key`` cut into consecutive pieces of ``size`` values (the last may be
        shorter): the work of one job each."""
        vals = [float(v) for v in self.grid(key)]
        return [vals[i : i + size] for i in range(0, len(vals), size)]

    def value(self, key: str):
        """A range-checked scalar (ranges in :data:`VALUES`)."""
        v = self.get(key)
        rng = VALUES.get(key)
        if rng is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not rng.ok(v):
                fail(key, f"one of {rng.text()}", v)
        return v


def check(cfg: Config) -> Config:
    """Run every range check (:data:`GRIDS`, :data:`VALUES`, :data:`CHECKS`) on ``cfg``."""
    for key in GRIDS:
        try:
            cfg.get(key)
        except KeyError:
            continue
        cfg.grid(key)
    for key in VALUES:
        try:
            cfg.get(key)
        except KeyError:
            continue
        cfg.value(key)
    for fn in CHECKS:
        fn(cfg)
    return cfg


def load(raw: dict, schema: str | Path | None = None) -> Config:
    """Validate (schema, defaults, ranges) and wrap a configuration dict; see the module doc."""
    if schema is not None:
        validate_schema(raw, schema)
    return check(Config(raw))


def source_label(configfiles, workdir) -> str:
    """The configuration a run was made with, for the findings page's header: the config files in
    the order they were merged (the workflow's ``config.yaml`` first, then ``--configfile`` files,
    each relative to ``workdir`` where it lies below it; docs/pipeline.md#numbers-in-the-prose).
    Values set with ``--config`` are not visible here."""
    root = Path(workdir).resolve()
    names = []
    for f in configfiles:
        p = Path(f)
        p = (root / p).resolve() if not p.is_absolute() else p.resolve()
        names.append(str(p.relative_to(root)) if p.is_relative_to(root) else str(p))
    names = list(dict.fromkeys(names))
    names.sort(key=lambda n: n != "config.yaml")  # stable: config.yaml first, others in order
    return " + ".join(names) or "unknown"
