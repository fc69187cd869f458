"""Backend selection for the heavy kernels: ``numpy`` (the reference) or ``jax`` (CPU or GPU)
(``docs/gpu.md#choosing-the-backend``).

Every public kernel that has a JAX implementation takes a keyword ``backend``: ``"numpy"``,
``"jax"`` or ``None`` (the default), which means the process-wide default set by :func:`use`
(``numpy`` unless changed). The workflow sets that default for each job from the configuration
key ``backend`` (:func:`attnscale.pipeline.adapter.run_rule`), so experiment code needs no change.

This module never imports JAX itself: :func:`require_jax` does, with a clear error
(:class:`BackendError`) naming the configuration key, what is missing and how to install it.

Dispatch (``docs/gpu.md#choosing-the-backend``)
-----------------------------------------------
Each numpy kernel with a JAX twin validates its arguments, then asks :func:`uses_jax` and, if
so, imports its twin by an explicit statement and hands it the validated arrays::

    X, r, _, alpha = check_layer_inputs(X, None, alpha)      # validate once, for both backends
    if uses_jax(backend):
        from attnscale.layer.dense import attention_jax  # the twin, beside its module

        return attention_jax.angle_ratio_grid(X, r, betas, alpha, ...)
    ...                                                       # the numpy code

The twins are the ``*_jax`` modules beside the modules they mirror
(:mod:`attnscale.layer.dense.attention_jax`, :mod:`attnscale.sphere.keys_jax`, ...). Because the
import is a statement of the numpy module, :mod:`attnscale.pipeline.deps` counts the JAX code as
code of exactly the rules whose kernels can run on JAX; and JAX is imported only when a call
selects it. Every twin module imports JAX through :func:`jax_float64`, which switches JAX to
float64 (``jax_enable_x64``) before any array is made.

Imports nothing else of attnscale: the kernels import the backend, never the other way round
(docs/pipeline.md#the-package-layout).

Memory (``docs/gpu.md#memory-sizing``)
--------------------------------------
:func:`memory_budget` is the number of bytes a job may use on the device: a configured budget
(:func:`use` with ``memory_gb``, the configuration key ``backend_memory_gb``, or the environment
variable ``ATTNSCALE_MEMORY_GB``), else on a GPU ``bytes_limit - bytes_in_use`` from
``device.memory_stats()``, else the host's available memory (``/proc/meminfo``, then
``os.sysconf``). :func:`lambda_bytes` is the memory of the lambda kernel for given sizes and
:func:`plan_lambda` picks the tile size and the number of betas per group that fit the budget, or
raises :class:`BackendError` before any work starts.
"""

from __future__ import annotations

import contextlib
import math
import os

__all__ = [
    "BACKENDS",
    "JAX_VERSION",
    "INSTALL_HINT",
    "MEMORY_ENV",
    "MEMORY_FRACTION",
    "BackendError",
    "default",
    "check_name",
    "check_jax_installed",
    "resolve",
    "require_jax",
    "jax_float64",
    "uses_jax",
    "use",
    "device_free_bytes",
    "memory_budget",
    "padded",
    "lambda_bytes",
    "plan_lambda",
    "check_memory",
    "check_jax_fits",
]

#: The backends (``docs/gpu.md#choosing-the-backend``); ``numpy`` is the reference.
BACKENDS = ("numpy", "jax")

#: The pinned JAX version (envs/requirements.txt).
JAX_VERSION = "0.10.2"

#: How to install JAX, quoted by every error about a missing JAX.
INSTALL_HINT = (
    f"install it with `pip install jax=={JAX_VERSION} jaxlib=={JAX_VERSION}` (CPU; also in "
    f'envs/requirements.txt) or `pip install "jax[cuda12]=={JAX_VERSION}"` (NVIDIA GPU, CUDA 12), '
    "see docs/gpu.md#installing-jax"
)

#: Environment variable with a memory budget in GB (decimal) for the JAX kernels.
MEMORY_ENV = "ATTNSCALE_MEMORY_GB"

#: Fraction of the free device memory the kernels plan to use (XLA needs some headroom).
MEMORY_FRACTION = 0.8

_STATE: dict = {"backend": "numpy", "memory_gb": None}


class BackendError(RuntimeError):
    """The selected backend cannot run: JAX missing, or not enough memory for the job. The
    message names the configuration key, what is missing and how to fix it."""


def default() -> str:
    """The process-wide default backend (``"numpy"`` unless :func:`use` changed it)."""
    return _STATE["backend"]


def check_name(backend, key: str = "backend") -> str:
    """``backend`` if it is one of :data:`BACKENDS`, else a ``ValueError`` naming ``key``."""
    if backend not in BACKENDS:
        raise ValueError(f"{key} must be one of {BACKENDS}, got {backend!r}")
    return backend


def resolve(backend=None, key: str = "backend") -> str:
    """The backend a kernel call runs on: ``backend``, or the default when it is ``None``.

    Resolving to ``"jax"`` checks that JAX is importable (:func:`require_jax`).
    """
    name = default() if backend is None else check_name(backend, key)
    if name == "jax":
        require_jax(key)
    return name


