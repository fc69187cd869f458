"""Paper A's data-generation step: the Gaussian draws behind the tokens, cached once per
``(n, d, trial)`` and turned into the tokens of any ``rho`` (docs/paper-a.md#gaussian-near-simplex-tokens).

Kept apart from the simulations so that editing attention or theory code never invalidates the
cached draws (their rule depends only on this module's imports).
"""

from __future__ import annotations

import numpy as np

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.layer import tokens
from attnscale.pipeline.io import provenance_arrays

__all__ = ["Z0_MODES", "draw_tokens", "tokens_at", "check_draws", "RegeneratedDraws", "job_draws"]

TOKENS_STREAM = "paper_a/tokens"
#: How the common component enters the tokens (docs/long-context.md#variance-reduction):
#: ``"gaussian"``, the draw's ``z_0 ~ N(0, I/d)`` (Paper A's Gaussian model as in the default
#: run), or ``"fixed_norm"``, the same direction with ``||z_0|| = 1`` (conditioned on its norm).
Z0_MODES = ("gaussian", "fixed_norm")


def token_key(n: int, d: int, trial: int) -> tuple[int, ...]:
    """Spawn key of a token draw. ``rho`` is *not* part of it: for fixed ``(n, d, trial)`` every
    ``rho`` uses the same Gaussian draws ``z_0, z_i`` (common random numbers, our choice), so
    differences across ``rho`` in a figure are the effect of ``rho``, not of new noise."""
    return spawn_key(TOKENS_STREAM, n, d, trial)


def draw_tokens(*, n: int, d: int, trial: int, root_seed: int) -> dict:
    """Entry of rule ``paper_a_tokens``: the Gaussian draw of one ``(n, d, trial)``.

    Returns the npz content: ``z0`` and ``Z`` (:func:`attnscale.layer.tokens.gaussian_draw`) and the
    provenance (:func:`attnscale.pipeline.io.provenance_arrays`: ``root_seed`` as a decimal
    string, ``spawn_key``, package version, git commit).
    The tokens of every ``rho`` are built from it by :func:`tokens_at` (common random numbers,
    docs/paper-a.md#gaussian-near-simplex-tokens).
    """
    key = token_key(n, d, trial)
    z0, Z = tokens.gaussian_draw(n, d, job_rng(root_seed, key))
    return {
        "z0": z0,
        "Z": Z,
        "n": np.int64(n),
        "d": np.int64(d),
        "trial": np.int64(trial),
        **provenance_arrays(root_seed, key),
    }


def tokens_at(draw: dict, rho: float, *, z0: str = "gaussian", in_place: bool = False) -> dict:
    """The token draw at ``rho`` from a cached Gaussian draw (:func:`draw_tokens`): a dict with
    ``X``, ``n``, ``d``, ``rho``, ``trial``, ``rho_hat`` (realised mean cosine), ``q_hat`` (mean
    squared norm), ``root_seed`` (int) and ``spawn_key`` (tuple).

    ``z0="fixed_norm"`` rescales the draw's ``z_0`` to norm 1 (its direction and every ``z_i``
    unchanged): the tokens conditioned on ``||z_0||^2 = E||z_0||^2 = 1``, which removes the
    draw-to-draw spread that the common component's norm causes
    (docs/long-context.md#variance-reduction) [choice]. ``in_place=True`` builds ``X`` over the
    draw's ``Z`` (no second ``n x d`` array; the draw cannot be used again).
    """
    if z0 not in Z0_MODES:
        raise ValueError(f"z0 must be one of {Z0_MODES}, got {z0!r}")
    c = draw["z0"]
    if z0 == "fixed_norm":
        c = c / np.linalg.norm(c)
    X = tokens.from_draw(c, draw["Z"], rho, out=draw["Z"] if in_place else None)
    return {
        "X": X,
        "n": int(draw["n"]),
        "d": int(draw["d"]),
        "rho": float(rho),
        "trial": int(draw["trial"]),
        "rho_hat": tokens.mean_cosine(X),
        "q_hat": tokens.mean_sq_norm(X),
        "root_seed": int(str(draw["root_seed"])),
        "spawn_key": tuple(int(v) for v in draw["spawn_key"]),
    }


def check_draws(draws: list[dict], n: int | None = None, d: int | None = None) -> tuple[int, int]:
    """The ``(n, d)`` of one job's token draws (each a dict with ``Z`` of shape ``(n, d)``, e.g.
    from :func:`draw_tokens`), checked: at least one draw, all of one shape, and that shape the
    job's ``n`` and ``d`` where they are given (a rule passes its wildcards, so a draw read from
    the wrong file is an error, not a silently different table).

    Raises
    ------
    ValueError
        No draw, draws of different shapes, or a shape other than ``(n, d)``; the message names
        the argument.
    """
    if not draws:
        raise ValueError("draws must hold at least one token draw")
    shape = np.shape(draws[0]["Z"])
    for k, draw in enumerate(draws):
        if np.shape(draw["Z"]) != shape:
            raise ValueError(f"draws[{k}] has Z of shape {np.shape(draw['Z'])}, expected {shape}")
    for name, want, got in (("n", n, shape[0]), ("d", d, shape[1])):
        if want is not None and int(want) != got:
            raise ValueError(
                f"{name} = {want} but the draws have {name} = {got} (Z of shape {shape})"
            )
    return int(shape[0]), int(shape[1])


class RegeneratedDraws:
    """The token draws 0 to ``trials - 1`` of one ``(n, d)``, made from their seeds when they are
    used (:func:`draw_tokens`, the same numbers as the cached draw of rule ``paper_a_tokens``),
    one at a time: a sequence for jobs whose draws are not cached (``n >=
    paper_a.regenerate_n``, docs/long-context.md#draws-that-are-not-cached). Each access makes the
    draw anew (nothing is kept), so a job holds one draw at a time."""

    def __init__(self, n: int, d: int, trials: int, root_seed: int):
        self.n, self.d, self.trials, self.root_seed = int(n), int(d), int(trials), int(root_seed)

    def __len__(self) -> int:
        return self.trials

    def __getitem__(self, k: int) -> dict:
        if not 0 <= k < self.trials:
            raise IndexError(k)
        return draw_tokens(n=self.n, d=self.d, trial=k, root_seed=self.root_seed)

    def __iter__(self):
        return (self[k] for k in range(self.trials))


def job_draws(draws, *, n=None, d=None, trials=None, root_seed=None):
    """The token draws of a job: its cached draws (the rule's input files), checked
    (:func:`check_draws`), or, when the rule passes none because they are regenerated (``n >=
    paper_a.regenerate_n``), :class:`RegeneratedDraws` of ``trials`` draws of ``(n, d)`` from
    ``root_seed`` (docs/long-context.md#draws-that-are-not-cached).

    Raises
    ------
    ValueError
        No draws and no ``n``, ``d``, ``trials`` and ``root_seed`` to make them from, or the
        checks of :func:`check_draws`.
    """
    if draws:
        check_draws(draws, n, d)
        return draws
    if None in (n, d, trials, root_seed):
        raise ValueError(
            "draws must hold at least one token draw (or give n, d, trials and "
            "root_seed to regenerate them)"
        )
    return RegeneratedDraws(n, d, trials, root_seed)
