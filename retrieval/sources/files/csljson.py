"""CSL-JSON (what Zotero, Mendeley, pandoc and citeproc exchange): an array of items or one item.

Read: ``title`` (a string, or a list as some exporters write), ``author`` (``family``/``given``
with particles and suffix, or ``literal``), ``issued`` (``date-parts``, else ``raw``/``literal``),
``container-title``, ``publisher`` (a string, or ``{"name": ...}``), ``DOI``, ``URL``,
``abstract`` (which may be JATS or HTML), ``keyword``/``categories``, ``type``, ``id``,
``page``, ``volume``, ``issue``, ``editor`` (names as ``author``, their family parts in
``editor_families``); ``ISSN``, ``ISBN``, ``note``,
``language``, ``publisher-place`` (-> ``address``), ``edition`` and ``collection-title``
(-> ``series``) go to ``extra_fields`` under their BibTeX names.
Text fields may carry CSL's HTML-like markup (``<i>``, ``<sup>``) or, from some exporters,
LaTeX escapes (``Exposici\\'on``); both are decoded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from retrieval.errors import ParseError
from retrieval.records.author_cleaning import strip_annotations
from retrieval.records.paper import normalize_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.files.base import NESTED_TOO_DEEPLY, ParseOutcome, build_item, check_field_sizes, person_name
from retrieval.sources.files.jsonl import TOO_DEEP, json_array_items, load_json
from retrieval.sources.markup.inline_html import inline_html_to_text
from retrieval.sources.markup.jats import jats_to_text
from retrieval.sources.markup.latex import latex_to_text

FORMAT = "csl-json"
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/([^\s?#]+)", re.IGNORECASE)


def _text(value: Any) -> str:
    """A CSL text value (string, number or list of strings) as plain text."""
    if isinstance(value, list):
        value = next((item for item in value if isinstance(item, str | int | float)), "")
    if isinstance(value, dict):
        value = value.get("name") or value.get("literal") or ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return ""
    text = str(value)
    if "<" in text or "&" in text:
        text = jats_to_text(text)
    if "\\" in text:
        text = latex_to_text(text, tilde_is_space=False)
    return text.strip()


def _name_part(value: Any) -> str:
    """A name part as text, HTML removed first: ``<sup>1</sup>`` must not become "Smith1"."""
    return _text(strip_annotations(value) if isinstance(value, str) else value)


def _authors(value: Any) -> list[dict[str, str]]:
    """CSL names; "et al." / "others" among them reach ``Paper``, which marks the list cut.

    A person's family part (``Author.family``) is the particles and ``family``; a
    ``dropping-particle`` ("van" of Ludwig van Beethoven) is what BibTeX calls von
    (``Author.particle``), a ``non-dropping-particle`` ("de" of de Vos) part of the last name.
    """
    authors: list[dict[str, str]] = []
    for person in value if isinstance(value, list) else []:
        if not isinstance(person, dict):
            continue
        name = _name_part(person.get("literal"))
        if name:
            authors.append({"name": name})
            continue
        dropping = _name_part(person.get("dropping-particle"))
        family = _joined(_name_part(person.get("non-dropping-particle")), _name_part(person.get("family")))
        name = person_name(family, _joined(_name_part(person.get("given")), dropping), _name_part(person.get("suffix")))
        if name:
            authors.append({"name": name, "family": _joined(dropping, family), "particle": dropping})
    return authors


def _joined(*parts: str) -> str:
    return " ".join(part for part in parts if part)


def _date(value: Any) -> str | None:
    """``{"date-parts": [[2015, 8, 26]]}`` -> "2015-08-26" (parts may be strings or missing)."""
    if not isinstance(value, dict):
        return None
    parts = value.get("date-parts")
    if isinstance(parts, list) and parts and isinstance(parts[0], list):
        numbers: list[int] = []
        for part in parts[0][:3]:
            text = str(part).strip() if isinstance(part, str | int) else ""
            if not text.isdigit():
                break
            numbers.append(int(text))
        if numbers:
            return "-".join(f"{n:04d}" if i == 0 else f"{n:02d}" for i, n in enumerate(numbers))
    for key in ("raw", "literal", "date-time"):
        text = _text(value.get(key))
        match = re.search(r"\d{4}(?:-\d{2}(?:-\d{2})?)?", text)
        if match:
            return match.group()
    return None


def _keywords(item: dict[str, Any]) -> list[str]:
    value = item.get("keyword") or item.get("categories") or []
    if isinstance(value, str):
        separator = ";" if ";" in value else ","
        value = value.split(separator)
    if not isinstance(value, list):
        return []
    return [word for word in (_text(v) for v in value) if word]


def _arxiv(doi: str, url: str) -> str | None:
    match = _ARXIV_DOI.match(doi) or _ARXIV_URL.search(url)
    return normalize_arxiv_id(match.group(1)) if match else None


#: CSL variables with no ``Paper`` column -> the BibTeX field they are exported as.
_EXTRA_FIELDS = {
    "ISSN": "issn", "ISBN": "isbn", "note": "note", "language": "language",
    "publisher-place": "address", "edition": "edition", "collection-title": "series",
}  # fmt: skip


def _extra_fields(item: dict[str, Any]) -> dict[str, str]:
    extra = {name: _text(item.get(variable)) for variable, name in _EXTRA_FIELDS.items()}
    return {name: value for name, value in extra.items() if value}


def item_fields(item: dict[str, Any]) -> dict[str, Any]:
    """The Paper fields of one CSL item."""
    check_field_sizes(item)
    doi = _text(item.get("DOI") or item.get("doi"))
    url = _text(item.get("URL") or item.get("url"))
    published = None
    for key in ("issued", "published-print", "published-online", "created"):
        published = _date(item.get(key))
        if published:
            break
    editors = _authors(item.get("editor"))
    return {
        "title": inline_html_to_text(_text(item.get("title"))),
        "authors": _authors(item.get("author")),
        "abstract": inline_html_to_text(_text(item.get("abstract"))),
        "published": published,
        "venue": inline_html_to_text(_text(item.get("container-title") or item.get("event-title"))),
        "publisher": inline_html_to_text(_text(item.get("publisher"))),
        "doi": doi,
        "arxiv_id": _arxiv(doi, url),
        "url": url,
        "type": _text(item.get("type")),
        "pages": _text(item.get("page")),
        "volume": _text(item.get("volume")),
        "issue": _text(item.get("issue")),
        "editors": [editor["name"] for editor in editors],
        "editor_families": {editor["name"]: editor for editor in editors if editor.get("family")},
        "extra_fields": _extra_fields(item),
        "categories": _keywords(item),
    }


def parse_csl_json(text: str, name: str = "<text>") -> ParseOutcome:
    """Every item of a CSL-JSON document; raises ParseError only if the document is not JSON.

    An array is decoded item by item (``json_array_items``), never held whole; reading stops at
    the file's budget."""
    outcome = ParseOutcome(format=FORMAT)
    body = text.lstrip("\ufeff \t\r\n")
    items: Iterable[Any] | None = json_array_items(body, outcome)
    if items is None:
        try:
            document = load_json(body)
        except ValueError as exc:
            raise ParseError(
                f"{name} is not valid CSL-JSON ({exc}). Check that it is one JSON array or object.",
                source=FORMAT,
                item=name,
            ) from exc
        if isinstance(document, dict) and isinstance(document.get("items"), list):
            document = document["items"]
        items = document if isinstance(document, list) else [document]
    for number, item in enumerate(items, 1):
        label = f"item {number}"
        if not outcome.budget.take(label):
            break
        if item is TOO_DEEP:
            outcome.skipped.append(SkippedItem(label, NESTED_TOO_DEEPLY))
            continue
        if not isinstance(item, dict):
            outcome.skipped.append(SkippedItem(label, f"not a JSON object ({type(item).__name__})"))
            continue
        item_id = _text(item.get("id"))
        if item_id:
            label = f"item {number} ({item_id})"
        build_item(item_fields, item, source=FORMAT, source_id=item_id, item=label, outcome=outcome)
    return outcome
