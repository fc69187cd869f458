"""Regenerate texts/pride-and-prejudice.txt, byte for byte, from its source: Debian's package
r-cran-janeaustenr 1.0.0-1 (MIT; the novels are in the public domain), read without R, dpkg-deb
or installing the package (docs/real-transformer.md#real-text; docs/choices.md says why the
plain text is committed).

The text is the character vector ``prideprejudice`` of the package's ``data/Rdata.rdb`` (read by
attnscale.transformer.corpus), its lines joined by newlines, with a final newline, UTF-8.

Usage (from the repository root)::

    python tools/get_text.py --deb r-cran-janeaustenr_1.0.0-1_all.deb   # the .deb (SHA-256 checked)
    python tools/get_text.py --rdb .../janeaustenr/data/Rdata.rdb      # an unpacked package
    python tools/get_text.py --deb FILE --check   # compare with the committed file, write nothing

The .deb comes from any Debian mirror (pool/main/r/r-cran-janeaustenr/) or, on Debian,
``apt-get download r-cran-janeaustenr=1.0.0-1`` (tools/get_text.sh does both steps).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import lzma
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from attnscale.transformer.corpus import (  # noqa: E402
    JANEAUSTENR_RDB_SHA256,
    read_rdb_strings,
)

#: SHA-256 of r-cran-janeaustenr_1.0.0-1_all.deb
DEB_SHA256 = "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95"
#: where the database sits inside the package
RDB_IN_DEB = "usr/lib/R/site-library/janeaustenr/data/Rdata"
PART = "prideprejudice"
OUT = REPO / "texts" / "pride-and-prejudice.txt"


def ar_members(blob: bytes) -> dict[str, bytes]:
    """The members of a Unix ``ar`` archive (a .deb is one) by name."""
    if blob[:8] != b"!<arch>\n":
        raise SystemExit("not a .deb (no ar archive header)")
    out, p = {}, 8
    while p + 60 <= len(blob):
        head = blob[p : p + 60]
        name = head[:16].decode().strip().rstrip("/")
        size = int(head[48:58].decode().strip())
        out[name] = blob[p + 60 : p + 60 + size]
        p += 60 + size + (size % 2)
    return out


def rdb_from_deb(deb: Path, into: Path) -> Path:
    """Check the .deb's SHA-256 and write its Rdata.rdb and Rdata.rdx under ``into``."""
    blob = deb.read_bytes()
    digest = hashlib.sha256(blob).hexdigest()
    if digest != DEB_SHA256:
        raise SystemExit(f"{deb} has SHA-256 {digest}, expected {DEB_SHA256}")
    members = ar_members(blob)
    name = next((m for m in members if m.startswith("data.tar")), None)
    if name is None:
        raise SystemExit(f"{deb} holds no data.tar member")
    data = members[name]
    if name.endswith(".xz"):
        data = lzma.decompress(data)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for suffix in (".rdb", ".rdx"):
            member = tar.getmember("./" + RDB_IN_DEB + suffix)
            (into / f"Rdata{suffix}").write_bytes(tar.extractfile(member).read())
    return into / "Rdata.rdb"


def text_from_rdb(rdb: Path) -> bytes:
    """The novel's plain text from the package's database (its SHA-256 checked)."""
    digest = hashlib.sha256(rdb.read_bytes()).hexdigest()
    if digest != JANEAUSTENR_RDB_SHA256:
        raise SystemExit(f"{rdb} has SHA-256 {digest}, expected {JANEAUSTENR_RDB_SHA256}")
    return ("\n".join(read_rdb_strings(rdb, PART)) + "\n").encode("utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--deb", type=Path, help="r-cran-janeaustenr_1.0.0-1_all.deb")
    src.add_argument("--rdb", type=Path, help="Rdata.rdb of the unpacked package")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with --out, write nothing")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rdb = rdb_from_deb(a.deb, Path(tmp)) if a.deb else a.rdb
        text = text_from_rdb(rdb)
    digest = hashlib.sha256(text).hexdigest()
    if a.check:
        same = a.out.is_file() and a.out.read_bytes() == text
        print(f"{a.out}: {'identical' if same else 'DIFFERS'} (regenerated SHA-256 {digest})")
        return 0 if same else 1
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_bytes(text)
    print(f"wrote {a.out} ({len(text)} bytes, SHA-256 {digest})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
