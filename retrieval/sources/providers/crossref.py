"""Crossref: work records -> papers (pure), for the API client and saved files alike.

``read_work`` reads one work; ``parse_crossref_page`` one ``/works`` page. For a saved response,
``error_of`` recognises a failure answer and ``works_of`` takes the works out of a document (the
``{"status", "message-type", "message"}`` envelope or a bare work, array or ``{"items"}``). The
API client (``sources.apis.crossref``) and the saved-file reader
(``sources.files.saved_responses``) both read through them.

Quirks handled by the parser:

- the payload is under ``message`` (one work) or ``message.items`` (a list);
- titles are lists (first one wins; a subtitle is appended) and may carry inline markup;
- abstracts are JATS XML fragments (``<jats:p>``) -> plain text;
- dates are ``date-parts`` with missing parts (``[[2008]]``, ``[[2008, 3]]``, ``[[null]]``):
  the publication date is ``issued`` (Crossref's earliest of print and online), refined by a
  more precise ``published``/``published-online``/``published-print`` of the same date
  (theses carry only ``approved``, used last);
- organisational authors have only ``name``; people have ``given``/``family``/``ORCID``
  (``family`` is kept as ``Author.family``);
- ``container-title`` -> venue, ``publisher``, ``type``, ``is-referenced-by-count`` -> citations;
  ``page``/``volume``/``issue``, ``editor`` -> editors, the first ``ISSN`` and ``ISBN`` and
  ``language`` -> ``extra_fields`` (a ``"null"`` string, which some members deposit, is absent).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import httpx

from retrieval.errors import ParseError, SourceError
from retrieval.records.name_parts import leading_particle
from retrieval.records.paper import Paper, clean_text, normalize_doi
from retrieval.results import SkippedItem
from retrieval.sources.files.base import (
    ItemRejected,
    ParseOutcome,
    build_item,
    check_field_sizes,
    json_array,
    json_object,
    person_name,
)
from retrieval.sources.markup.jats import jats_to_text

#: The provenance source of Crossref records, and the file format of a saved Crossref response.
SOURCE = "crossref"
FORMAT = SOURCE
#: The API as a user knows it, in messages.
LABEL = "Crossref"
MAX_TITLE_CHARS = 2_000
MAX_ABSTRACT_CHARS = 100_000
#: Raw abstracts beyond this many characters are not even parsed.
MAX_RAW_ABSTRACT_CHARS = 4 * MAX_ABSTRACT_CHARS
_DATE_FIELDS = ("issued", "published", "published-online", "published-print", "approved")


@dataclass
class CrossrefPage:
    """One page of ``/works``: papers, the cursor to the next page and what was skipped."""

    papers: list[Paper]
    total_results: int | None
    next_cursor: str | None
    items: int = 0  # items on the page, kept or skipped
    skipped: list[SkippedItem] = field(default_factory=list)
    warnings: list[SkippedItem] = field(default_factory=list)


# --- parsing (pure) -----------------------------------------------------------------------


_dict = json_object
_list = json_array


def _first_text(value: Any) -> str:
    """First non-empty string of a Crossref list field (or the string itself)."""
    values = value if isinstance(value, list) else [value]
    for entry in values:
        if isinstance(entry, str) and entry.strip():
            return _markup_text(entry)
    return ""


def _markup_text(value: str) -> str:
    return jats_to_text(value).replace("\n\n", " ") if "<" in value or "&" in value else clean_text(value)


def date_from_parts(value: Any) -> str | None:
    """``{"date-parts": [[2008, 3]]}`` -> "2008-03"; missing or null parts are cut off."""
    rows = _list(_dict(value).get("date-parts"))
    if not rows or not isinstance(rows[0], list):
        return None
    numbers: list[int] = []
    for part in rows[0][:3]:
        try:
            numbers.append(int(part))
        except (TypeError, ValueError, OverflowError):
            break
    if not numbers or not 1000 <= numbers[0] <= date.today().year + 2:
        return None
    year, rest = numbers[0], numbers[1:]
    text = f"{year:04d}"
    if rest and 1 <= rest[0] <= 12:
        text += f"-{rest[0]:02d}"
        if len(rest) > 1 and 1 <= rest[1] <= 31:
            text += f"-{rest[1]:02d}"
    return text


def publication_date(item: Mapping[str, Any]) -> str | None:
    """The best publication date: ``issued`` first, made more precise by an agreeing field."""
    candidates = [d for d in (date_from_parts(item.get(name)) for name in _DATE_FIELDS) if d]
    if not candidates:
        return None
    best = candidates[0]
    for candidate in candidates[1:]:
        if len(candidate) > len(best) and candidate.startswith(best):
            best = candidate
    return best


def _authors(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    authors: list[dict[str, Any]] = []
    for entry in _list(item.get("author")):
        entry = _dict(entry)
        family, given = entry.get("family"), entry.get("given")
        name = (
            person_name(family if isinstance(family, str) else None, given if isinstance(given, str) else None,
                        entry.get("suffix") if isinstance(entry.get("suffix"), str) else None)
            if isinstance(family, str) and family.strip()
            else clean_text(entry.get("name")) if isinstance(entry.get("name"), str) else ""
        )
        if not name and isinstance(given, str):
            name = clean_text(given)
        if not name:
            continue
        orcid = entry.get("ORCID")
        affiliations = [_dict(a).get("name") for a in _list(entry.get("affiliation"))]
        has_family = isinstance(family, str) and bool(family.strip())
        authors.append({
            "name": name,
            # the family part, its particle read as BibTeX reads "de Vos" (``Author.family``)
            "family": family if has_family else None,
            "particle": leading_particle(clean_text(family)) if has_family else None,
            "orcid": orcid if isinstance(orcid, str) else None,
            # Crossref passes affiliation text through with HTML entities ("Lab &amp; ...")
            "affiliations": [html.unescape(a) for a in affiliations if isinstance(a, str)],
        })
    return authors


def _title(item: Mapping[str, Any]) -> str:
    title = _first_text(item.get("title"))
    subtitle = _first_text(item.get("subtitle"))
    if title and subtitle and subtitle.lower() not in title.lower():
        joiner = " " if title[-1] in ":?!." else ": "
        title = f"{title}{joiner}{subtitle}"
    return title


def _abstract(item: Mapping[str, Any]) -> str | None:
    raw = item.get("abstract")
    if not isinstance(raw, str) or not raw.strip():
        return None
    if len(raw) > MAX_RAW_ABSTRACT_CHARS:
        raise ItemRejected(f"abstract is longer than {MAX_ABSTRACT_CHARS} characters")
    text = jats_to_text(raw)
    if len(text) > MAX_ABSTRACT_CHARS:
        raise ItemRejected(f"abstract is longer than {MAX_ABSTRACT_CHARS} characters")
    return text or None


def _plain(value: Any) -> str | None:
    """A Crossref scalar field as text; None when absent, empty or the literal "null" some
    members deposit (``"volume": "null"``)."""
    text = clean_text(str(value)) if isinstance(value, str | int) and not isinstance(value, bool) else ""
    return text if text and text.lower() != "null" else None


def _editors(item: Mapping[str, Any]) -> list[str]:
    """``editor`` entries (``given``/``family``, or an organisation's ``name``) as display names."""
    names: list[str] = []
    for entry in _list(item.get("editor")):
        family, given, suffix, organisation = (
            value if isinstance(value := _dict(entry).get(key), str) else None
            for key in ("family", "given", "suffix", "name")
        )
        name = person_name(family, given, suffix) if family and family.strip() else clean_text(organisation or given)
        if name:
            names.append(name)
    return names


def _extra_fields(item: Mapping[str, Any]) -> dict[str, str]:
    """First ``ISSN``, first ``ISBN`` and ``language``, under their BibTeX field names."""
    extra = {
        "issn": next((v for v in map(_plain, _list(item.get("ISSN"))) if v), None),
        "isbn": next((v for v in map(_plain, _list(item.get("ISBN"))) if v), None),
        "language": _plain(item.get("language")),
    }
    return {name: value for name, value in extra.items() if value}


def _work_fields(item: Mapping[str, Any]) -> dict[str, Any]:
    title = _title(item)
    if len(title) > MAX_TITLE_CHARS:
        raise ItemRejected(f"title is longer than {MAX_TITLE_CHARS} characters")
    authors = _authors(item)
    check_field_sizes({"authors": [a["name"] for a in authors]})
    doi = normalize_doi(item.get("DOI") if isinstance(item.get("DOI"), str) else None)
    arxiv = doi.removeprefix("10.48550/arxiv.") if doi and doi.startswith("10.48550/arxiv.") else None
    venue = _first_text(item.get("container-title")) or _first_text(_dict(item.get("event")).get("name"))
    cited = item.get("is-referenced-by-count")
    url = _dict(_dict(item.get("resource")).get("primary")).get("URL") or item.get("URL")
    return {
        "title": title,
        "abstract": _abstract(item),
        "authors": authors,
        "published": publication_date(item),
        "venue": venue,
        "publisher": item.get("publisher") if isinstance(item.get("publisher"), str) else None,
        "doi": doi,
        "arxiv_id": arxiv,
        "url": url if isinstance(url, str) else None,
        "type": item.get("type") if isinstance(item.get("type"), str) else None,
        "pages": _plain(item.get("page")),
        "volume": _plain(item.get("volume")),
        "issue": _plain(item.get("issue")),
        "editors": _editors(item),
        "extra_fields": _extra_fields(item),
        "categories": [s for s in _list(item.get("subject")) if isinstance(s, str)],
        "citation_count": cited if isinstance(cited, int) and cited >= 0 else None,
    }


def read_work(item: Any, position: int = 0) -> ParseOutcome:
    """One Crossref work record (bare, not its envelope; the ``position``-th of its list, from 0)
    -> an outcome holding its paper, or the reason it was skipped (not an object, no title,
    absurd sizes) and the optional values dropped (``warnings``). Never raises for a bad item."""
    outcome = ParseOutcome(format=FORMAT)
    if not isinstance(item, Mapping):
        outcome.skipped.append(SkippedItem(f"Crossref item #{position + 1}", "not a JSON object"))
        return outcome
    doi = normalize_doi(item.get("DOI") if isinstance(item.get("DOI"), str) else None)
    label = f"Crossref work {doi}" if doi else f"Crossref item #{position + 1}"
    if isinstance(item.get("type"), str) and not _first_text(item.get("title")):
        label += f" ({item['type']})"
    build_item(_work_fields, item, source=SOURCE, source_id=doi, item=label, outcome=outcome)
    return outcome


def unwrap(payload: Any) -> Any:
    """The work inside a ``{"status", "message-type", "message"}`` envelope, else the payload."""
    if isinstance(payload, Mapping) and isinstance(payload.get("message"), Mapping) and "DOI" not in payload:
        return payload["message"]
    return payload


def parse_crossref_work(item: dict[str, Any]) -> Paper:
    """One Crossref work (bare, or the whole single-work response) -> Paper.

    Raises ``ParseError`` naming the item when it cannot become a paper (no title, absurd
    sizes, a list response passed by mistake).
    """
    item = unwrap(item)
    if isinstance(item, Mapping) and isinstance(item.get("items"), list):
        raise ParseError(
            "Crossref: this is a list response (message.items); read it with parse_crossref_page.",
            source=SOURCE, item="message.items",
        )
    return read_work(item).only_paper(SOURCE)


def parse_crossref_page(payload: Any) -> CrossrefPage:
    """A ``/works`` list response (``message.items``) -> papers, skipped items, next cursor."""
    message = unwrap(payload)
    if not isinstance(message, Mapping) or not isinstance(message.get("items"), list):
        raise SourceError(SOURCE, "returned a list response without 'message.items'; the API may have changed.")
    outcome = ParseOutcome.of_items(FORMAT, message["items"], read_work)
    total = message.get("total-results")
    cursor = message.get("next-cursor")
    return CrossrefPage(
        papers=outcome.papers,
        total_results=total if isinstance(total, int) else None,
        next_cursor=cursor if isinstance(cursor, str) and cursor else None,
        items=len(message["items"]),
        skipped=outcome.skipped,
        warnings=outcome.warnings,
    )


# --- error answers and saved responses -----------------------------------------------------

_WORKS = {"work", "work-list"}


def describe_error_body(body: Any) -> str | None:
    """The message of a Crossref error answer, decoded: ``{"message": [{"type", "value",
    "message"}]}`` or ``{"message": "..."}``; None when it says nothing."""
    messages = _dict(body).get("message")
    if isinstance(messages, list):
        texts = []
        for entry in messages:
            entry = _dict(entry)
            text = entry.get("message") or entry.get("type")
            if text:
                value = entry.get("value")
                texts.append(f"{text} ({value})" if value and str(value) not in str(text) else str(text))
        return "; ".join(texts) or None
    return messages if isinstance(messages, str) else None


def describe_error(response: httpx.Response) -> str | None:
    """The message of a Crossref error response (for ``PoliteClient``): its JSON's messages, or
    the start of a plain-text body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300].strip() or None
    return describe_error_body(body)


def error_of(document: Any) -> str | None:
    """The API's message when a saved document is a failure answer (``status`` other than "ok", or
    a ``message-type`` ending in "failure"), else None."""
    if not isinstance(document, Mapping):
        return None
    status, kind = document.get("status"), document.get("message-type")
    failed = (isinstance(status, str) and status != "ok") or (isinstance(kind, str) and kind.endswith("failure"))
    if not failed:
        return None
    try:
        described = describe_error_body(document)
    except RecursionError:  # a value nested too deeply to print
        described = None
    return described or f"status {status!r}"


def _not_works(name: str, what: str, instead: str) -> ParseError:
    return ParseError(f"{name} is {what}, not Crossref works; {instead}", source=FORMAT, item=name)


def works_of(document: Any, name: str) -> list[Any]:
    """The work records of a saved document (``name``: the file, for messages): a bare array, the
    ``items`` of a list (in its envelope or not), or one work. ``ParseError`` for another kind of
    Crossref answer (a journal, a member...), a work list without items, or a document that is
    not an object or array."""
    if isinstance(document, list):
        return document
    if not isinstance(document, Mapping):
        raise _not_works(name, "not a JSON object or array", "save a /works response.")
    kind = document.get("message-type")
    if isinstance(kind, str) and kind not in _WORKS:
        raise _not_works(name, f"a Crossref {kind!r} response", "save a /works response instead.")
    message = unwrap(document)
    if isinstance(message, Mapping) and isinstance(message.get("items"), list):
        return message["items"]
    if kind == "work-list":
        raise _not_works(name, "a Crossref work list without 'items'", "the response may be cut short: save it again.")
    return [message]
