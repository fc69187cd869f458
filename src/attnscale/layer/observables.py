"""The observables of the layer, one object each: the registry (docs/pipeline.md#the-observable-registry).

An :class:`Observable` declares everything the code needs to know about one quantity of the layer:

* its per-row accumulator in the key-tiled pass (:attr:`Observable.row`): a function of the
  :class:`RowPass` that every kernel already has for each query row and beta (the self-weight
  ``A_ii``, ``log z``, the mean score ``sum_j A_ij <y_i, y_j>``); the dense kernel
  (:func:`attnscale.layer.dense.attention.angle_ratio_grid`) and the row-sampled pass
  (:func:`attnscale.layer.sampled.observables.observables_sampled`) call it, no second pass;
  lambda and eta are pair and Jacobian statistics with their own kernels (``row`` is ``None``);
* its ``n -> inf`` limit (:attr:`Observable.limit`, whose ``gamma -> 0`` and ``gamma -> inf``
  values are :meth:`Observable.limits`), its critical level (:attr:`Observable.critical`: the
  normalised step's value at ``gamma_c``), its finite-n simplex theory and finite-d mean field
  where they exist;
* the normalised rising step the sharpness study reads (:attr:`Observable.step`), its label,
  unit, colour and table columns, and the findings it takes part in.

Kernels, experiments, summaries, figures, findings and the table-column test loop over
:data:`REGISTRY`; no code outside this module names an observable to branch on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnscale.core.validation import check_int, check_real
from attnscale.layer import finite_d, theory
from attnscale.layer.dense.kernel_args import RowPass

__all__ = [
    "RowPass",
    "Observable",
    "REGISTRY",
    "get",
    "critical_level",
    "grid_observables",
    "row_observables",
    "simplex_entropy",
]


def _identity(v):
    return v


@dataclass(frozen=True)
class Observable:
    """One observable of the layer (module docstring)."""

    #: its name: the column of the per-draw tables and the ``observable`` of the summaries
    name: str
    #: short label (findings, legends)
    label: str
    #: title of its normalised step (the sharpness figure)
    title: str
    #: its symbol in legends
    symbol: str
    #: the y label of its panel in the sharpness figure
    axis_label: str
    #: its place in the legends of the sharpness figure's width and centre rows
    legend_rank: int
    #: unit of the raw value
    unit: str
    #: colour of its lines and markers
    colour: str
    #: ``limit(rho, gamma, d)``: the raw value as ``n -> inf`` at ``beta = gamma ln n``, alpha = 0
    limit: Callable
    #: ``critical(rho)``: the normalised step's value at ``gamma_c`` as ``n -> inf``
    critical: Callable
    #: ``simplex(n, d, rho, beta)``: the normalised step of Paper A's finite-n simplex, or None
    simplex: Callable | None = None
    #: per-row accumulator: ``row(RowPass) -> raw per-row values``, or None (own kernel)
    row: Callable | None = None
    #: raw value -> normalised rising step (0 below the transition, 1 above)
    step: Callable = _identity
    #: a column of Figure 1's (rho, gamma) grid beside lambda (the raw value)
    on_grid: bool = False
    #: ``grid_simplex(n, rho, beta)``: the raw finite-n simplex value on Figure 1's grid
    grid_simplex: Callable | None = None
    #: ``mean_field(ctx) -> array``: the finite-d theory of the normalised step on the sharpness
    #: grid (``ctx``: :func:`attnscale.experiments.sharpness_summary.theory_curves`), or None
    mean_field: Callable | None = None
    #: ``floor(beta, d, rho_hat)``: a finite-d floor under the step (lambda's tilt), or None
    floor: Callable | None = None
    #: ``sampled_columns(res, ctx) -> dict``: its columns in the per-draw sharpness tables from
    #: :class:`attnscale.layer.sampled.observables.SampledObservables` ``res`` (``ctx``: the
    #: draw's ``X, n, d, rho, betas, r0, route``); None: the raw mean and its SE from ``res.means``
    sampled_columns: Callable | None = None
    #: ``sampled_value(res, X, route) -> (value, se)``, each ``(B,)``: its raw estimate from
    #: ``res`` as the sharpness study reads it; None: ``res.means[name]``
    sampled_value: Callable | None = None
    #: the sharpness findings it takes part in beyond those of every observable with a theory
    findings: tuple = ()
    #: the transitions' columns its centre is compared with (else its finite-d curve's centre)
    centre_reference: tuple = ()
    #: its centre level is read per draw at the draw's rho_hat (a column ``<name>_critical``)
    centre_per_draw: bool = False

    def limits(self, rho: float, d: int = 2) -> tuple[float, float]:
        """The raw ``n -> inf`` values as ``beta -> 0`` and ``beta -> inf`` (gamma 0 and
        ``2 gamma_c``, alpha = 0)."""
        gc = theory.gamma_c(rho)
        return self.limit(rho, 0.0, d), self.limit(rho, 2.0 * gc, d)

    def sharpness_columns(self, res, ctx: dict) -> dict:
        """Its columns of one draw in the sharpness tables (:attr:`sampled_columns`)."""
        if self.sampled_columns is not None:
            return self.sampled_columns(res, ctx)
        est, se = res.means[self.name]
        return {self.name: est, f"{self.name}_se_within": se}

    def sampled_estimate(self, res, X, route: str = "probe"):
        """``(value, se)`` of one draw from ``res`` (:attr:`sampled_value`)."""
        if self.sampled_value is not None:
            return self.sampled_value(res, X, route)
        return res.means[self.name]

    @property
    def columns(self) -> tuple[str, str]:
        """Its columns in the per-draw sharpness tables: the raw value and its within-draw SE."""
        return self.name, f"{self.name}_se_within"


def simplex_entropy(n: int, rho: float, beta: float) -> float:
    """The attention entropy of a row of simplex tokens over ``ln n``
    (docs/paper-a.md#the-attention-entropy) [derived]: with ``t = e^{beta (rho - 1)}``,
    ``a = 1 / (1 + (n-1) t)`` (``A_ii``) and ``b = t a`` (``A_ij``),
    ``H = -a ln a - (n-1) b ln b = ln(1 + (n-1) t) + (1 - a) beta (1 - rho)``."""
    n = check_int("n", n, minimum=2)
    rho = check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)
    beta = check_real("beta", beta, low=0.0)
    nt = (n - 1) * np.exp(beta * (rho - 1.0))
    a = 1.0 / (1.0 + nt)
    return float((np.log1p(nt) + (1.0 - a) * beta * (1.0 - rho)) / np.log(n))


def _row_entropy(p: RowPass) -> np.ndarray:
    """``H_i / ln n`` from the pass: ``H_i = ln z_i - beta (mean_g_i - shift_i)``
    (``ln A_ij = beta (g_ij - shift_i) - ln z_i``)."""
    return (p.log_z - p.beta * (p.mean_g - p.shift)) / np.log(p.n)


def _sw_columns(res, c: dict) -> dict:
    return {
        "self_weight": res.self_weight,
        "self_weight_se_within": res.self_weight_se,
        "self_weight_theory": finite_d.self_weight_given(
            c["n"], c["d"], c["rho"], c["betas"], c["r0"]
        ),
    }


def _eta_columns(res, c: dict) -> dict:
    from attnscale.layer.sampled.eta import eta_normalised

    eta_n, eta_n_se, eta_lim = eta_normalised(res.eta, c["X"], c["route"])
    return {
        "eta_raw": res.eta.estimate,
        "eta_raw_se_within": res.eta.se,
        "eta_limit": eta_lim,
        "eta": eta_n,
        "eta_se_within": eta_n_se,
    }


def _eta_value(res, X, route: str):
    from attnscale.layer.sampled.eta import eta_normalised

    return eta_normalised(res.eta, X, route)[:2]


def _mean_sw_theory(ctx: dict) -> np.ndarray:
    """The mean over draws of ``E[A_ii | ||z_0||]`` (column ``self_weight_theory``)."""
    g, T, x = ctx["g"], ctx["T"], ctx["x"]
    sw = g.sort_values(["trial", "x"])["self_weight_theory"].to_numpy().reshape(T, x.size)
    return sw.mean(axis=0)


def _eta_mean_field(ctx: dict) -> np.ndarray:
    from attnscale.layer.finite_d.eta import eta_limit, eta_mean_field

    n, d, rho_hat, beta = ctx["n"], ctx["d"], ctx["rho_hat"], ctx["beta"]
    eta = eta_mean_field(n, d, rho_hat, beta, r0=1.0) / eta_limit(d, rho_hat, r0=1.0)
    return np.asarray(eta, dtype=float)


REGISTRY: dict[str, Observable] = {
    o.name: o
    for o in (
        Observable(
            name="self_weight",
            label="self-weight A_ii",
            title="self-weight A_ii",
            symbol="A_ii",
            legend_rank=2,
            axis_label="A_ii (mean over draws, 2 SE band)",
            unit="1",
            colour="C2",
            limit=lambda rho, gamma, d: theory.self_weight_limit(rho, gamma),
            critical=lambda rho: theory.self_weight_limit(rho, theory.gamma_c(rho)),
            simplex=lambda n, d, rho, b: theory.simplex_self_weight(n, rho, b),
            row=lambda p: p.a_self,
            mean_field=_mean_sw_theory,
            sampled_columns=_sw_columns,
            centre_reference=("x_star", "x_star_se"),
        ),
        Observable(
            name="lambda",
            label="lambda",
            title="lambda",
            symbol="lambda",
            legend_rank=0,
            axis_label="lambda (mean over draws, 2 SE band)",
            unit="1",
            colour="C0",
            limit=lambda rho, gamma, d: theory.lambda_limit(rho, gamma),
            critical=lambda rho: float(theory.critical_lambda(rho)),
            simplex=lambda n, d, rho, b: theory.simplex_lambda(n, rho, b),
            mean_field=lambda c: finite_d.mean_field_given(
                c["n"], c["d"], c["rho_hat"], c["beta"], 1.0
            )["lambda"],
            floor=lambda beta, d, rho: np.asarray(finite_d.lambda_floor(beta, d, rho), dtype=float),
            sampled_columns=lambda res, c: {
                "lambda": res.lam.estimate,
                "lambda_se_within": res.lam.se,
            },
            sampled_value=lambda res, X, route: (res.lam.estimate, res.lam.se),
            findings=("width_ratio", "centre"),
            centre_per_draw=True,
        ),
        Observable(
            name="eta",
            label="eta",
            title="eta / eta(gamma -> inf)",
            symbol="eta",
            legend_rank=1,
            axis_label="eta / eta(gamma -> inf)",
            unit="1",
            colour="C3",
            limit=lambda rho, gamma, d: theory.eta_limit(rho, gamma, d),
            critical=lambda rho: (
                theory.eta_limit(rho, theory.gamma_c(rho), 2)
                / theory.eta_limit(rho, 2.0 * theory.gamma_c(rho), 2)
            ),
            simplex=lambda n, d, rho, b: theory.simplex_eta(n, d, rho, b) * d / (d - 1.0),
            mean_field=_eta_mean_field,
            sampled_columns=_eta_columns,
            sampled_value=_eta_value,
            findings=("width_ratio", "centre"),
        ),
        Observable(
            name="entropy",
            label="attention entropy H / ln n",
            title="1 - H / ln n",
            symbol="1 - H/ln n",
            axis_label="1 - H / ln n (mean over draws, 2 SE band)",
            legend_rank=3,
            unit="1 (nats over ln n)",
            colour="C1",
            limit=lambda rho, gamma, d: 1.0 - theory.self_weight_limit(rho, gamma),
            critical=lambda rho: theory.self_weight_limit(rho, theory.gamma_c(rho)),
            simplex=lambda n, d, rho, b: 1.0 - simplex_entropy(n, rho, b),
            row=_row_entropy,
            step=lambda v: 1.0 - v,
            on_grid=True,
            grid_simplex=simplex_entropy,
            findings=("width_ratio", "centre"),
        ),
    )
}


def get(name: str) -> Observable:
    """The registered observable ``name``; a clear error naming the registered ones."""
    if name not in REGISTRY:
        raise ValueError(f"observable must be one of {tuple(REGISTRY)}, got {name!r}")
    return REGISTRY[name]


def critical_level(observable: str, rho: float) -> float:
    """Value of a normalised observable (its rising step, over its ``gamma -> inf`` value,
    ``alpha = 0``) at Paper A's critical point ``gamma = gamma_c``, ``n -> inf`` [paper]: the one
    definition of the level whose crossing is a transition's centre
    (docs/long-context.md#transition-sharpness-against-context-length).

    Each observable declares it (:attr:`Observable.critical`), computed from the limits of
    :mod:`attnscale.layer.theory`, not restated: the self-weight ``self_weight_limit`` at
    ``gamma_c`` (1/2), lambda ``critical_lambda`` (``1/(1 + 3 rho)``), eta
    ``eta_limit`` at ``gamma_c`` over its value above (a quarter,
    docs/paper-a.md#the-jacobian-norm-eta; independent of ``d``, computed at ``d = 2``).
    """
    theory.gamma_c(check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True))
    return get(observable).critical(rho)


def grid_observables() -> tuple[Observable, ...]:
    """The observables on Figure 1's (rho, gamma) grid beside lambda (registry order)."""
    return tuple(o for o in REGISTRY.values() if o.on_grid)


def row_observables() -> tuple[Observable, ...]:
    """The observables with a per-row accumulator (registry order)."""
    return tuple(o for o in REGISTRY.values() if o.row is not None)
