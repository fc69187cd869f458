"""``python -m attnscale.experiments.findings publish [--results DIR] [--docs DIR] [--figures DIR]``

Copies a run's ``findings.json`` and ``findings.md`` (rule ``findings``) into ``docs/`` after
checking that the page is the rendering of the JSON document, so the published page
(``docs/findings.md``) is never edited by hand, and renders the generated tables of the pages
(``<!-- finding-table:KEY -->`` blocks in ``docs/*.md`` and the README) from the published
findings, and brings the value after every marker of that configuration
(``<!-- finding:[NAME:]KEY -->``) up to the new findings where it was the old rendering
(:func:`attnscale.experiments.findings.markers.refresh_markers`; docs/pipeline.md#numbers-in-the-prose).

The file it writes is the one of the configuration that ran (named in the document's header):
the default run's findings go to ``docs/findings.json`` and ``docs/findings.md``, those of the run
of ``config/NAME.yaml`` to ``docs/findings-NAME.json`` only (quoted as
``<!-- finding:NAME:KEY -->``; the generated tables and the Findings page are the default run's).

The run's figures (``--figures``, default ``figures``; ``--figures none`` leaves them) are
published beside the findings, into ``docs/_static/figures/`` (``figures-NAME/`` for
``config/NAME.yaml``), with a manifest naming the same commit(s) as the findings
(:mod:`attnscale.experiments.findings.figures`; docs/pipeline.md#published-figures).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from attnscale.experiments.findings.figures import publish_figures
from attnscale.experiments.findings.markers import (
    configuration_name,
    findings_file,
    refresh_markers,
)
from attnscale.experiments.findings.record import render_markdown, render_table_blocks


def publish(results: Path, docs: Path, figures: Path | None = None) -> Path:
    """Check ``results/findings.md`` against its JSON, copy both into ``docs``, render the
    generated tables of the pages (``docs/*.md`` and ``docs/../README.md``) from it and bring the
    values after its markers up to date; the findings of another configuration than the default
    go to ``docs/findings-NAME.json`` alone (and only its markers are refreshed). With
    ``figures``, the run's PNG figures are published too (:func:`publish_figures`). Returns the
    JSON file written."""
    src_json, src_md = results / "findings.json", results / "findings.md"
    doc = json.loads(src_json.read_text(encoding="utf-8"))
    if render_markdown(doc) != src_md.read_text(encoding="utf-8"):
        raise SystemExit(f"{src_md} is not the rendering of {src_json}: rerun the findings rule")
    name = configuration_name(doc["source"]["configuration"])
    try:
        target = docs / findings_file(name)
    except ValueError as why:
        raise SystemExit(f"{src_json}: {why}") from None
    old = json.loads(target.read_text(encoding="utf-8")) if target.exists() else None
    if figures is not None:  # before the findings: too many bytes stops the publication here
        publish_figures(figures, docs, doc["source"], name)
    pages = [*sorted(docs.glob("*.md")), docs.parent / "README.md"]
    if name:
        shutil.copyfile(src_json, target)
        print(f"{src_json} -> {target} (configuration {doc['source']['configuration']})")
    else:
        for src in (src_json, src_md):
            shutil.copyfile(src, docs / src.name)
            print(f"{src} -> {docs / src.name}")
    for page in pages:
        if page.name == src_md.name or not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        new = render_table_blocks(text, doc, name)
        new, stale = refresh_markers(new, name, old, doc)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"generated tables and marker values brought up to date in {page}")
        for key in stale:
            print(
                f"{page}: the value after <!-- finding:{key} --> is neither the old nor the new "
                "rendering: write it by hand"
            )
    return target


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m attnscale.experiments.findings")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "publish",
        help="copy results/findings.{json,md} into docs/ (docs/findings-NAME.json for the run of "
        "config/NAME.yaml) and render the pages' generated tables",
    )
    p.add_argument("--results", type=Path, default=Path("results"))
    p.add_argument("--docs", type=Path, default=Path("docs"))
    p.add_argument(
        "--figures",
        default="figures",
        help="the run's figures, published into docs/_static/figures[-NAME]/ ('none': not)",
    )
    args = ap.parse_args(argv)
    publish(args.results, args.docs, None if args.figures == "none" else Path(args.figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
