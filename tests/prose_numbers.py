"""The rule for numbers in the prose, as data and code (docs/pipeline.md#numbers-in-the-prose).

Every line of README.md and docs/*.md (the generated pages excepted: they are checked by
equality) is scanned for numbers that look like results. A result of a run, or a theory value
of the library, is stated only as a marker followed by its value (``<!-- finding:KEY -->VALUE``
for the default run, ``<!-- finding:NAME:KEY -->VALUE`` for the run of ``config/NAME.yaml``; a
word always precedes the marker on its line: :func:`marker_problems`) or as a generated table between ``<!-- finding-table:KEY -->`` and ``<!-- /finding-table -->``
(the rendering of a table finding, checked by equality). Exempt *by context*, never by listing
lines (:func:`clean` blanks them, keeping every line break, so hits keep their line numbers):

* code (fenced, inline), directives, HTML comments, link targets and addresses;
* the papers' values: a paragraph, list item or table row that starts with **[paper]**, or the
  sentence that carries the label;
* dated measurements: a section whose heading says "measured" and names the date in the heading
  or its first paragraph (with its subsections); a sentence with a parenthetical that says
  "measured" and names the date; a sentence that links, with a link text saying "measured", to
  such a section (:func:`measured_link_targets`); and estimates, in a section whose heading says
  "estimate";
* configuration values: the numbers assigned to a configuration symbol (``rho = 0.2 / 0.5``,
  ``c_s in {0.3, 0.45}``, ``0 <= rho <= 0.9``; :data:`CONFIG_SYMBOLS`), "step 0.45", a table
  column headed "Our value", and the clause that ends with a **[choice]** label;
* derivation constants written with their closed form, ``$\\ln 2 = 0.693$``: the closed form is
  evaluated (:func:`evaluate`) and must give the value to its printed digits; a constant no
  closed form gives (a root) ends its clause with **[derived]**;
* test constants: a number that a test cited in the same paragraph, list item or table (with
  the paragraphs around it) holds literally;
* versions, identifiers and section numbers (``Python 3.11``, ``arXiv 2510.05554``,
  ``Theorem 2.3``); bare powers of ten (``to 10^-10``, a tolerance or an order) except after
  "within".

What is left is flagged by :data:`SUSPECT`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

# the blocks publish renders, and the markers (one definition, shared with publish)
from attnscale.experiments.findings.markers import MARKER
from attnscale.experiments.findings.record import TABLE_BLOCK

# --------------------------------------------------------------------------- the rule, as data

#: What may stand before a marker on its line and still leave it at the start of a block: indent,
#: a list bullet, a blockquote sign. A marker there makes Markdown read the line as raw HTML
#: (the paragraph breaks, and the maths of that line stays raw TeX on the site).
LINE_START = re.compile(r"^[ \t>]*(?:(?:[*+-]|\d+[.)])[ \t]+)?$")
#: Pages generated from data (checked by equality, not scanned).
GENERATED = {"findings.md", "gallery.md", "api.md"}
#: A section of measurements: its heading says "measured", and the heading or the section's
#: first paragraph names the date; subsections inherit.
MEASURED_HEADING = re.compile(r"\bmeasured\b", re.I)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
#: A section of estimates (derived from stated assumptions): its heading says "estimate".
ESTIMATE_HEADING = re.compile(r"\bestimate\b", re.I)
#: A sentence stamped as a dated measurement: a parenthetical that says "measured" and names the
#: date, "(measured 2026-11-30, 2-core machine)".
MEASURED_STAMP = re.compile(r"\([^()]*\bmeasured\b[^()]*\b20\d\d-\d\d-\d\d\b[^()]*\)", re.I)
#: A unit that links to a dated measured section: "([measured](performance.md#runtimes-...))".
MEASURED_LINK = re.compile(r"\[[^\]]*\bmeasured\b[^\]]*\]\(([^)\s]*)\)", re.I)
PAPER_LABEL = re.compile(r"\[paper\]")
#: A table column of configuration choices: its header says "our value" or "choice".
CHOICE_COLUMN = re.compile(r"\bour value\b|\bchoices?\b", re.I)
#: A clause that ends with one of these labels is a configuration choice or a derivation constant.
CHOICE_LABEL = re.compile(r"\*{0,2}\[(?:choice|derived)\]\*{0,2}")
#: Configuration symbols (sizes, grids, scales, thresholds): numbers assigned to them are choices.
CONFIG_SYMBOLS = (
    r"\\?(?:rho|alpha|kappa|varepsilon|epsilon|delta|sigma|tau)(?:_(?:c|0|i|n))?"
    r"|c_s|[ndcsqLfhTtPBkmr]"
)
_NUM = r"-?\d+(?:\.\d+)?(?:\s*(?:\^|e)\s*-?\d+)?|n\s*\^\s*-?\d+(?:\.\d+)?"
_SEP = r"\s*(?:,|/|\.\.|…|\\dots|\\ldots|–|-|\band\b|\bor\b|\\to)\s*"
CONFIG_ASSIGN = re.compile(
    rf"(?<![\w\\^*'])(?:{CONFIG_SYMBOLS})\s*(?:=|\\in|∈|\\le|\\leq|<=|≤|\\ge|\\geq|>=|≥|<|>)\s*"
    rf"[\[(]?\s*((?:{_NUM})(?:{_SEP}(?:{_NUM}))*)"
)
#: Configuration words followed by their value: "step 0.45".
CONFIG_WORD = re.compile(rf"\b(?:step|steps of|seed)\s+({_NUM})")
#: Bounds written before the symbol: "0 <= rho", "2 <= n".
CONFIG_BOUND = re.compile(rf"({_NUM})\s*(?:\\le|\\leq|<=|≤|<)\s*(?:{CONFIG_SYMBOLS})(?![\w^*])")
#: Section numbers, versions and identifiers.
REFERENCE = re.compile(
    r"(?i)\b(?:theorems?|lemmas?|propositions?|corollar(?:y|ies)|sections?|appendix|eqs?\.?|"
    r"equations?|figures?|tables?|remarks?|assumptions?|definitions?|§)\s*[A-Z]?\d+(?:\.\d+)+"
    r"(?:\s*(?:/|,|and|to)\s*[A-Z]?\d+(?:\.\d+)+)*"
)
VERSION = re.compile(
    r"arXiv:?\s*\d{4}\.\d{4,5}(?:v\d+)?|(?<![\w.])\d+\.\d+\.\d+(?![\w.])"
    r"|\b(?:Python|Snakemake|numpy|NumPy|scipy|SciPy|OpenBLAS|JAX|jax|jaxlib|CUDA|Sphinx|pandas|"
    r"mutmut|matplotlib|Chromium|version|v)\s*\d+(?:\.\d+)+"
)
#: A bare power of ten (an order or a tolerance): 1e-4, 10^-4, 10^{-4}.
BARE_POWER = r"(?:1e-?\d+|10\s*\^\s*-?\d+)"
#: A number that is the coefficient of a formula ("about 11 + P passes", "~900 n^2 d"): an order.
_COEFF = (
    r"\d+(?:\.\d+)?(?:\s*(?:[-+*/×]|\\cdot)\s*[A-Za-z(\\]|\s*[a-df-zA-Z](?![A-Za-z])"
    r"|\s*\\(?!cdot)[a-zA-Z]+|\()"
)
#: Numbers that look like results (after the exempt contexts are removed; LaTeX normalised).
SUSPECT = {
    "two or more decimals": re.compile(r"(?<![\w.])\d+\.\d{2,}"),
    "three or more significant digits": re.compile(r"(?<![\w.])[1-9]\d+\.\d+"),
    "a percentage": re.compile(r"(?<![\w.])\d+(\.\d+)?\s*%(?!-)"),
    "plus-minus": re.compile(r"(±|\+-|\+/-)\s*\d"),
    "approximately": re.compile(
        rf"(~|≈|\babout|\bapprox\w*|\baround|\broughly)\s*(?!{BARE_POWER}(?![\d.])|[01](?![\d.])|{_COEFF})\d"
    ),
    "within a tolerance": re.compile(r"\bwithin\s+(?![1-4]\s*(SE|standard errors?)\b)\d"),
    "a factor": re.compile(rf"\bfactors?\s+(of\s+)?(?!{_COEFF}|\d+\s*/)\d"),
    "a count": re.compile(r"(?<![\w.])\d+\s+of\s+\d+\b(?!\s*%)"),
    "a multiple": re.compile(r"(?<![\w.,])\d+(\.\d+)?\s*(x|times)\b(?!\s*[\d+\-*/=()^])"),
    "a decimal mantissa in powers of ten": re.compile(
        r"(?<![\w.])\d+\.\d+\s*(e-?\d|×\s*10|\*\s*10\s*\^|\\cdot\s*10)"
    ),
    "a list of values": re.compile(r"(?<![\w.])\d+\.\d+\s*/\s*\d+\.\d"),
    "a range of decimal values": re.compile(r"(?<![\w.])\d+\.\d{2,}\s*(\.\.|–|\\dots)\s*-?\d"),
    "a change to a value": re.compile(
        r"\b(falls?|fell|drops?|dropped|rises?|rose|grows?|grew|climbs?|decreases?|increases?|"
        r"reaches|reached|peaks?|settles?|moves?|shifts?)\s+(to|at|by|near|around|from)\s+-?\d*\.?\d"
    ),
    "a critical value": re.compile(
        r"(\\beta|\\gamma|\\Lambda|beta|gamma|Lambda)\s*\^?\s*\*\s*(_\s*\w+\s*)?(=|≈|~)\s*-?\d"
    ),
}
#: LaTeX spellings of the same things (replaced in place, padded to the same length).
LATEX = [
    (r"\pm", "±"),
    (r"\%", "%"),
    (r"\approx", "≈"),
    (r"\sim", "~"),
    (r"\times", "×"),
    (r"\{", " "),
    (r"\}", " "),
    ("$", ""),
    ("{", ""),
    ("}", ""),
    (r"\,", " "),
    (r"\ ", " "),
    (r"\;", " "),
    ("~", "~"),
]


# --------------------------------------------------------------------------- derivation constants


class _Parser:
    """Recursive descent over a small LaTeX subset: numbers, + - * / ^, parentheses and braces,
    ``\\ln \\log \\exp \\sqrt \\frac \\pi \\cdot \\times``, implicit products."""

    TOKEN = re.compile(r"\s*(\d+\.?\d*(?:e-?\d+)?|\\[a-zA-Z]+|[-+*/^(){}\[\]]|\\[,;! ]|×|·|π)")
    FUNCS = {"ln": math.log, "log": math.log, "exp": math.exp}

    def __init__(self, text: str):
        text = text.replace(r"\left", "").replace(r"\right", "")
        self.toks, pos = [], 0
        while pos < len(text):
            m = self.TOKEN.match(text, pos)
            if not m:
                if text[pos:].strip() == "":
                    break
                raise ValueError(text[pos:])
            tok = m.group(1)
            if tok not in (r"\,", r"\;", r"\!", "\\ "):
                self.toks.append(tok)
            pos = m.end()
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want=None):
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise ValueError(f"expected {want}, got {tok}")
        self.i += 1
        return tok

    def parse(self) -> float:
        v = self.expr()
        if self.peek() is not None:
            raise ValueError(self.peek())
        return v

    def expr(self):
        v = self.term()
        while self.peek() in ("+", "-"):
            v = v + self.term() if self.take() == "+" else v - self.term()
        return v

    def starts_atom(self, tok):
        return tok is not None and (
            tok[0].isdigit()
            or tok in ("(", "{", "π")
            or tok in (r"\pi", r"\sqrt", r"\frac", r"\tfrac", r"\dfrac")
            or tok[1:] in self.FUNCS
        )

    def term(self):
        v = self.unary()
        while True:
            tok = self.peek()
            if tok in ("*", r"\cdot", r"\times", "×", "·"):
                self.take()
                v *= self.unary()
            elif tok == "/":
                self.take()
                v /= self.unary()
            elif self.starts_atom(tok):
                v *= self.power()
            else:
                return v

    def unary(self):
        if self.peek() == "-":
            self.take()
            return -self.unary()
        if self.peek() == "+":
            self.take()
        return self.power()

    def power(self):
        v = self.atom()
        if self.peek() == "^":
            self.take()
            v = v ** self.unary_atom()
        return v

    def unary_atom(self):
        if self.peek() == "-":
            self.take()
            return -self.atom()
        return self.atom()

    def atom(self):
        tok = self.take()
        if tok[0].isdigit():
            return float(tok)
        if tok in ("(", "{", "["):
            v = self.expr()
            self.take({"(": ")", "{": "}", "[": "]"}[tok])
            return v
        if tok in (r"\pi", "π"):
            return math.pi
        if tok == r"\sqrt":
            return math.sqrt(self.atom())
        if tok in (r"\frac", r"\tfrac", r"\dfrac"):
            return self.atom() / self.atom()
        if tok[1:] in self.FUNCS:
            return self.FUNCS[tok[1:]](self.power())
        raise ValueError(tok)


def evaluate(latex: str) -> float:
    """The value of a closed form in numbers (``0.1\\ln 8192``, ``\\sqrt{2}/\\pi``); ValueError if it
    is not one (a symbol, an unknown command)."""
    return _Parser(latex).parse()


_RELATION = re.compile(r"(=|\\approx|≈|\\simeq)")
_VALUE = re.compile(
    r"^\s*(-?\d+\.\d+|-?\d+)(?:\s*(?:\\cdot|\\times)\s*10\^\{?(-?\d+)\}?)?\s*([,.;:]?\s*)$"
)


def _closed_form_suffix(text: str):
    """The longest tail of ``text`` that is a closed form in numbers (not a bare number), and
    its value; ``(None, None)`` if there is none."""
    starts = [0] + [m.end() for m in re.finditer(r"\s+|(?=\\)|[,;:(]", text)]
    for k in sorted(set(starts)):
        tail = text[k:]
        if not tail.strip() or re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", tail):
            continue
        try:
            return tail, evaluate(tail)
        except (ValueError, ZeroDivisionError, OverflowError, IndexError, TypeError):
            continue
    return None, None


def derivation_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the math in ``text`` that are a closed form in numbers and its value,
    ``$EXPR = VALUE$`` (or ``\\approx``), where ``EXPR`` evaluates to ``VALUE`` to its printed
    digits (one unit of the last digit for ``\\approx``)."""
    spans = []
    for m in re.finditer(r"\$\$(.+?)\$\$|\$((?:[^$\n]|\n(?!\s*\n))+?)\$", text, flags=re.S):
        body_start = m.start(1) if m.group(1) is not None else m.start(2)
        body = m.group(1) if m.group(1) is not None else m.group(2)
        parts = _RELATION.split(body)
        offsets, pos = [], 0
        for p in parts:
            offsets.append(pos)
            pos += len(p)
        for k in range(2, len(parts), 2):
            val = _VALUE.match(parts[k])
            if not val:
                continue
            lhs, got = _closed_form_suffix(parts[k - 2])
            if lhs is None:
                continue
            printed, power = val.group(1), int(val.group(2) or 0)
            decimals = len(printed.split(".")[1]) if "." in printed else 0
            unit = 10.0 ** (power - decimals)
            slack = unit if parts[k - 1] != "=" else 0.5 * unit
            if abs(got - float(printed) * 10.0**power) <= slack * (1 + 1e-9) + 1e-12 * unit:
                start = body_start + offsets[k - 2] + (len(parts[k - 2]) - len(lhs))
                spans.append((start, body_start + offsets[k] + len(parts[k])))
    return spans


