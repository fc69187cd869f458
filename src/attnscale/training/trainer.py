"""The training loop: AdamW with a warm-up and cosine schedule, float32, the loss logged every
few steps, a stop on a non-finite loss (docs/training.md#training).

Deterministic: the initial parameters and every batch come from generators seeded by the job's
identity, and the loop has no other source of randomness, so the same seed and data give the
same parameters bit for bit on one machine (tests/test_training.py checks the checkpoint bytes).
"""

from __future__ import annotations

import numpy as np

from attnscale.training import TrainingError, require

__all__ = ["train"]


def _optimizer(optax, steps: int, lr: float, weight_decay: float, warmup: int):
    schedule = optax.warmup_cosine_decay_schedule(0.0, lr, max(1, warmup), max(steps, warmup + 1))
    return optax.chain(
        optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=weight_decay)
    )


def train(
    loss_fn,
    runs: list,
    *,
    steps: int,
    lr: float,
    weight_decay: float,
    warmup: int,
    log_every: int,
    frozen=(),
    log=None,
):
    """Train each run's parameters for ``steps`` AdamW steps on ``loss_fn(params, batch)``; one
    compiled step serves every run (the seeds of one variant: one compilation per job).

    Parameters
    ----------
    loss_fn : callable
        ``(params, batch) -> scalar`` written with jax.numpy.
    runs : list of (dict, callable)
        Per run: the initial float32 parameters and ``next_batch(step) -> batch`` (a dict of
        numpy arrays, deterministic).
    steps, lr, weight_decay, warmup, log_every : int or float
        The schedule [choice; docs/training.md#training] and the loss log's period.
    frozen : sequence of str
        Parameters held at their initial values (the s_h of the variants that do not learn it,
        the fixed random key embeddings).
    log : logging.Logger, optional
        Where the loss goes every ``log_every`` steps (the job's Snakemake log).

    Returns
    -------
    list of (params, curve)
        The trained float32 parameters and the loss every ``log_every`` steps (``step``,
        ``loss`` arrays), per run.

    Raises
    ------
    TrainingError
        A non-finite loss, naming the run, the step and the loss; nothing is returned, so no
        checkpoint is written.
    """
    jax, optax = require()
    jnp = jax.numpy
    opt = _optimizer(optax, steps, lr, weight_decay, warmup)

    @jax.jit
    def step(p, fixed, state, b):
        value, g = jax.value_and_grad(lambda q: loss_fn({**q, **fixed}, b))(p)
        updates, state = opt.update(g, state, p)
        return optax.apply_updates(p, updates), state, value

    out = []
    for r, (params, next_batch) in enumerate(runs):
        p = {k: jnp.asarray(v, jnp.float32) for k, v in params.items() if k not in frozen}
        fixed = {k: jnp.asarray(v, jnp.float32) for k, v in params.items() if k in frozen}
        state = opt.init(p)
        xs, ys = [], []
        for t in range(steps):
            p, state, value = step(p, fixed, state, next_batch(t))
            if t % log_every == 0 or t == steps - 1:
                v = float(value)
                if not np.isfinite(v):
                    raise TrainingError(
                        f"run {r}: non-finite loss {v} at step {t}: no checkpoint written"
                    )
                xs.append(t)
                ys.append(v)
                if log is not None:
                    log.info("run %d step %d/%d: loss %.5f", r, t, steps, v)
        final = {k: np.asarray(v, np.float32) for k, v in {**p, **fixed}.items()}
        out.append(({k: final[k] for k in params}, {"step": np.array(xs), "loss": np.array(ys)}))
    return out
