"""RIS (EndNote, Zotero, publishers' "export citation"): ``TY`` ... ``ER`` blocks of tagged lines.

A line is ``XX  - value`` (two-character tag; one or two spaces before the dash are tolerated).
An untagged line continues the previous tag: EndNote writes one keyword per continuation line
under ``KW``, and wraps long abstracts. Text before the first ``TY`` is ignored (exports
often number their records); a record missing its ``ER`` ends at the next ``TY`` or at the end
of the file, with a warning.

Mapping: TI > T1 > CT > ST (> BT for books) -> title; AU/A1 -> authors ("Last, First, Suffix", Last kept as the family part;
an "et al." author marks the list truncated); PY/Y1/DA -> published (the most precise one);
JF > JO > T2 > JA > J2 > BT -> venue; PB -> publisher; DO -> doi; UR (first http link) -> url;
AB/N2 -> abstract; KW -> categories; TY -> type; ID -> source id; SP-EP -> pages; VL -> volume;
IS -> issue; ED and A2 (both "secondary author" in the spec: the editors) -> editors (their Last
in ``editor_families``). Into
``extra_fields``: SN -> isbn (10 or 13 digits) or issn, N1 -> note (several joined by "; "),
CY -> address, LA -> language, ET -> edition, T3 -> series.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from retrieval.records.author_cleaning import strip_annotations
from retrieval.records.name_parts import leading_particle
from retrieval.records.paper import normalize_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.files.base import ItemRejected, ParseOutcome, build_item, check_field_sizes, person_name
from retrieval.sources.markup.inline_html import inline_html_to_text

FORMAT = "ris"

_TAG = re.compile(r"^([A-Z][A-Z0-9])  ?-(?: (.*))?$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_DATE = re.compile(r"(\d{4})(?:[/-](\d{1,2})?(?:[/-](\d{1,2}))?)?")
_TYPES = {
    "JOUR": "article", "JFULL": "article", "MGZN": "article", "NEWS": "article",
    "EJOUR": "article", "CONF": "inproceedings", "CPAPER": "inproceedings",
    "BOOK": "book", "EBOOK": "book", "EDBOOK": "book", "CHAP": "incollection",
    "ECHAP": "incollection", "THES": "phdthesis", "RPRT": "techreport", "UNPB": "unpublished",
    "MANSCPT": "unpublished", "GEN": "misc", "ELEC": "misc", "DATA": "misc", "COMP": "software",
}  # fmt: skip
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/([^\s?#]+)", re.IGNORECASE)
_ISBN = re.compile(r"\d{9}[\dXx]|\d{13}")
#: Tags with no ``Paper`` column -> the BibTeX field they are exported as (N1 and SN: below).
_EXTRA_TAGS = {"CY": "address", "LA": "language", "ET": "edition", "T3": "series"}


class _Record:
    """Tag -> list of values (each value a list of lines) for one TY..ER block."""

    def __init__(self, number: int, line: int) -> None:
        self.number = number
        self.line = line
        self.tags: dict[str, list[list[str]]] = {}
        self.last: list[str] | None = None
        self.closed = False

    @property
    def label(self) -> str:
        ids = self.first("ID")
        return f"record {self.number} (line {self.line}{', ID ' + ids if ids else ''})"

    def add(self, tag: str, value: str) -> None:
        self.last = [value]
        self.tags.setdefault(tag, []).append(self.last)

    def values(self, tag: str) -> list[str]:
        """Each value of a tag with its continuation lines joined by spaces."""
        joined = (" ".join(line.strip() for line in lines) for lines in self.tags.get(tag, []))
        return [" ".join(value.split()) for value in joined]

    def first(self, *tags: str) -> str:
        for tag in tags:
            for value in self.values(tag):
                if value:
                    return value
        return ""


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` at any line ending (old Mac exports end lines with a lone "\r"), as
    ``_LINE_BREAK.split`` gives them, one at a time."""
    start = 0
    for match in _LINE_BREAK.finditer(text):
        yield text[start : match.start()]
        start = match.end()
    yield text[start:]


def _records(text: str, outcome: ParseOutcome) -> list[_Record]:
    """The TY..ER blocks of the text, up to the file's budget (``outcome.budget``)."""
    records: list[_Record] = []
    current: _Record | None = None
    for number, raw in enumerate(_lines(text.lstrip("\ufeff")), 1):
        line = raw.lstrip("\ufeff")
        match = _TAG.match(line.lstrip(" \t"))  # some exporters indent every tagged line
        if match is None:
            if current is not None and current.last is not None and line.strip():
                current.last.append(line)
            continue
        tag, value = match.group(1), (match.group(2) or "").strip()
        if tag == "ER" and current is None:
            outcome.warnings.append(SkippedItem(f"line {number}", "an ER line with no record open; ignored"))
            continue
        if tag == "TY" or current is None:
            if current is not None and not current.closed:
                outcome.warnings.append(SkippedItem(current.label, "no ER line before the next TY"))
            current = _Record(len(records) + 1, number)
            if not outcome.budget.take(current.label):
                return records
            records.append(current)
        if tag == "ER":
            current.closed = True
            current.last = None
            current = None
            continue
        current.add(tag, value)
    if current is not None and not current.closed:
        outcome.warnings.append(SkippedItem(current.label, "no ER line at the end of the file"))
    return records


