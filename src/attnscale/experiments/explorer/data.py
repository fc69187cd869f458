"""The explorer page's data: one JSON document built by rule ``explorer_data`` and published into
``docs/`` (docs/explorer.md#where-the-data-come-from).

It holds the theory grid (:mod:`attnscale.experiments.explorer.grid`) with its error measured at
held-out points, Paper B's power-law exponent per ``d``, the real models' scaling rules the
calculator knows (``attnscale.layer.scores.scaling_rules``; the page computes them in JavaScript and
tests/test_explorer.py checks it against Python), and the simulated lambda phase diagrams of the
run (Figure 1's table, plus any extra tables the configuration names), with the provenance of
each. The docs build embeds the published copy in the page (docs/_ext/attnscale_explorer.py).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from attnscale.experiments.explorer import grid

__all__ = [
    "FORMAT",
    "ERROR_BOUND",
    "theory_grid",
    "accuracy",
    "lambda_panels",
    "rules_table",
    "explorer_data",
    "check_data",
    "publish",
]

#: Version of the data document's layout (docs/_static/explorer.js reads this version).
FORMAT = 1

#: The interpolation error the page promises, relative, in beta* (issue 29) [choice].
ERROR_BOUND = 1e-3


def _as_list(x) -> list:
    """A named input as a list (Snakemake hands a one-file list over as that one file)."""
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _sig(x: float, digits: int = 10) -> float | None:
    x = float(x)
    return float(f"{x:.{digits}g}") if math.isfinite(x) else None


def theory_grid(nodes: list[pd.DataFrame], rho_max: float) -> dict:
    """The ``"theory"`` part of the data from the tables of rule ``explorer_theory_nodes``
    (:func:`attnscale.experiments.explorer.grid.theory_nodes`, one per d-node)."""
    table = pd.concat(nodes, ignore_index=True)
    out = []
    for d, sub in table.groupby("d", sort=True):
        ns = np.sort(sub["n"].unique())
        rhos = np.sort(sub[sub["slice"] == "surface"]["rho"].unique())
        g0 = sub[sub["slice"] == "rho0"].set_index("n")["g"].reindex(ns)
        surf = sub[sub["slice"] == "surface"].pivot(index="rho", columns="n", values="g")
        surf = surf.reindex(index=rhos, columns=ns)
        if g0.isna().any() or surf.isna().any().any():
            raise ValueError(f"theory nodes of d = {d} do not cover every (rho, n) node")
        out.append(
            {
                "d": int(d),
                "n": [int(n) for n in ns],
                "rho": [float(r) for r in rhos],
                "g0": [_sig(v) for v in g0],
                "g": [[_sig(v) for v in row] for row in surf.to_numpy()],
            }
        )
    return {
        "quantity": "g = ln(beta* (1 - rho) / ln(n - 1))",
        "d_min": grid.D_MIN,
        "d_max": grid.D_MAX,
        "n_max": grid.N_MAX,
        "rho_max": float(rho_max),
        "rho_eps": grid.RHO_EPS,
        "d_nodes": out,
    }


def accuracy(theory: dict, heldout: pd.DataFrame, nodes: list[pd.DataFrame]) -> dict:
    """The interpolation error at the held-out points (rule ``explorer_heldout``), and the jump
    of ``critical_beta`` between ``rho = 0`` and ``rho -> 0+`` at the smallest d- and n-node
    (the two quadrature routes; docs/explorer.md#accuracy)."""
    points = []
    for row in heldout.itertuples(index=False):
        if row.n == 2:
            continue
        est = grid.interpolate_beta_star(theory, int(row.n), int(row.d), float(row.rho))
        points.append(
            {
                "d": int(row.d),
                "n": int(row.n),
                "rho": float(row.rho),
                "beta_star": _sig(row.beta_star),
                "interpolated": _sig(est),
                "rel_error": _sig(est / row.beta_star - 1.0, 4),
            }
        )
    worst = max(points, key=lambda p: abs(p["rel_error"]), default=None)
    table = pd.concat(nodes, ignore_index=True)
    small = table[(table["d"] == table["d"].min()) & (table["n"] == table["n"].min())]
    at0 = small[small["slice"] == "rho0"]["beta_star"].iloc[0]
    at_eps = small[(small["slice"] == "surface") & (small["rho"] == 0.0)]["beta_star"].iloc[0]
    return {
        "bound": ERROR_BOUND,
        "points": points,
        "max_abs_rel_error": None if worst is None else abs(worst["rel_error"]),
        "worst": worst,
        "route_jump": {
            "d": int(small["d"].iloc[0]),
            "n": int(small["n"].iloc[0]),
            "rho_eps": grid.RHO_EPS,
            "rel": _sig(at_eps / at0 - 1.0, 3),
        },
    }


def _lambda_column(df: pd.DataFrame, source: str) -> str:
    for col in ("lambda_mean", "lambda"):
        if col in df.columns:
            return col
    raise ValueError(f"{source}: a lambda table needs a lambda_mean (or lambda) column")


def lambda_panels(tables: list[pd.DataFrame], sources: list[str]) -> list[dict]:
    """One heat map per ``(table, d, n)`` with at least two rho and two gamma values: lambda over
    the ``(rho, gamma)`` grid (``alpha = 0`` rows where the table has several alphas), with its
    standard error, the number of draws and the commits the table was made at."""
    if len(tables) != len(sources):
        raise ValueError("lambda_tables and lambda_sources must have the same length")
    panels = []
    for df, source in zip(tables, sources, strict=True):
        missing = {"d", "n", "rho", "gamma"} - set(df.columns)
        if missing:
            raise ValueError(
                f"{source}: a lambda table needs columns d, n, rho, gamma; "
                f"missing {sorted(missing)}"
            )
        col = _lambda_column(df, source)
        if "alpha" in df.columns and df["alpha"].nunique() > 1:
            df = df[df["alpha"] == 0.0]
        for (d, n), sub in df.groupby(["d", "n"], sort=False):
            rhos, gammas = np.sort(sub["rho"].unique()), np.sort(sub["gamma"].unique())
            if rhos.size < 2 or gammas.size < 2:
                continue
            lam = sub.pivot_table(index="rho", columns="gamma", values=col).reindex(
                index=rhos, columns=gammas
            )
            se = None
            if "lambda_se" in sub.columns:
                se = sub.pivot_table(
                    index="rho", columns="gamma", values="lambda_se", dropna=False
                ).reindex(index=rhos, columns=gammas)
            commits = sorted(str(c) for c in sub.get("git_commit", pd.Series()).dropna().unique())
            panels.append(
                {
                    "source": source,
                    "d": int(d),
                    "n": int(n),
                    "trials": int(sub["trials"].max()) if "trials" in sub.columns else None,
                    "rho": [_sig(r, 8) for r in rhos],
                    "gamma": [_sig(g, 8) for g in gammas],
                    "lambda": [[_sig(v, 5) for v in row] for row in lam.to_numpy()],
                    "lambda_se": None
                    if se is None
                    else [[_sig(v, 2) for v in row] for row in se.to_numpy()],
                    "git_commit": commits,
                }
            )
    return panels


def rules_table() -> list[dict]:
    """The scaling rules ``attnscale critical`` places (calibration A, then the absolute rules),
    as the page lists them; their formulas are in docs/_static/explorer.js (tested)."""
    from attnscale.layer.scores import scaling_rules

    return [
        {
            "key": r.key,
            "name": r.name,
            "calibration": r.calibration,
            "L": None if r.calibration == "absolute" else float(r.L),
            "order": r.order,
        }
        for r in scaling_rules.RULES + scaling_rules.ABSOLUTE_RULES
    ]


def explorer_data(*, nodes, heldout, lambda_tables, lambda_sources, rho_max, root_seed) -> dict:
    """Entry of rule ``explorer_data``: the page's data document (docs/explorer.md).

    Parameters
    ----------
    nodes : list of pandas.DataFrame
        The theory nodes, one table per d-node (rule ``explorer_theory_nodes``).
    heldout : pandas.DataFrame
        Exact ``beta*`` at the held-out points (rule ``explorer_heldout``).
    lambda_tables : list of pandas.DataFrame
        Simulated lambda tables (Figure 1's, then the configuration's extra tables).
    lambda_sources : list of str
        Their paths, in the same order (shown on the page).
    rho_max : float
        The largest rho of the grid.
    root_seed
        The run's root seed (the page's header). The configuration files of the run are not
        recorded: they are not an input of the page (a ``--configfile`` that changes nothing the
        explorer uses must not rerun it); :func:`publish` checks the grid against
        ``config.yaml`` instead.
    """
    from attnscale.pipeline.io import provenance_columns

    nodes, lambda_tables = _as_list(nodes), _as_list(lambda_tables)
    theory = theory_grid(nodes, rho_max)
    ds = grid.power_law_nodes()
    doc = {
        "format": FORMAT,
        "source": provenance_columns(root_seed, None, {}, only=("git_commit", "root_seed")),
        "theory": theory,
        "accuracy": accuracy(theory, heldout, nodes),
        "power_law": {"d": ds, "p": [_sig(p, 12) for p in grid.power_law_exponent(ds)]},
        "rules": rules_table(),
        "lambda": lambda_panels(lambda_tables, _as_list(lambda_sources)),
    }
    check_data(doc, bound=False)
    return doc


def check_data(doc: dict, bound: bool = True) -> None:
    """Raise ``ValueError`` unless ``doc`` is a data document the page can read: the format
    version, every part present, a grid from ``d = 3`` with finite values and rho-nodes spanning
    ``[0, rho_max]``, and (``bound=True``; a small configuration such as the smoke run's is not
    held to it) the measured interpolation error within :data:`ERROR_BOUND`."""
    if doc.get("format") != FORMAT:
        raise ValueError(f"explorer data format must be {FORMAT}, got {doc.get('format')!r}")
    for key in ("source", "theory", "accuracy", "power_law", "rules", "lambda"):
        if key not in doc:
            raise ValueError(f"explorer data lacks {key!r}")
    theory = doc["theory"]
    if not theory["d_nodes"] or theory["d_nodes"][0]["d"] != grid.D_MIN:
        raise ValueError(f"the theory grid must have a node at d = {grid.D_MIN}")
    for node in theory["d_nodes"]:
        vals = node["g0"] + [v for row in node["g"] for v in row]
        if any(v is None for v in vals) or len(node["g"]) != len(node["rho"]):
            raise ValueError(f"the theory grid at d = {node['d']} is incomplete or not finite")
        if node["rho"][0] != 0.0 or node["rho"][-1] != theory["rho_max"]:
            raise ValueError(f"the rho-nodes of d = {node['d']} must span [0, rho_max]")
    err = doc["accuracy"]["max_abs_rel_error"]
    if bound and err is not None and err > ERROR_BOUND:
        raise ValueError(
            f"interpolation error {err:.2e} at held-out points exceeds the bound "
            f"{ERROR_BOUND:g}: add nodes (config explorer.*)"
        )


def publish(results: Path, docs: Path) -> Path:
    """Check ``results/explorer/data.json`` (:func:`check_data`, and a theory grid with the nodes
    of the default configuration: ``config.yaml``'s ``explorer`` section next to ``docs/``) and
    copy it to ``docs/explorer-data.json``, the copy the docs build embeds
    (docs/explorer.md#where-the-data-come-from)."""
    import yaml

    src = Path(results) / "explorer" / "data.json"
    doc = json.loads(src.read_text(encoding="utf-8"))
    check_data(doc)
    cfg = yaml.safe_load((Path(docs).parent / "config.yaml").read_text(encoding="utf-8"))
    cfg = cfg["explorer"]
    got = [node["d"] for node in doc["theory"]["d_nodes"]], doc["theory"]["rho_max"]
    if got != (cfg["d"], cfg["rho_max"]):
        raise SystemExit(
            f"{src} has d-nodes {got[0]} and rho_max {got[1]}, not config.yaml's "
            f"{cfg['d']} and {cfg['rho_max']}: publish a default run's data"
        )
    dest = Path(docs) / "explorer-data.json"
    shutil.copyfile(src, dest)
    print(f"{src} -> {dest}")
    return dest
