"""The run's figures published beside its findings (docs/pipeline.md#published-figures); the
adapter's image output and the screenshot rule's entry (docs/explorer.md#the-readmes-screenshot).

* ``publish_figures`` writes palette PNGs at the drawn size with a manifest naming the findings'
  commit, rewrites only figures whose drawn bytes changed, removes figures no longer drawn and
  refuses (before writing) a set larger than its limit; the ``publish`` command publishes them
  with the findings.
* The published figures in ``docs/_static/figures*/`` are the files their manifest lists, carry
  the commit of the published findings of the same configuration, and stay under 10 MB.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from attnscale.experiments.findings import figures as pub

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SOURCE = {"configuration": "config.yaml", "git_commit": ["0123456789abcdef"]}


def _png(path: Path, colour: tuple[int, int, int], size=(40, 24)) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    im = Image.new("RGBA", size, (255, 255, 255, 255))
    for x in range(size[0] // 2):  # a plot-like image: a white page with a coloured patch
        for y in range(size[1] // 3, size[1]):
            im.putpixel((x, y), (*colour, 255))
    im.save(path)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_publish_writes_palette_pngs_and_the_findings_commit(tmp_path, capsys):
    from PIL import Image

    figs, docs = tmp_path / "figures", tmp_path / "docs"
    _png(figs / "paper_a" / "a.png", (200, 0, 0))
    _png(figs / "paper_b" / "b.png", (0, 0, 200), size=(30, 50))
    manifest = pub.publish_figures(figs, docs, SOURCE)
    out = docs / "_static" / "figures"
    assert manifest["git_commit"] == SOURCE["git_commit"]
    assert json.loads((out / pub.MANIFEST).read_text()) == manifest
    assert sorted(manifest["figures"]) == ["paper_a/a.png", "paper_b/b.png"]
    for rel, entry in manifest["figures"].items():
        with Image.open(out / rel) as im:
            assert im.mode == "P" and im.size == (entry["width"], entry["height"])
        with Image.open(figs / rel) as a, Image.open(out / rel) as b:  # same pixels: few colours
            assert a.convert("RGB").tobytes() == b.convert("RGB").tobytes()
        assert entry["sha256"] == _sha(out / rel) and entry["source_sha256"] == _sha(figs / rel)
    assert manifest["total_bytes"] == sum((out / r).stat().st_size for r in manifest["figures"])
    assert pub.figures_folder("long-context") == "figures-long-context"


def test_republish_rewrites_only_changed_figures_and_drops_gone_ones(tmp_path, capsys):
    figs, docs = tmp_path / "figures", tmp_path / "docs"
    a, b = _png(figs / "a.png", (200, 0, 0)), _png(figs / "b.png", (0, 0, 200))
    pub.publish_figures(figs, docs, SOURCE)
    out = docs / "_static" / "figures"
    stamp = {p.name: p.stat().st_mtime_ns for p in out.glob("*.png")}
    capsys.readouterr()
    again = pub.publish_figures(figs, docs, {**SOURCE, "git_commit": ["fedcba9876543210"]})
    assert "->" not in capsys.readouterr().out  # nothing rewritten
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.png")} == stamp
    assert again["git_commit"] == ["fedcba9876543210"]  # the new run drew the same bytes
    _png(a, (0, 150, 0))  # a changed figure, and one the run no longer draws
    b.unlink()
    third = pub.publish_figures(figs, docs, SOURCE)
    printed = capsys.readouterr().out
    assert "a.png ->" in printed and "removed" in printed
    assert sorted(third["figures"]) == ["a.png"] and not (out / "b.png").exists()


def test_publish_refuses_too_many_bytes_before_writing(tmp_path, monkeypatch):
    figs, docs = tmp_path / "figures", tmp_path / "docs"
    _png(figs / "a.png", (200, 0, 0))
    monkeypatch.setattr(pub, "MAX_TOTAL_BYTES", 10)
    with pytest.raises(SystemExit, match="more than 10"):
        pub.publish_figures(figs, docs, SOURCE)
    assert not (docs / "_static").exists()
    with pytest.raises(SystemExit, match="no PNG"):
        pub.publish_figures(tmp_path / "empty", docs, SOURCE)


def test_the_publish_command_takes_the_figures(monkeypatch, tmp_path):
    from attnscale.experiments.findings import __main__ as cli

    seen = []
    monkeypatch.setattr(cli, "publish", lambda r, d, f=None: seen.append((r, d, f)))
    cli.main(["publish", "--results", str(tmp_path)])
    cli.main(["publish", "--figures", "none"])
    assert seen[0][2] == Path("figures") and seen[1][2] is None


def _published() -> list[Path]:
    return sorted(p for p in (DOCS / "_static").glob("figures*") if p.is_dir())


def test_published_figures_carry_the_published_findings_commit():
    """Each published folder's manifest names the commit(s) of the published findings of its
    configuration, lists exactly the PNG files there (their SHA-256) and stays under 10 MB."""
    folders = _published()
    if not folders:
        pytest.skip(
            "no figures published yet: after a default run, "
            "python -m attnscale.experiments.findings publish"
        )
    for folder in folders:
        manifest = json.loads((folder / pub.MANIFEST).read_text(encoding="utf-8"))
        name = folder.name.removeprefix("figures").removeprefix("-")
        findings = DOCS / ("findings.json" if not name else f"findings-{name}.json")
        source = json.loads(findings.read_text(encoding="utf-8"))["source"]
        assert manifest["git_commit"] == source["git_commit"], folder
        assert manifest["configuration"] == source["configuration"], folder
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.png"))
        assert files == sorted(manifest["figures"]), folder
        for rel, entry in manifest["figures"].items():
            assert _sha(folder / rel) == entry["sha256"], rel
        total = sum((folder / r).stat().st_size for r in files)
        assert total == manifest["total_bytes"] < pub.MAX_TOTAL_BYTES


def test_an_entry_may_return_an_image_as_bytes(tmp_path):
    """The adapter writes ``bytes`` returned for a ``.png`` output as they are (rule
    ``explorer_screenshot``), and still refuses a non-figure object for an image output."""
    from attnscale.pipeline.adapter import write_outputs

    out = tmp_path / "shot.png"
    write_outputs({"png": b"\x89PNG-bytes"}, {"png": str(out)})
    assert out.read_bytes() == b"\x89PNG-bytes"
    with pytest.raises(ValueError, match="need a matplotlib Figure"):
        write_outputs({"png": "not bytes"}, {"png": str(tmp_path / "x.png")})


def test_the_screenshot_entry_needs_chromium_before_any_work(monkeypatch):
    from attnscale.experiments.explorer import screenshot

    monkeypatch.setattr(screenshot.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="Chromium is not installed"):
        screenshot.explorer_screenshot(
            page="docs/explorer.md", script="", style="", data={}, conf="", head="1,2,0.5,qwen"
        )