def _author(raw: str) -> dict[str, str]:
    """ "Last, First, Suffix" -> ``Author`` fields: the display name "First Last Suffix" and
    the family part Last, whose leading lower-case words are its particle, as BibTeX reads the
    part before the comma ("de Vos, Martijn"). "First Last" gives the display name alone.

    Remarks and markup go before the commas are read ("Song, Qun* (equal, first)"); the rest
    of the cleaning ("et al." is no one) is ``Paper``'s.
    """
    parts = [part.strip() for part in strip_annotations(raw).split(",")]
    if len(parts) == 1:
        return {"name": parts[0]}
    name = person_name(parts[0], parts[1], ", ".join(parts[2:]))
    return {"name": name, "family": parts[0], "particle": leading_particle(parts[0]) or ""}


def _published(record: _Record) -> str | None:
    best: tuple[str, ...] = ()
    for value in record.values("PY") + record.values("Y1") + record.values("DA"):
        match = _DATE.search(value)
        if match:
            parts = tuple(p for p in match.groups() if p)
            if len(parts) > len(best) and (not best or parts[0] == best[0]):
                best = parts
    if not best:
        return None
    return "-".join(part if i == 0 else f"{int(part):02d}" for i, part in enumerate(best))


def _pages(record: _Record) -> str | None:
    """``SP``-``EP``; ``SP`` alone (it may hold the whole range); None without a start page."""
    start, end = record.first("SP"), record.first("EP")
    if not start:
        return None
    return f"{start}\u2013{end}" if end and end != start else start


def _standard_number(value: str) -> dict[str, str]:
    """``SN`` holds an ISSN or an ISBN: an ISBN when its first number has 10 or 13 digits."""
    first = re.sub(r"[\s-]", "", re.split(r"[;,(]", value, maxsplit=1)[0])
    return {"isbn" if _ISBN.fullmatch(first) else "issn": value} if value else {}


def _extra_fields(record: _Record) -> dict[str, str]:
    extra = {name: record.first(tag) for tag, name in _EXTRA_TAGS.items()}
    extra["note"] = "; ".join(note for note in record.values("N1") if note)
    return {**{name: value for name, value in extra.items() if value}, **_standard_number(record.first("SN"))}


def record_fields(record: _Record) -> dict[str, object]:
    """The Paper fields of one RIS record."""
    kind = record.first("TY").upper()
    check_field_sizes({tag: " ".join(record.values(tag)) for tag in record.tags})
    title = inline_html_to_text(record.first("TI", "T1", "CT", "ST") or (record.first("BT") if "BOOK" in kind else ""))
    if not title:
        raise ItemRejected("no title (no TI, T1, CT or ST line)")
    venue_tags = ["JF", "JO", "T2", "JA", "J2"] + ([] if "BOOK" in kind else ["BT"])
    urls = [url for url in record.values("UR") if url.startswith(("http://", "https://"))]
    keywords: list[str] = []
    for lines in record.tags.get("KW", []):  # one keyword per line, continuation lines too
        keywords.extend(line.strip() for line in lines if line.strip())
    doi = record.first("DO")
    editors = [_author(v) for v in record.values("ED") + record.values("A2") if v]
    arxiv = next((m.group(1) for m in map(_ARXIV_URL.search, urls) if m), None)
    return {
        "title": title,
        "authors": [_author(v) for v in record.values("AU") + record.values("A1") if v],
        "abstract": inline_html_to_text(record.first("AB", "N2")),
        "published": _published(record),
        "venue": inline_html_to_text(record.first(*venue_tags)),
        "publisher": inline_html_to_text(record.first("PB")),
        "doi": doi,
        "arxiv_id": normalize_arxiv_id(arxiv),
        "url": urls[0] if urls else None,
        "type": _TYPES.get(kind, kind.lower() or None),
        "pages": _pages(record),
        "volume": record.first("VL"),
        "issue": record.first("IS"),
        "editors": [editor["name"] for editor in editors],
        "editor_families": {editor["name"]: editor for editor in editors if editor.get("family")},
        "extra_fields": _extra_fields(record),
        "categories": keywords,
    }


def parse_ris(text: str) -> ParseOutcome:
    """Every record of a RIS document; records without a title are reported and skipped."""
    outcome = ParseOutcome(format=FORMAT)
    records = _records(text, outcome)
    records.reverse()
    while records:  # each record is dropped once it is a paper: never both held for the whole file
        record = records.pop()
        if not outcome.budget.in_time(record.label):
            break
        build_item(record_fields, record, source=FORMAT, source_id=record.first("ID"), item=record.label,
                   outcome=outcome)
    return outcome