def require_jax(key: str = "backend"):
    """Import and return the ``jax`` module, or raise :class:`BackendError`.

    The message says that ``<key>: jax`` needs the JAX package, why the import failed and how to
    install it (:data:`INSTALL_HINT`).
    """
    try:
        import jax
    except ImportError as err:
        raise BackendError(
            f"{key}: jax needs the JAX package, which is not importable ({err}); "
            f"{INSTALL_HINT}. Or set {key}: numpy."
        ) from None
    return jax


def check_jax_installed(key: str = "backend") -> None:
    """Raise :class:`BackendError` (as :func:`require_jax` does) unless JAX can be imported,
    without importing it where it is not yet imported (``import jax`` takes over a second): the
    package must be found on the path (:func:`importlib.util.find_spec`)."""
    import importlib.util
    import sys

    if "jax" in sys.modules:  # imported already (or blocked): importing again costs nothing
        require_jax(key)
        return
    try:
        found = importlib.util.find_spec("jax") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        require_jax(key)


def jax_float64():
    """Import and return the ``jax`` module (:func:`require_jax`) with float64 switched on
    (``jax_enable_x64``). Every JAX twin module calls it at import, before any array is made."""
    jax = require_jax()
    jax.config.update("jax_enable_x64", True)
    return jax


def uses_jax(backend=None, key: str = "backend") -> bool:
    """Whether a kernel call runs on JAX: ``backend`` (or the default, when it is ``None``)
    resolves to ``"jax"`` (:func:`resolve`: an unknown name is a ``ValueError``, a missing JAX a
    :class:`BackendError`).

    The one dispatch test of every kernel with a JAX twin; the pattern that goes with it (the
    twin imported by an explicit statement, validated arrays handed over) is in this module's
    docstring.
    """
    return resolve(backend, key) == "jax"


@contextlib.contextmanager
def use(backend: str, memory_gb: float | None = None):
    """Make ``backend`` the default of every kernel inside the ``with`` block.

    Parameters
    ----------
    backend : {"numpy", "jax"}
        The default backend; for ``"jax"`` the package is looked up at once
        (:func:`check_jax_installed`) and imported by the first kernel that runs on it.
    memory_gb : float, optional
        Memory budget of the JAX kernels in GB (decimal); ``None`` detects it
        (:func:`memory_budget`).
    """
    check_name(backend)
    if backend == "jax":
        check_jax_installed()
    if memory_gb is not None and not (isinstance(memory_gb, (int, float)) and memory_gb > 0):
        raise ValueError(f"backend_memory_gb must be a number > 0 or None, got {memory_gb!r}")
    saved = dict(_STATE)
    _STATE.update(backend=backend, memory_gb=memory_gb)
    try:
        yield
    finally:
        _STATE.clear()
        _STATE.update(saved)


# --------------------------------------------------------------------------- memory
def _host_available_bytes() -> int:
    """The host's available memory: ``MemAvailable`` of ``/proc/meminfo`` (Linux: free memory
    plus what the page cache can give back), else the free pages of ``os.sysconf``."""
    try:
        for line in open("/proc/meminfo").read().splitlines():  # noqa: SIM115, PTH123
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def device_free_bytes(device=None) -> tuple[int, str]:
    """Free memory of a JAX device and where the number comes from.

    On a GPU: ``bytes_limit - bytes_in_use`` of ``device.memory_stats()``; on a CPU (or a
    device without memory statistics): the host's available memory (``/proc/meminfo``, else
    ``os.sysconf``).

    Returns
    -------
    (int, str)
        Bytes and a short description of the source.
    """
    jax = require_jax()
    dev = jax.devices()[0] if device is None else device
    stats = None
    if dev.platform != "cpu":
        with contextlib.suppress(Exception):  # not every runtime implements memory_stats
            stats = dev.memory_stats()
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0)), (
            f"{dev.device_kind} memory_stats"
        )
    return _host_available_bytes(), "host available memory"


def memory_budget(device=None) -> tuple[int, str]:
    """Bytes the JAX kernels may plan with, and where the number comes from.

    A configured budget wins (``memory_gb`` of :func:`use`, then the environment variable
    :data:`MEMORY_ENV`); else :data:`MEMORY_FRACTION` of :func:`device_free_bytes`
    (``docs/gpu.md#memory-sizing``).
    """
    gb = _STATE["memory_gb"]
    if gb is None and os.environ.get(MEMORY_ENV):
        try:
            gb = float(os.environ[MEMORY_ENV])
        except ValueError:
            raise ValueError(
                f"{MEMORY_ENV} must be a number of GB, got {os.environ[MEMORY_ENV]!r}"
            ) from None
    if gb is not None:
        return int(gb * 1e9), "configured budget"
    free, source = device_free_bytes(device)
    return int(MEMORY_FRACTION * free), f"{MEMORY_FRACTION:g} x {source}"


