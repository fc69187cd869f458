"""Regenerate the golden tables on purpose: run the smoke configuration in a temporary copy of
the repository and copy the files listed in tests/golden/files.txt into tests/golden/.

    python tests/regenerate_golden.py                 # fresh smoke run in a temporary copy
    python tests/regenerate_golden.py --from TREE     # take them from a finished smoke tree

``TREE`` is a finished smoke run of the current sources (for example the ``smoke/repo``
directory the test session left under pytest's temporary directory); it saves a full run.
Review the diff (``git diff tests/golden``) before committing: a change means the numbers of
the smoke run changed. The golden tables detect change, not error: the independent references
are in ``tests/test_refs_*.py``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import REPO, SMOKE, copy_repo, snakemake  # noqa: E402


def golden_files() -> list[str]:
    lines = (REPO / "tests/golden/files.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def copy_from(work: Path) -> None:
    for rel in golden_files():
        dest = REPO / "tests/golden" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / rel, dest)
        print(f"wrote {dest.relative_to(REPO)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="tree", type=Path, help="a finished smoke tree")
    args = parser.parse_args()
    if args.tree is not None:
        missing = [rel for rel in golden_files() if not (args.tree / rel).is_file()]
        if missing:
            sys.exit(f"{args.tree} is not a finished smoke tree; missing {missing}")
        copy_from(args.tree)
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = copy_repo(Path(tmp) / "repo")
        snakemake(work, "--cores", "2", *SMOKE)
        copy_from(work)


if __name__ == "__main__":
    main()
