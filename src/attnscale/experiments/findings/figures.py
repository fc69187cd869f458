"""Publish a run's figures beside its findings (docs/pipeline.md#published-figures).

``python -m attnscale.experiments.findings publish`` copies the PNG figures of the run whose
findings it publishes into ``docs/_static/figures/`` (the default configuration's;
``docs/_static/figures-NAME/`` for the run of ``config/NAME.yaml``), where the pages and the
gallery of a build from a clone show them. Each figure is stored as a 256-colour palette PNG at
the pixel size it was drawn (a plot has few colours: about a third of the bytes, and its full
size stays readable), and a manifest, ``figures.json``, names the commit(s) of the tables the
run drew them from (the findings document's ``source.git_commit``), the configuration and every
figure's size and SHA-256. A figure whose drawn bytes did not change since the last publication
is not rewritten, so the repository's history grows only by figures that changed.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

__all__ = [
    "MANIFEST",
    "MAX_TOTAL_BYTES",
    "figures_folder",
    "palette_png",
    "publish_figures",
    "sha256",
]

#: Name of the manifest in each published folder.
MANIFEST = "figures.json"
#: The published figures of one configuration may take at most this many bytes (issue 45).
MAX_TOTAL_BYTES = 10_000_000


def figures_folder(name: str) -> str:
    """The folder under ``docs/_static/`` of configuration ``name`` ("" for the default run)."""
    return "figures" if not name else f"figures-{name}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def palette_png(src: Path) -> tuple[bytes, tuple[int, int]]:
    """``src`` as a 256-colour palette PNG (median cut, no dithering: deterministic for the same
    input and Pillow) at its own pixel size; the bytes and ``(width, height)``."""
    from PIL import Image

    with Image.open(src) as im:
        rgb = im.convert("RGB")
    pal = rgb.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buf = io.BytesIO()
    pal.save(buf, format="PNG", optimize=True)
    return buf.getvalue(), rgb.size


def publish_figures(figures: Path, docs: Path, source: dict, name: str = "") -> dict:
    """Publish every ``*.png`` under ``figures`` into ``docs/_static/<figures_folder(name)>/``
    (same relative paths) and write its manifest; returns the manifest.

    ``source`` is the published findings document's ``source`` record (its ``git_commit`` list
    and ``configuration``). A figure whose drawn bytes have the SHA-256 the manifest recorded
    (and whose published file is intact) is left alone; published figures the run no longer
    draws are removed. Raises ``SystemExit`` (before writing anything) when ``figures`` holds no
    PNG or the published figures would exceed :data:`MAX_TOTAL_BYTES`.
    """
    pngs = sorted(p for p in figures.rglob("*.png") if p.is_file())
    if not pngs:
        raise SystemExit(f"{figures}: no PNG figure to publish (run the workflow first)")
    dest = docs / "_static" / figures_folder(name)
    old = _read_manifest(dest)
    entries, data = {}, {}
    for png in pngs:
        rel = png.relative_to(figures).as_posix()
        drawn = sha256(png.read_bytes())
        prev, target = old.get("figures", {}).get(rel), dest / rel
        if (
            prev
            and prev["source_sha256"] == drawn
            and target.is_file()
            and sha256(target.read_bytes()) == prev["sha256"]
        ):
            entries[rel] = prev
            continue
        blob, (w, h) = palette_png(png)
        data[rel] = blob
        entries[rel] = {
            "bytes": len(blob),
            "height": h,
            "sha256": sha256(blob),
            "source_sha256": drawn,
            "width": w,
        }
    total = sum(e["bytes"] for e in entries.values())
    if total > MAX_TOTAL_BYTES:
        raise SystemExit(
            f"the published figures would take {total} bytes, more than {MAX_TOTAL_BYTES}"
        )
    for rel, blob in data.items():
        target = dest / rel
        if not (target.is_file() and target.read_bytes() == blob):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob)
            print(f"{figures / rel} -> {target}")
    for rel in sorted(set(old.get("figures", {})) - set(entries)):
        (dest / rel).unlink(missing_ok=True)
        print(f"removed {dest / rel} (no longer drawn)")
    manifest = {
        "configuration": source["configuration"],
        "git_commit": list(source["git_commit"]),
        "total_bytes": total,
        "figures": entries,
    }
    dest.mkdir(parents=True, exist_ok=True)
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    if not (dest / MANIFEST).is_file() or (dest / MANIFEST).read_text(encoding="utf-8") != text:
        (dest / MANIFEST).write_text(text, encoding="utf-8")
    print(f"{len(entries)} figures published in {dest} ({total / 1e6:.2f} MB)")
    return manifest


def _read_manifest(dest: Path) -> dict:
    path = dest / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