def padded(n: int, tile: int) -> int:
    """``n`` rounded up to a multiple of ``tile``: the padded size of the JAX kernels' tiled
    arrays (``docs/gpu.md#memory-sizing``)."""
    return -(-int(n) // int(tile)) * int(tile)


def lambda_bytes(n: int, d: int, betas: int = 1, tile: int = 1024, itemsize: int = 8) -> int:
    """Bytes the JAX lambda kernel needs for ``n`` tokens in ``d`` dimensions, ``betas`` betas
    per group and ``tile x tile`` score tiles (``docs/gpu.md#memory-sizing``).

    Resident for the whole group (``N = n`` rounded up to a multiple of ``tile``): the tokens
    ``X`` and ``Y`` (``2 N d``), the outputs ``Y'`` and their centred copy ``Z`` (``2 N B d``)
    and their squared norms (``N B``). Per tile, at most three ``B x tile x tile`` arrays
    (scores, weights and XLA's fusion temporaries) and two ``tile x tile`` ones, plus the
    ``B x tile x d`` accumulators. No ``n x n`` matrix is ever formed.

    Returns
    -------
    int
        Bytes (``itemsize`` 8 for float64, 4 for float32).
    """
    N = padded(n, tile)
    B, t, d = int(betas), int(tile), int(d)
    resident = 2 * N * d + 2 * N * B * d + N * B
    per_tile = 3 * B * t * t + 2 * t * t + 3 * B * t * d
    return itemsize * (resident + per_tile)


def plan_lambda(
    n: int,
    d: int,
    m: int,
    *,
    tile: int | None = None,
    budget: int | None = None,
    itemsize: int = 8,
    what: str = "lambda",
) -> dict:
    """Tile size and betas per group of the JAX lambda kernel within the memory budget.

    The tile is ``tile`` if given, else the largest of 1024, 512, ..., 32 (at most ``n``
    rounded up to 32) that fits with one beta; then as many of the ``m`` betas per group as fit.

    Raises
    ------
    BackendError
        Not even one beta with the smallest tile fits: the message gives the bytes needed and the
        budget (and its source), before any work starts.
    """
    if budget is None:
        budget, source = memory_budget()
    else:
        source = "given budget"
    cap = max(32, 1 << max(5, math.ceil(math.log2(max(2, n)))))
    tiles = [tile] if tile is not None else [t for t in (1024, 512, 256, 128, 64, 32) if t <= cap]
    for t in tiles:
        fixed = lambda_bytes(n, d, 0, t, itemsize)
        per_beta = lambda_bytes(n, d, 1, t, itemsize) - fixed  # lambda_bytes is linear in B
        if fixed + per_beta <= budget:
            B = int(min(m, (budget - fixed) // per_beta))
            return {
                "tile": int(t),
                "betas_per_group": B,
                "bytes": lambda_bytes(n, d, B, t, itemsize),
                "budget": int(budget),
                "source": source,
            }
    need = lambda_bytes(n, d, 1, tiles[-1], itemsize)
    raise BackendError(
        f"backend: jax: {what} at n = {n}, d = {d} needs {need / 1e9:.2f} GB with one beta and "
        f"{tiles[-1]} x {tiles[-1]} tiles, but the budget is {budget / 1e9:.2f} GB ({source}); "
        f"use a device with more memory, lower n, or set backend_memory_gb / {MEMORY_ENV} "
        "(docs/gpu.md#memory-sizing)"
    )


def check_memory(need: int, what: str, key: str = "backend") -> None:
    """Raise :class:`BackendError` if ``need`` bytes exceed :func:`memory_budget`."""
    budget, source = memory_budget()
    if need > budget:
        raise BackendError(
            f"{key}: jax: {what} needs {need / 1e9:.2f} GB but the budget is "
            f"{budget / 1e9:.2f} GB ({source}); use a device with more memory, smaller sizes, or "
            f"set backend_memory_gb / {MEMORY_ENV} (docs/gpu.md#memory-sizing)"
        )


def check_jax_fits(jobs, memory_gb: float | None = None, key: str = "backend") -> None:
    """Check before any work that the JAX backend can run ``jobs``: JAX is importable and each
    ``(what, n, d)`` fits the memory budget (:func:`memory_budget`, with ``memory_gb`` as the
    configured budget) with one beta and the smallest tile (``docs/gpu.md#choosing-the-backend``).
    The workflow calls it when it is parsed, with its largest lambda-type jobs
    (:func:`attnscale.pipeline.config_checks.lambda_jobs`).

    Raises
    ------
    BackendError
        JAX is missing, or a job needs more memory than the budget; the message names ``key``,
        the job and the sizes.
    """
    require_jax(key)
    with use("jax", memory_gb):
        budget, source = memory_budget()
        for what, n, d in jobs:
            need = lambda_bytes(n, d, 1, 32)
            if need > budget:
                raise BackendError(
                    f"{key}: jax: {what} at n = {n}, d = {d} needs at least "
                    f"{need / 1e9:.2f} GB, but the budget is {budget / 1e9:.2f} GB ({source}); "
                    "run on a device with more memory, lower the sizes, or set "
                    "backend_memory_gb (docs/gpu.md#memory-sizing)"
                )
