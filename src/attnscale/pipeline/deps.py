"""Which library files a rule depends on: the import closure of its entry module
(docs/pipeline.md#what-depends-on-what).

Every rule names its library entry function (``params: entry="attnscale.experiments.paper_a:
lambda_rows"``) and declares ``input: lib=lib(entry)``. :func:`closure` walks the ``import``
statements of that module (all of them, including imports inside functions) with :mod:`ast`,
recursively through ``attnscale``, so editing a library file reruns exactly the jobs whose code
imports it, directly or transitively, and nothing else. Nothing is imported or executed.
"""

from __future__ import annotations

import ast
import atexit
import functools
import hashlib
import json
import os
from pathlib import Path

__all__ = ["jobs_to_run", "module_file", "direct_imports", "closure", "lib_files"]

PACKAGE = "attnscale"
SRC = Path(__file__).resolve().parents[2]


def module_file(module: str, src: Path = SRC) -> Path | None:
    """The source file of an ``attnscale`` module name, or ``None`` if it is not a module.
    Looked up once per process (a Snakemake parse asks ~7000 times): a module file created
    after its first lookup is not seen until the next process."""
    return _module_file(module, Path(src))


@functools.cache
def _module_file(module: str, src: Path) -> Path | None:
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = src.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


#: The parsed ``import`` statements of every file version seen, by the SHA-256 of its bytes,
#: kept between processes in the repository's ``.snakemake/`` (each Snakemake parse and dry run
#: needs the closure of every rule; parsing ~200 files cost ~1 CPU-s a time). Keyed by content,
#: never by time stamps: an edited file is parsed afresh.
CACHE_NAME = ".snakemake/attnscale-imports.json"


@functools.cache
def _disk_cache(src: Path) -> dict:
    path = src.parent / CACHE_NAME
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    cache = data if isinstance(data, dict) else {}
    atexit.register(_save, path, cache, len(cache))
    return cache


def _save(path: Path, cache: dict, known: int) -> None:
    """Write the cache back if this process parsed a file it did not hold (atomically; a
    repository that cannot be written is left alone)."""
    if len(cache) == known:
        return
    try:
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, separators=(",", ":"), sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass


@functools.cache
def _import_nodes(path: str, mtime_ns: int, size: int, src: Path = SRC) -> tuple[tuple, ...]:
    """The ``import`` statements of a file at any depth, as ``(module or None, level, names)``
    (``None``: ``import names``), parsed once per file version (the workflow asks for the
    closure of every rule's entry module; they share most files)."""
    raw = Path(path).read_bytes()
    cache = _disk_cache(Path(src))
    key = hashlib.sha256(raw).hexdigest()
    if key not in cache:
        tree = ast.parse(raw.decode(), path)
        cache[key] = [
            [None, 0, [a.name for a in n.names]]
            if isinstance(n, ast.Import)
            else [n.module, n.level, [a.name for a in n.names]]
            for n in _statements(tree.body)
            if isinstance(n, (ast.Import, ast.ImportFrom))
        ]
    return tuple((m, lev, tuple(names)) for m, lev, names in cache[key])


def _statements(body: list[ast.stmt]):
    """Every statement in ``body`` and in the statement blocks nested in it (functions, classes,
    if/for/while/with/try/match): an ``import`` is a statement, so this finds what ``ast.walk``
    finds without visiting the expressions, which are most of a file's nodes."""
    for stmt in body:
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                yield from _statements(block)
        for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            yield from _statements(part.body)


def direct_imports(module: str, src: Path = SRC) -> set[str]:
    """``attnscale`` modules imported by ``module`` (absolute and relative, at any depth of the
    file), each with its parent packages (importing ``a.b.c`` runs ``a/__init__`` and
    ``a/b/__init__``)."""
    path = module_file(module, src)
    if path is None:
        raise ValueError(f"{module!r} is not a module of {PACKAGE} under {src}")
    st = path.stat()
    return set(_direct_imports(module, Path(src), str(path), st.st_mtime_ns, st.st_size))


@functools.cache
def _direct_imports(module: str, src: Path, path: str, mtime_ns: int, size: int) -> frozenset:
    """:func:`direct_imports` of one file version: the workflow asks for the closure of every
    rule's entry module (~45), and they share most files, so each file's imports are resolved
    once per process (a Snakemake parse spent ~1 s here before)."""
    pkg = _package_of(module, Path(path))
    found: set[str] = set()
    for module_name, level, imported in _import_nodes(path, mtime_ns, size, src):
        if module_name is None and level == 0:  # import a.b, c
            names = list(imported)
        else:
            if level:
                base = pkg.split(".")
                base = base[: len(base) - (level - 1)]
                target = ".".join(base + ([module_name] if module_name else []))
            else:
                target = module_name or ""
            # "from pkg import name": name may be a submodule or an attribute of pkg
            names = [target] + [f"{target}.{a}" for a in imported]
        for name in names:
            if name.split(".")[0] != PACKAGE:
                continue
            parts = name.split(".")
            for k in range(1, len(parts) + 1):
                sub = ".".join(parts[:k])
                if module_file(sub, src) is not None:
                    found.add(sub)
    found.discard(module)
    return frozenset(found)


@functools.cache
def closure(module: str, src: Path = SRC) -> tuple[str, ...]:
    """Sorted module names reachable from ``module`` by imports, ``module`` and its packages
    included."""
    seen: set[str] = set()
    parts = module.split(".")
    todo = [".".join(parts[:k]) for k in range(1, len(parts) + 1)]
    while todo:
        m = todo.pop()
        if m in seen or module_file(m, src) is None:
            continue
        seen.add(m)
        todo.extend(direct_imports(m, src) - seen)
    return tuple(sorted(seen))


def lib_files(entry: str, src: Path = SRC, root: Path | None = None) -> list[str]:
    """Library source files behind an entry ``"module:function"`` (or a module name), as paths
    relative to ``root`` (default: the repository root, the parent of ``src/``)."""
    module = entry.partition(":")[0]
    if not module.startswith(PACKAGE + "."):
        module = f"{PACKAGE}.{module}"
    if module_file(module, src) is None:
        raise ValueError(f"entry {entry!r}: no module {module!r} under {src}")
    root = src.parent if root is None else root
    return sorted(str(module_file(m, src).relative_to(root)) for m in closure(module, src))


def jobs_to_run(stdout: str) -> dict[str, int]:
    """Rule -> job count from the "Job stats" table that ``snakemake -n`` prints (``{}``:
    nothing to do). Used to check which jobs a change reruns (docs/pipeline.md#what-depends-on-what)
    and by ``tools/gpu_run.py`` to count the jobs of a configuration."""
    counts, table = {}, False
    for line in stdout.splitlines():
        parts = line.split()
        if line.startswith("Job stats"):
            table = True
        elif table and len(parts) == 2 and parts[1].isdigit() and parts[0] != "total":
            counts[parts[0]] = int(parts[1])
        elif table and parts[:1] == ["total"]:
            break
    return counts
