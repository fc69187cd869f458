"""Real text for the transformer experiments: reading a corpus and cutting it into windows
(docs/real-transformer.md#real-text).

Two kinds of corpus file are read [choice]:

* a plain UTF-8 text file (``.txt``): the user's own corpus;
* an R lazy-load database (``Rdata.rdb`` beside ``Rdata.rdx``), the form in which the Debian
  package ``r-cran-janeaustenr`` 1.0.0-1 ships Jane Austen's six novels (one character vector of
  lines per novel; MIT-licensed package, public-domain texts). :func:`read_rdb_strings` is a
  small reader of R's XDR serialisation for the objects such a database holds (character,
  integer, logical and double vectors, lists, attributes); R itself is not needed.

Windows (:func:`windows`) hold ``n`` word pieces: ``[CLS]``, ``n - 2`` consecutive pieces of the
text and ``[SEP]``, as the sentence model saw its inputs [choice]; consecutive windows do not
overlap.
"""

from __future__ import annotations

import gzip
import hashlib
import struct
import zlib
from pathlib import Path

import numpy as np

__all__ = [
    "CorpusError",
    "JANEAUSTENR_RDB_SHA256",
    "read_rdb_strings",
    "read_text",
    "windows",
    "tokens_needed",
]

#: SHA-256 of ``Rdata.rdb`` of Debian's r-cran-janeaustenr 1.0.0-1 (the .deb itself:
#: df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95).
JANEAUSTENR_RDB_SHA256 = "8fb5198960d0da724b1562f96e4221e5c1b41ff455000280b02c55980c3d8f21"


class CorpusError(ValueError):
    """The corpus cannot be read or is too short; the message names the file or the key."""


class _Reader:
    """R's XDR serialisation (format 2 or 3), the subset a data database holds."""

    def __init__(self, buf: bytes):
        if buf[:2] != b"X\n":
            raise CorpusError("not an R XDR serialisation")
        self.b, self.p, self.refs = buf, 2, []
        version = self.int()
        self.int(), self.int()  # writer's R version, minimal reader version
        if version == 3:
            skip = self.int()  # length of the native encoding's name, then the name
            self.p += skip
        elif version != 2:
            raise CorpusError(f"R serialisation version {version} is not supported")

    def int(self) -> int:
        (v,) = struct.unpack_from(">i", self.b, self.p)
        self.p += 4
        return v

    def item(self):
        flags = self.int()
        typ, has_attr, has_tag = flags & 0xFF, bool(flags & 0x200), bool(flags & 0x400)
        if typ in (254, 242, 253, 251):  # NULL, empty env, global env, missing arg
            return None
        if typ == 255:  # reference to an earlier symbol
            return self.refs[(flags >> 8) - 1]
        if typ == 1:  # symbol
            name = self.item()
            self.refs.append(name)
            return name
        if typ == 9:  # CHARSXP
            n = self.int()
            if n == -1:
                return None
            s = self.b[self.p : self.p + n].decode("utf-8", errors="replace")
            self.p += n
            return s
        if typ == 2:  # pairlist: (tag, value) pairs
            out = {}
            while typ == 2:
                if has_attr:
                    self.item()
                tag = self.item() if has_tag else str(len(out))
                out[tag] = self.item()
                flags = self.int()
                typ, has_attr, has_tag = flags & 0xFF, bool(flags & 0x200), bool(flags & 0x400)
            return out  # the terminating NULL was read as flags
        n = self.int()
        if typ in (10, 13):  # logical, integer
            v = np.frombuffer(self.b, ">i4", n, self.p).astype(np.int64)
            self.p += 4 * n
        elif typ == 14:  # double
            v = np.frombuffer(self.b, ">f8", n, self.p).astype(np.float64)
            self.p += 8 * n
        elif typ in (16, 19, 20):  # character vector, list, expression
            v = [self.item() for _ in range(n)]
        else:
            raise CorpusError(f"R object type {typ} is not supported")
        if has_attr:
            attrs = self.item()
            names = attrs.get("names") if isinstance(attrs, dict) else None
            if typ == 19 and names is not None:
                v = dict(zip(names, v, strict=True))
        return v


def _unserialize(buf: bytes):
    return _Reader(buf).item()


def read_rdb_strings(rdb, name: str) -> list[str]:
    """The character vector ``name`` of an R lazy-load database ``rdb`` (``Rdata.rdb``; its index
    ``Rdata.rdx`` beside it). Raises :class:`CorpusError` naming the file or the object."""
    rdb = Path(rdb)
    rdx = rdb.with_suffix(".rdx")
    for f in (rdb, rdx):
        if not f.is_file():
            raise CorpusError(f"corpus file {f} does not exist")
    index = _unserialize(gzip.decompress(rdx.read_bytes()))
    variables = index.get("variables", {}) if isinstance(index, dict) else {}
    if name not in variables:
        raise CorpusError(f"{rdb} holds no object {name!r}; it holds {sorted(variables)}")
    off, length = (int(x) for x in variables[name])
    with open(rdb, "rb") as fh:
        fh.seek(off)
        chunk = fh.read(length)
    (size,) = struct.unpack(">I", chunk[:4])
    body = zlib.decompress(chunk[4:])
    if len(body) != size:
        raise CorpusError(f"{rdb}: object {name!r} is damaged")
    value = _unserialize(body)
    if not isinstance(value, list) or not all(s is None or isinstance(s, str) for s in value):
        raise CorpusError(f"{rdb}: object {name!r} is not a character vector")
    return [s for s in value if s is not None]


def read_text(path, part: str | None = None) -> tuple[str, str]:
    """The corpus at ``path`` as one string with its SHA-256 (of the file read): a ``.rdb``
    database's character vector ``part`` joined by newlines, or a text file's content."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"transformer.text: corpus file {path} does not exist")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if path.suffix == ".rdb":
        if not part:
            raise CorpusError("transformer.text_part: a .rdb corpus needs the object's name")
        lines = read_rdb_strings(path, part)
        return "\n".join(lines), digest
    return path.read_text(encoding="utf-8"), digest


def tokens_needed(n_values, count: int) -> int:
    """Text word pieces needed for ``count`` non-overlapping windows of the largest ``n``
    (``n - 2`` text pieces each, the other two being ``[CLS]`` and ``[SEP]``)."""
    return int(count) * (int(max(n_values)) - 2)


def windows(ids, n: int, count: int, cls_id: int, sep_id: int) -> np.ndarray:
    """``count`` consecutive, non-overlapping windows of ``n`` token ids, ``[CLS] + n - 2 text
    pieces + [SEP]`` each, from the start of ``ids`` (fewer if the text is shorter)."""
    ids = np.asarray(ids, dtype=np.int64)
    k = min(int(count), ids.size // (n - 2))
    body = ids[: k * (n - 2)].reshape(k, n - 2)
    return np.concatenate([np.full((k, 1), cls_id), body, np.full((k, 1), sep_id)], axis=1).astype(
        np.int64
    )
