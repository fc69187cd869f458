"""Regenerate the golden tables on purpose: run the smoke configuration in a temporary copy of
the repository and copy the files listed in tests/golden/files.txt into tests/golden/.

    python tests/regenerate_golden.py

Review the diff (``git diff tests/golden``) before committing: a change means the numbers of the
smoke run changed.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import REPO, SMOKE, copy_repo, snakemake  # noqa: E402


def golden_files() -> list[str]:
    lines = (REPO / "tests/golden/files.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = copy_repo(Path(tmp) / "repo")
        snakemake(work, "--cores", "2", *SMOKE)
        for rel in golden_files():
            dest = REPO / "tests/golden" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(work / rel, dest)
            print(f"wrote {dest.relative_to(REPO)}")


if __name__ == "__main__":
    main()
