"""Finding markers in the prose and the published findings files they quote
(docs/pipeline.md#numbers-in-the-prose).

The prose quotes a finding as ``<!-- finding:KEY -->VALUE`` (the default run's findings,
``docs/findings.json``) or ``<!-- finding:NAME:KEY -->VALUE`` (the run of ``config/NAME.yaml``,
``docs/findings-NAME.json``, which ``python -m attnscale.experiments.findings publish`` writes for
that run). :data:`MARKER` is the one definition every check of the markers uses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = [
    "MARKER",
    "NAME",
    "marker_key",
    "configuration_name",
    "findings_file",
    "quotable",
    "refresh_markers",
    "PENDING",
]

#: A finding quoted in the prose (docs/pipeline.md#numbers-in-the-prose): ``<!-- finding:KEY -->``
#: quotes the default run's finding ``KEY`` (``docs/findings.json``), ``<!-- finding:NAME:KEY -->``
#: that of the run of ``config/NAME.yaml`` (``docs/findings-NAME.json``); the rendered value
#: follows the marker directly, and a word always precedes it on its line (a line that starts with
#: an HTML comment is a raw HTML block in Markdown and breaks the paragraph). Group 1 is the whole
#: key as quoted, group 2 the configuration's name (``None`` for the default run), group 3 the key.
MARKER = re.compile(r"<!--\s*finding:((?:([a-z0-9][a-z0-9\-]*):)?([A-Za-z0-9_.\-]+))\s*-->")
#: The value an author writes after the marker of a finding the published document does not
#: have yet (a new key): publish replaces it by the finding's rendering (issue 45).
PENDING = "[to be published]"
#: A configuration's name, as it appears in a marker and in its findings file's name.
NAME = re.compile(r"[a-z0-9][a-z0-9\-]*")


def marker_key(name: str, key: str) -> str:
    """The key a marker quotes: ``KEY`` for the default run (``name == ""``), ``NAME:KEY`` for the
    run of ``config/NAME.yaml``."""
    return f"{name}:{key}" if name else key


def configuration_name(configuration: str) -> str:
    """The name of the configuration a findings document comes from, from its header's
    ``source.configuration`` (``"config.yaml + config/long-context.yaml"``): ``""`` for the default
    run (``config.yaml`` alone), else the stem of the last file merged over it
    (``"long-context"``; the smoke run's ``tests/smoke.yaml`` gives ``"smoke"``)."""
    files = [f.strip() for f in configuration.split("+") if f.strip()]
    extra = [f for f in files if f != "config.yaml"]
    if not extra:
        return ""
    stem = extra[-1].rsplit("/", 1)[-1]
    return stem[: -len(".yaml")] if stem.endswith(".yaml") else stem.rsplit(".", 1)[0]


def findings_file(name: str) -> str:
    """The file in ``docs/`` that holds the published findings of configuration ``name``:
    ``findings.json`` (default run) or ``findings-NAME.json``; a name a marker cannot quote is a
    ``ValueError``."""
    if not name:
        return "findings.json"
    if not NAME.fullmatch(name):
        raise ValueError(
            f"configuration name {name!r}: markers quote only names like 'long-context'"
        )
    return f"findings-{name}.json"


def quotable(docs) -> dict[str, str]:
    """Every value the prose may quote: marker key (:func:`marker_key`) -> rendered value, from the
    published findings files of ``docs`` (``findings.json`` and every ``findings-NAME.json``)."""
    out = {}
    for path in sorted(Path(docs).glob("findings*.json")):
        name = path.stem.removeprefix("findings").removeprefix("-")
        if findings_file(name) != path.name:
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        for key, e in doc["findings"].items():
            out[marker_key(name, key)] = e["rendered"]
    return out


def refresh_markers(text: str, name: str, old: dict | None, new: dict) -> tuple[str, list[str]]:
    """``text`` with the value after every marker of configuration ``name`` (``""``: the default
    run) brought up to the findings document ``new``, and the keys it could not refresh.

    A marker's value is the text that follows it; it is recognised as the rendering in ``new``
    (left alone) or in ``old``, the document ``new`` replaces (replaced by the new rendering).
    A key new to ``new`` (``old`` lacks it) whose value reads :data:`PENDING` gets its rendering.
    Anything else, and a key ``new`` lacks but ``old`` had, is returned as stale (the prose check
    then fails on it: it needs an author); a key neither has is left to the prose check. Markers
    of other configurations are left alone.
    """
    stale: list[str] = []

    def rendered(doc, key):
        e = (doc or {}).get("findings", {}).get(key)
        return None if e is None else e["rendered"]

    out, pos = [], 0
    for m in MARKER.finditer(text):
        if (m.group(2) or "") != name:
            continue
        if text[max(m.start() - 1, 0) : m.start()] == "`":
            continue  # a marker shown as code (an example in the prose), not a quotation
        key = m.group(3)
        now, was = rendered(new, key), rendered(old, key)
        if now is None and was is None:
            continue  # not a finding of this run's (an example in the prose, or a typo the check names)
        rest = text[m.end() :]
        if now is not None and rest.startswith(now):
            continue
        if now is not None and was is not None and rest.startswith(was):
            out += [text[pos : m.end()], now]
            pos = m.end() + len(was)
            continue
        if now is not None and was is None and rest.startswith(PENDING):
            out += [text[pos : m.end()], now]  # a new key, its value written as pending
            pos = m.end() + len(PENDING)
            continue
        stale.append(m.group(1))
    out.append(text[pos:])
    return "".join(out), stale
