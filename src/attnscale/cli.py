"""The ``attnscale`` command: ask the theory about one attention head (docs/ask-the-theory.md).

``attnscale critical --d D --n N [--rho RHO] [--json]`` prints where a head of dimension ``d``
that sees ``n`` keys turns critical: the finite-d critical scale (docs/finite-d.md), its
approximations with the regime each holds in (docs/finite-d.md#where-each-approximation-fails),
and where the scaling rules of real models put such a head
(docs/scaling-rules.md#calibration-a). ``attnscale estimate-rho TOKENS.npy [--json]`` estimates
``rho`` (and ``q``) from an ``(n, d)`` array of token vectors
(docs/ask-the-theory.md#estimate-rho-from-tokens).

The same numbers are available as data: :func:`critical_report` and :func:`estimate_report`
return the dictionaries that ``--json`` prints (keys in docs/ask-the-theory.md#json-output).
Installed as the console script ``attnscale`` (``pyproject.toml``); ``python -m attnscale`` runs
the same :func:`main`. Argument errors print one line naming the argument and its allowed range,
and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import textwrap
from pathlib import Path

import attnscale
from attnscale.layer.token_files import SAVE_HINT, load_tokens  # no NumPy at import

# NumPy, SciPy and the theory modules are imported inside the functions that need them, so that
# ``attnscale --help`` and ``--version`` start in a few hundredths of a second and ``critical``
# loads only what it uses (docs/ask-the-theory.md#start-up-time).

__all__ = [
    "SIGNIFICANT",
    "critical_report",
    "estimate_report",
    "format_critical",
    "format_estimate",
    "load_tokens",
    "main",
]

#: Significant digits of every number ``--json`` prints: the exact theory is accurate to about
#: 1e-4 relative (docs/finite-d.md#exact-self-weight), so more digits would only be noise.
SIGNIFICANT = 6

#: Columns of the text output (a row of the approximations may run a few columns longer where a
#: number needs exponent form).
WIDTH = 80

#: Where each approximation of the critical scale holds (docs/finite-d.md#where-each-approximation-fails).
REGIMES = {
    "annealed": "rho = 0 and d not small (11 % high at d = 4); biased at rho > 0",
    "first_order": "ln(n - 1) < d / (2 (1 + rho - rho^2/2)) (else no root), beta^2 s^2 small",
    "paper_a_asymptote": "ln n << d",
    "power_law": "rho = 0 and ln n >> d",
}

DEFAULT_RHO_NOTE = (
    "rho not given: using rho = 0 (no common direction; beta* grows with rho, so this is the "
    "smallest critical scale)."
)
RHO_HINT = "Estimate rho from a head's keys: attnscale estimate-rho keys.npy"


# --------------------------------------------------------------------------- the numbers


def _gamma_c(rho: float) -> float:
    # gamma_c = 1 / (1 - rho) (docs/paper-a.md#the-model); theory.gamma_c takes rho in (0, 1)
    from attnscale.layer import theory

    return 1.0 if rho == 0.0 else theory.gamma_c(rho)


def _finite(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def critical_report(n, d, rho=None) -> dict:
    """Everything ``attnscale critical`` prints, as a JSON-ready dict (docs/ask-the-theory.md).

    Parameters
    ----------
    n : int
        Keys a query sees (context length), an integer ``2 <= n <= 1e7``.
    d : int
        Head dimension, an integer ``3 <= d <= 4096`` (the range of
        :func:`attnscale.layer.finite_d.check_args`).
    rho : float or None
        Mean cosine of the tokens, ``0 <= rho < 1``; ``None`` uses ``rho = 0`` (the smallest
        critical scale) and says so in ``"rho_note"``.

    Returns
    -------
    dict
        Keys as documented in docs/ask-the-theory.md#json-output: the inputs, ``gamma_c``, the
        finite-d ``beta_star`` / ``gamma_star`` (docs/finite-d.md#finite-d-critical-point), one
        entry per approximation under ``"approximations"`` (``beta``, ``rel_diff`` = beta /
        beta* - 1, ``regime``; ``None`` where an approximation has no value) and one entry per
        scaling rule under ``"scaling_rules"``. Undefined values are ``None``.

    Raises
    ------
    ValueError
        An argument outside its range (the message names it and the range).
    """
    import numpy as np

    from attnscale.layer import finite_d
    from attnscale.layer.scores import scaling_rules

    rho_given = rho is not None
    n, d, rho = finite_d.check_args(n, d, 0.0 if rho is None else rho)
    ln_n = math.log(n)
    gc = _gamma_c(rho)
    beta_star = finite_d.critical_beta(n, d, rho)
    gamma_star = beta_star / ln_n

    def approx(beta, regime, **extra):
        beta = _finite(beta)
        rel = None if beta is None or beta_star == 0 else beta / beta_star - 1.0
        return {"beta": beta, "rel_diff": rel, "regime": regime, **extra}

    crossover = finite_d.first_order_crossover_log_n(d, rho)
    approximations = {
        "annealed": approx(finite_d.annealed_critical_beta(n, d, rho), REGIMES["annealed"]),
        "first_order": approx(
            finite_d.first_order_critical_beta(n, d, rho),
            REGIMES["first_order"],
            crossover_ln_n_minus_1=crossover,
            ln_n_minus_1=math.log(n - 1.0),
        ),
        "paper_a_asymptote": approx(
            finite_d.paper_a_asymptote_beta(n, rho), REGIMES["paper_a_asymptote"]
        ),
        "power_law": approx(
            finite_d.power_law_beta(n, d), REGIMES["power_law"], derived_for_this_rho=rho == 0.0
        ),
    }
    rules = []
    for rule in scaling_rules.RULES + scaling_rules.ABSOLUTE_RULES:
        m = float(np.asarray(rule.m(float(n))))
        if rule.calibration == "absolute":
            gamma_eff = m / ln_n  # beta_n = m(n) on unit-norm scores
        else:  # calibration A: beta_n = gamma_c ln L m(n)
            gamma_eff = gc * float(scaling_rules.gamma_ratio(rule, float(n)))
        ratio = gamma_eff / gamma_star if gamma_star > 0 else None
        rules.append(
            {
                "key": rule.key,
                "name": rule.name,
                "calibration": rule.calibration,
                "L": _finite(rule.L),
                "m": m,
                "gamma_eff": gamma_eff,
                "gamma_eff_over_gamma_star": ratio,
                "side": _side(ratio),
            }
        )
    return {
        "n": n,
        "d": d,
        "rho": rho,
        "rho_given": rho_given,
        "rho_note": None if rho_given else f"{DEFAULT_RHO_NOTE} {RHO_HINT}",
        "ln_n_over_d": ln_n / d,
        "gamma_c": gc,
        "beta_star": beta_star,
        "gamma_star": gamma_star,
        "gamma_star_over_gamma_c": gamma_star / gc,
        "approximations": approximations,
        "scaling_rules": rules,
        "docs": "docs/ask-the-theory.md",
    }


def _side(ratio: float | None) -> str | None:
    """Which side of the transition ``gamma_eff / gamma*`` puts a head (rounded to 3 decimals)."""
    if ratio is None:
        return None
    if round(ratio, 3) == 1.0:
        return "critical"
    return "sub-critical" if ratio < 1 else "super-critical"


def estimate_report(path) -> dict:
    """``attnscale estimate-rho``: ``rho_hat`` and ``q_hat`` of the ``(n, d)`` array in a
    ``.npy`` file (:func:`attnscale.layer.tokens.estimate_rho_q`;
    docs/ask-the-theory.md#estimate-rho-from-tokens).

    Returns a dict with ``path``, ``n``, ``d``, ``rho_hat``, ``q_hat`` and ``note`` (``None``
    when ``rho_hat`` lies in the theory's range ``[0, 1)``). Raises ``ValueError`` for a file
    that cannot be read as a real ``(n, d)`` array with ``n >= 2``, finite, without zero rows.
    """
    from attnscale.layer import tokens

    path = Path(path)
    X = load_tokens(path)
    try:
        est = tokens.estimate_rho_q(X)
    except ValueError as exc:
        raise ValueError(f"{exc}. {SAVE_HINT}") from exc
    note = None
    if est.rho_hat < 0:
        note = "rho_hat < 0 is outside the theory's [0, 1); the nearest model is rho = 0"
    elif est.rho_hat >= 1:
        note = "rho_hat = 1: every token points the same way; no critical scale exists"
    return {
        "path": str(path),
        "n": est.n,
        "d": est.d,
        "rho_hat": est.rho_hat,
        "q_hat": est.q_hat,
        "note": note,
    }


# --------------------------------------------------------------------------- text output


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.2f}%"


def _table(records: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[k]) for r in records) for k in range(len(records[0]))]
    out = []
    for r in records:
        cells = [
            c.rjust(w) if k in right else c.ljust(w)
            for k, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        out.append(("  " + "  ".join(cells)).rstrip())
    return out


def format_critical(report: dict) -> str:
    """The text ``attnscale critical`` prints for a :func:`critical_report` (at most
    :data:`WIDTH` columns unless a number needs exponent form)."""
    r = report
    a = r["approximations"]
    out = [
        f"Critical scale of one head: d = {r['d']}, n = {r['n']}, rho = {r['rho']:g}"
        f"{'' if r['rho_given'] else ' (default)'}",
        "Gaussian near-simplex tokens, scores beta <y_i, y_j> (docs/finite-d.md)",
    ]
    if r["rho_note"]:  # the hint on a line of its own
        note, _, hint = r["rho_note"].partition(" Estimate rho")
        out += [
            *textwrap.wrap(note, width=WIDTH, break_on_hyphens=False),
            *([f"Estimate rho{hint}"] if hint else []),
        ]
    out += [
        "",
        "Finite-d critical point, E[A_ii] = 1/2 (exact up to quadrature, about 1e-4):",
        *_table(
            [
                ["beta*", _num(r["beta_star"])],
                ["gamma* = beta* / ln n", _num(r["gamma_star"])],
                ["gamma_c = 1 / (1 - rho)", _num(r["gamma_c"])],
                ["gamma* / gamma_c", _num(r["gamma_star_over_gamma_c"])],
            ],
            right={1},
        ),
        "",
        f"Approximations and where each holds; here ln n / d = {r['ln_n_over_d']:.3f}",
        "(docs/finite-d.md#where-each-approximation-fails):",
    ]
    fo = a["first_order"]
    lnm1, cross = fo["ln_n_minus_1"], fo["crossover_ln_n_minus_1"]
    fo_where = f"ln(n-1) < {cross:.2f}; here {lnm1:.2f}"
    if fo["beta"] is None:
        fo_where = f"no root: ln(n-1) = {lnm1:.2f} > {cross:.2f}"
    rho_here = "" if r["rho"] == 0 else f"; here rho = {r['rho']:g}"
    records = [
        ["", "beta", "vs beta*", ""],
        [
            "annealed",
            _num(a["annealed"]["beta"]),
            _pct(a["annealed"]["rel_diff"]),
            f"rho = 0, d not small{rho_here}",
        ],
        ["first order", _num(fo["beta"]), _pct(fo["rel_diff"]), fo_where],
        [
            "Paper A gamma_c ln n",
            _num(a["paper_a_asymptote"]["beta"]),
            _pct(a["paper_a_asymptote"]["rel_diff"]),
            "ln n << d",
        ],
        [
            "power law (Paper B)",
            _num(a["power_law"]["beta"]),
            _pct(a["power_law"]["rel_diff"]),
            f"rho = 0, ln n >> d{rho_here}",
        ],
    ]
    out += _table(records, right={1, 2})
    out += [
        "",
        *textwrap.wrap(
            f"Scaling rules of real models at n = {r['n']}, calibration A "
            "(docs/scaling-rules.md#calibration-a): critical at their training length L by "
            "Paper A's line, beta_n = gamma_c ln L m(n); gamma_eff = beta_n / ln n and "
            "ratio = gamma_eff / gamma*:",
            width=WIDTH,
            break_on_hyphens=False,
            break_long_words=False,
        ),
    ]
    records = [["rule", "m(n)", "gamma_eff", "ratio", ""]]
    for rule in r["scaling_rules"]:
        name = rule["name"] + (" [absolute]" if rule["calibration"] == "absolute" else "")
        ratio = rule["gamma_eff_over_gamma_star"]
        records.append(
            [name, _num(rule["m"]), _num(rule["gamma_eff"]), _num(ratio, 3), rule["side"] or ""]
        )
    out += _table(records, right={1, 2, 3})
    if any(rule["calibration"] == "absolute" for rule in r["scaling_rules"]):
        out.append("  [absolute]: beta_n = m(n) on unit-norm scores, no calibration")
    return "\n".join(out)


def _num(x: float | None, decimals: int = 4) -> str:
    """``x`` with ``decimals`` decimals, or in exponent form with 6 (3 for ratios) significant
    digits where fixed decimals would hide it (``|x| >= 1e5`` or ``0 < |x| < 0.01``); ``—`` for an undefined value."""
    if x is None:
        return "—"
    if abs(x) >= 1e5 or 0 < abs(x) < 0.01:
        return f"{x:.{5 if decimals > 3 else 2}e}"
    return f"{x:.{decimals}f}"


def format_estimate(report: dict) -> str:
    """The text ``attnscale estimate-rho`` prints for an :func:`estimate_report`."""
    r = report
    out = [
        f"{r['path']}: n = {r['n']} tokens of dimension d = {r['d']}",
        f"  rho_hat = {r['rho_hat']:.4f}  (mean cosine of the normalised tokens, over pairs)",
        f"  q_hat   = {r['q_hat']:.4f}  (mean squared norm)",
    ]
    if r["note"]:
        out.append(r["note"])
    else:
        out.append(
            f"Next: attnscale critical --d {r['d']} --n <context length> --rho {r['rho_hat']:.4f}"
        )
    return "\n".join(out)


# --------------------------------------------------------------------------- command line


def _rounded(obj):
    """``obj`` with every float rounded to :data:`SIGNIFICANT` significant digits."""
    if isinstance(obj, float):
        return float(f"{obj:.{SIGNIFICANT}g}")
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v) for v in obj]
    return obj


def _number(text: str):
    """An argument as int or float if it reads as one, else the text itself (the library's
    check then names the argument and its range)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="attnscale",
        description="Ask the theory about one attention head (docs/ask-the-theory.md).",
    )
    p.add_argument("--version", action="version", version=f"attnscale {attnscale.__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser(
        "critical",
        help="the critical scale of a head of dimension d that sees n keys",
        description="Where a head of dimension d that sees n keys turns critical: the "
        "finite-d critical scale, its approximations, and the scaling rules of real models.",
    )
    c.add_argument("--d", required=True, type=_number, help="head dimension, integer 3..4096")
    c.add_argument(
        "--n", required=True, type=_number, help="keys per query (context length), 2..1e7"
    )
    c.add_argument(
        "--rho",
        type=_number,
        default=None,
        help="mean cosine of the tokens, 0 <= rho < 1 (default: 0, the smallest critical "
        "scale; estimate it with attnscale estimate-rho)",
    )
    c.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    e = sub.add_parser(
        "estimate-rho",
        help="estimate rho and q from an (n, d) array of tokens in a .npy file",
        description="rho_hat (mean pairwise cosine of the normalised rows) and q_hat (mean "
        "squared norm) of an (n, d) array of token vectors, e.g. a head's keys.",
    )
    e.add_argument("tokens", help="a .npy file holding a real (n, d) array, n >= 2")
    e.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command line (``attnscale ...``); returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "critical":
            report = critical_report(args.n, args.d, args.rho)
            text = format_critical(report)
        else:
            report = estimate_report(args.tokens)
            text = format_estimate(report)
    except (ValueError, TypeError) as exc:
        print(f"attnscale {args.command}: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        text = json.dumps(_rounded(report), indent=2, allow_nan=False, ensure_ascii=False)
    try:
        print(text)
    except BrokenPipeError:  # ``attnscale ... | head``: the reader left early
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit flush quiet
    return 0