# --------------------------------------------------------------------------- scanning


def _blank(chars: list[str], start: int, end: int) -> None:
    for i in range(start, end):
        if chars[i] != "\n":
            chars[i] = " "


def _sections(text: str) -> list[tuple[int, int, int, str]]:
    """(start, end, level, heading) of every heading's section (fenced code has no headings)."""
    code = [(m.start(), m.end()) for m in re.finditer(r"^```.*?^```", text, flags=re.S | re.M)]
    heads = [
        m
        for m in re.finditer(r"^(#{1,6}) (.*)$", text, flags=re.M)
        if not any(a <= m.start() < b for a, b in code)
    ]
    out = []
    for j, m in enumerate(heads):
        level = len(m.group(1))
        end = len(text)
        for n in heads[j + 1 :]:
            if len(n.group(1)) <= level:
                end = n.start()
                break
        out.append((m.start(), end, level, m.group(2)))
    return out


def slug(heading: str) -> str:
    """MyST's anchor of a heading (lower case, punctuation dropped, spaces to hyphens)."""
    h = re.sub(r"[`*$\\]", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def measured_sections(text: str) -> list[tuple[int, int, str]]:
    """(start, end, anchor) of the dated measurement sections of a page."""
    out = []
    for start, end, _level, heading in _sections(text):
        if not MEASURED_HEADING.search(heading):
            continue
        body = text[start:end].split("\n", 1)[1] if "\n" in text[start:end] else ""
        first = body.strip().split("\n\n")[0]
        if DATE.search(heading) or DATE.search(first):
            out.append((start, end, slug(heading)))
    return out


def estimate_sections(text: str) -> list[tuple[int, int, str]]:
    """(start, end, anchor) of the sections whose heading says they are an estimate (derived
    from stated assumptions, not measured and not a result)."""
    return [(a, b, slug(h)) for a, b, _lvl, h in _sections(text) if ESTIMATE_HEADING.search(h)]


def measured_link_targets(path: Path) -> dict[str, bool]:
    """For each ``[... measured ...](target)`` link of a page: does the target name a dated
    measured section (of that page or another page of the docs)?"""
    text = path.read_text(encoding="utf-8")
    out = {}
    for m in MEASURED_LINK.finditer(text):
        target = m.group(1)
        page, _, anchor = target.partition("#")
        where = (path.parent / page) if page else path
        ok = False
        if where.exists() and anchor:
            ok = anchor in {a for _, _, a in measured_sections(where.read_text(encoding="utf-8"))}
        out[target] = ok
    return out


def _units(text: str) -> list[tuple[int, int]]:
    """Spans of the paragraphs, list items, table rows and headings of ``text``."""
    spans, start, pos = [], None, 0
    for line in text.splitlines(keepends=True):
        s = line.strip()
        new = (
            not s
            or re.match(r"^\s*([*+-]|\d+\.)\s", line)
            or s.startswith("|")
            or s.startswith("#")
        )
        if new and start is not None:
            spans.append((start, pos))
            start = None
        if s and start is None:
            start = pos
        if s.startswith("|") or s.startswith("#"):
            spans.append((start, pos + len(line)))
            start = None
        pos += len(line)
    if start is not None:
        spans.append((start, pos))
    return spans


def _citation_scopes(text: str, units: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Where a cited test vouches for numbers: each paragraph, list item or heading on its own;
    a table together with the paragraphs right before and after it (its caption)."""
    rows = [text[a:b].lstrip().startswith("|") for a, b in units]
    scopes, k = [], 0
    while k < len(units):
        if not rows[k]:
            scopes.append(units[k])
            k += 1
            continue
        j = k
        while j + 1 < len(units) and rows[j + 1]:
            j += 1
        start = units[k - 1][0] if k > 0 and not rows[k - 1] else units[k][0]
        end = units[j + 1][1] if j + 1 < len(units) else units[j][1]
        scopes.append((start, end))
        k = j + 1
    return scopes


def _choice_columns(text: str) -> list[tuple[int, int]]:
    """Spans of the cells under a header cell that names configuration choices."""
    spans = []
    for m in re.finditer(r"(?:^\|.*\n?)+", text, flags=re.M):
        lines, pos, cols = m.group().splitlines(keepends=True), m.start(), None
        for k, line in enumerate(lines):
            cells = [c for c in re.finditer(r"(?<!\\)\|([^|]*)", line.rstrip("\n"))]
            if k == 0:
                cols = {j for j, c in enumerate(cells) if CHOICE_COLUMN.search(c.group(1))}
            elif cols:
                for j in cols:
                    if j < len(cells):
                        spans.append((pos + cells[j].start(1), pos + cells[j].end(1)))
            pos += len(line)
    return spans


def _choice_clauses(text: str) -> list[tuple[int, int]]:
    """The clause that ends with each [choice] label (back to , ; : ( or a sentence end)."""
    out = []
    for m in CHOICE_LABEL.finditer(text):
        j = m.start()
        while (
            j > 0
            and text[j - 1] not in ",;:(\n"
            and not (text[j - 1] == " " and j > 1 and text[j - 2] == ".")
        ):
            j -= 1
        out.append((j, m.end()))
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*$(\[`])|\n\s*\n")
#: A test cited in the prose: ``tests/test_x.py`` or ``tests/test_x.py::test_y``.
TEST_CITATION = re.compile(r"tests/(test_\w+\.py)")
_LITERAL = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?")


def _sentence(unit: str, pos: int) -> tuple[int, int]:
    """Span of the sentence of ``unit`` that holds position ``pos``."""
    start, end = 0, len(unit)
    for m in _SENTENCE_END.finditer(unit):
        if m.end() <= pos:
            start = m.end()
        elif m.start() >= pos:
            end = m.start()
            break
    return start, end


def test_literals(repo: Path, names: set[str]) -> set[str]:
    """The numbers written in the named test files (their assertions and constants)."""
    out = set()
    for name in names:
        f = repo / "tests" / name
        if f.exists():
            out.update(_LITERAL.findall(f.read_text(encoding="utf-8")))
    return out


def clean(text: str, rendered: dict[str, str], path: Path | None = None) -> str:
    """``text`` with every exempt context blanked (same length, same line breaks), LaTeX
    normalised."""
    chars = list(text)

    def blank_all(pattern, flags=0):
        for m in re.finditer(pattern, "".join(chars), flags):
            _blank(chars, m.start(), m.end())

    for start, end, _ in measured_sections(text) + estimate_sections(text):
        _blank(chars, start, end)
    blank_all(r"^```.*?^```", re.S | re.M)
    blank_all(r"^:::.*?^:::", re.S | re.M)
    for m in TABLE_BLOCK.finditer(text):
        _blank(chars, m.start(), m.end())
    for m in MARKER.finditer(text):
        val = rendered.get(m.group(1), "")
        end = m.end() + (len(val) if val and text.startswith(val, m.end()) else 0)
        _blank(chars, m.start(), end)
    blank_all(r"<!--.*?-->", re.S)
    units = _units(text)
    # labels and stamps, read on the raw text (inline code and links still there)
    links = measured_link_targets(path) if path is not None else {}
    for start, end in units:
        unit = text[start:end]
        for m in PAPER_LABEL.finditer(unit):
            if m.start() < 60:
                _blank(chars, start, end)
                break
            a, b = _sentence(unit, m.start())
            _blank(chars, start + a, start + b)
        no_targets = re.sub(r"\]\([^)\s]*\)", lambda m: "]" + " " * (len(m.group()) - 1), unit)
        stamps = [m.start() for m in MEASURED_STAMP.finditer(no_targets)]
        stamps += [m.start() for m in MEASURED_LINK.finditer(unit) if links.get(m.group(1))]
        for pos in stamps:
            a, b = (0, len(unit)) if pos < 60 else _sentence(unit, pos)
            _blank(chars, start + a, start + b)
    blank_all(r"`[^`\n]*`")
    blank_all(r"\]\([^)\s]*\)")
    blank_all(r"https?://\S+")
    for start, end in derivation_spans("".join(chars)):
        _blank(chars, start, end)
    for start, end in _choice_columns(text) + _choice_clauses("".join(chars)):
        _blank(chars, start, end)
    out = "".join(chars)
    for a, b in LATEX:
        out = out.replace(a, b + " " * (len(a) - len(b)))
    chars = list(out)
    for pattern in (REFERENCE, VERSION):
        for m in pattern.finditer(out):
            _blank(chars, m.start(), m.end())
    out = "".join(chars)
    for pattern in (CONFIG_ASSIGN, CONFIG_BOUND, CONFIG_WORD):
        for m in pattern.finditer(out):
            _blank(chars, m.start(1), m.end(1))
    # test constants: numbers that a test cited in the same unit holds literally
    if path is not None:
        repo = path.parent if path.name == "README.md" else path.parent.parent
        out = "".join(chars)
        for start, end in _citation_scopes(text, units):
            cited = set(TEST_CITATION.findall(text[start:end]))
            if not cited:
                continue
            held = test_literals(repo, cited)
            for m in _LITERAL.finditer(out, start, end):
                if m.group().lstrip("-") in held or m.group() in held:
                    _blank(chars, m.start(), m.end())
    return "".join(chars)


def marker_problems(text: str, rendered: dict[str, str], where: str = "") -> tuple[int, list[str]]:
    """The number of finding markers in ``text`` (outside inline code, where a marker is an
    example) and what is wrong with them: a key that ``rendered`` (marker key -> rendered value,
    :func:`attnscale.experiments.findings.markers.quotable`) lacks, a value other than the rendered
    one right after the marker (or more digits after it), a marker at the start of a line."""
    scan = re.sub(r"`[^`\n]*`", lambda c: " " * len(c.group(0)), text)
    seen, bad = 0, []
    for m in MARKER.finditer(scan):
        seen += 1
        key = m.group(1)
        line_start = text.rfind("\n", 0, m.start()) + 1
        at = f"{where}:{text.count(chr(10), 0, m.start()) + 1}"
        if LINE_START.match(text[line_start : m.start()]):
            bad.append(f"{at}: {key}: the marker starts a line (put a word before it)")
        if key not in rendered:
            name = m.group(2)
            why = (
                f"no findings of configuration {name!r}"
                if name and not any(k.startswith(name + ":") for k in rendered)
                else "unknown key"
            )
            bad.append(f"{at}: {why} {key!r}")
            continue
        val = rendered[key]
        after = text[m.end() : m.end() + len(val) + 2]
        if not after.startswith(val) or re.match(r"\d|\.\d", text[m.end() + len(val) :]):
            bad.append(f"{at}: {key} must be followed by {val!r}, found {after!r}")
    return seen, bad


def suspects(text: str, rendered: dict[str, str], path: Path | None = None) -> list[tuple]:
    """(line, kind, context) of every result-like number left in ``text``."""
    cleaned = clean(text, rendered, path)
    hits = []
    for kind, pattern in SUSPECT.items():
        for m in pattern.finditer(cleaned):
            line = cleaned.count("\n", 0, m.start()) + 1
            ctx = cleaned[max(0, m.start() - 50) : m.end() + 30]
            hits.append((line, kind, " ".join(ctx.split())))
    return sorted(hits)
