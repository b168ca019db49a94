"""arXiv OAI-PMH ``oai_dc`` records (a ListRecords response, with or without its envelope).

Per record: ``dc:title``; ``dc:creator`` "Last, First" (one per author); several
``dc:description`` (the abstract first, then "Comment: ...", kept as extra ``comment``: a field
bibliography styles do not print, unlike ``note``); ``dc:date`` (the first is the
submission date); several ``dc:identifier`` (the abs URL gives the arXiv id, ``doi:...`` the
DOI, any other text is a journal reference, used as venue); ``dc:subject`` -> categories (names
such as "Quantum Physics", not arXiv codes: no ``primaryclass`` can be told from them).
LaTeX in titles and abstracts is decoded (``~`` is kept: arXiv uses it for "approximately").

Safety: a document with a DOCTYPE or ENTITY declaration is refused before parsing (entity
expansion and external entities are the classic XML attacks; OAI-PMH never needs either).
A document that is not well-formed is read record by record, so one broken record costs only
itself; a record cut off at the end of the file (a truncated download) is reported as such. A
response with no records but an OAI-PMH ``<error>`` (``noRecordsMatch``) reports that error.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from retrieval.errors import ParseError
from retrieval.records.paper import clean_text, normalize_doi, split_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.files.base import ItemRejected, ParseOutcome, build_item, check_field_sizes, person_name
from retrieval.sources.files.sniff import OAI_DC_NAMESPACE
from retrieval.sources.markup.jats import UnsafeXMLError, parse_xml
from retrieval.sources.markup.latex import latex_to_text

FORMAT = "oai-dc"

_DECLARATION = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_RECORD_START = re.compile(r"<(?:[\w.-]+:)?record[\s>]")
_RECORD_END = re.compile(r"</(?:[\w.-]+:)?record\s*>")
_METADATA_START = re.compile(r"<(?:[\w.-]+:)?metadata[\s>]")
_IDENTIFIER = re.compile(r"<(?:[\w.-]+:)?identifier\s*>\s*([^<\s]+)\s*</(?:[\w.-]+:)?identifier\s*>")
TRUNCATED = "cut off at the end of the file (truncated download?)"
UNCLOSED = "malformed XML: no </record> before the next <record>"
_WRAPPER = (
    '<records xmlns="http://www.openarchives.org/OAI/2.0/" '
    f'xmlns:oai_dc="{OAI_DC_NAMESPACE}" xmlns:dc="http://purl.org/dc/elements/1.1/" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">{}</records>'
)


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _texts(element: ET.Element, name: str) -> list[str]:
    """Stripped text of every descendant with local name ``name``, in document order."""
    values = []
    for child in element.iter():
        if _local(child.tag) == name:
            text = "".join(child.itertext()).strip()
            if text:
                values.append(text)
    return values


def _creator(raw: str) -> str:
    family, _, given = raw.partition(",")
    return person_name(latex_to_text(family), latex_to_text(given))


def record_fields(record: ET.Element) -> dict[str, object]:
    """The Paper fields of one ``<record>``; raises ItemRejected for deleted/empty records."""
    header = next((e for e in record.iter() if _local(e.tag) == "header"), None)
    if header is not None and header.get("status") == "deleted":
        raise ItemRejected("the record is marked deleted")
    metadata = next((e for e in record.iter() if _local(e.tag) == "dc"), None)
    if metadata is None:
        raise ItemRejected("no oai_dc metadata")
    titles = _texts(metadata, "title")
    descriptions = _texts(metadata, "description")
    creators = _texts(metadata, "creator")
    check_field_sizes({"title": " ".join(titles), "description": " ".join(descriptions)})
    check_field_sizes({"creator": creators})
    abstract = next((d for d in descriptions if not d.startswith("Comment:")), "")
    comment = next((clean_text(d.removeprefix("Comment:")) for d in descriptions if d.startswith("Comment:")), "")
    arxiv: tuple[str, str | None] | None = None
    doi, venue, url = None, None, None
    for identifier in _texts(metadata, "identifier"):
        if "arxiv.org/abs/" in identifier and arxiv is None:
            arxiv, url = split_arxiv_id(identifier), identifier
        elif identifier.lower().startswith("doi:") or identifier.startswith("10."):
            doi = doi or normalize_doi(identifier.split()[0])
        elif not identifier.startswith(("http://", "https://")) and venue is None:
            venue = identifier
    if arxiv is None and header is not None:
        oai_id = next(iter(_texts(header, "identifier")), "")
        arxiv = split_arxiv_id(oai_id.removeprefix("oai:arXiv.org:"))
    dates = _texts(metadata, "date")
    return {
        "title": latex_to_text(titles[0] if titles else "", tilde_is_space=False),
        "authors": [{"name": name} for name in map(_creator, creators) if name],
        "abstract": latex_to_text(abstract, tilde_is_space=False),
        "published": dates[0][:10] if dates else None,
        "venue": venue,
        "doi": doi,
        "arxiv_id": arxiv[0] if arxiv else None,
        "arxiv_version": arxiv[1] if arxiv else None,
        "url": url or (f"https://arxiv.org/abs/{arxiv[0]}" if arxiv else None),
        "type": "preprint",
        "categories": _texts(metadata, "subject"),
        "extra_fields": {"comment": comment} if comment else {},
        "open_access": True if arxiv else None,
    }


def _record_id(record: ET.Element) -> str:
    header = next((e for e in record.iter() if _local(e.tag) == "header"), None)
    return next(iter(_texts(header, "identifier")), "") if header is not None else ""


def _record_chunks(text: str) -> list[str | SkippedItem]:
    """The ``<record>...</record>`` texts of a malformed document, in order.

    A record whose end tag is missing is a ``SkippedItem`` in its place: the last one was cut
    off (a truncated download), an earlier one runs into the next ``<record>``. Its label
    carries the header identifier when that much of it is there.
    """
    starts = [match.start() for match in _RECORD_START.finditer(text)]
    chunks: list[str | SkippedItem] = []
    for number, start in enumerate(starts, 1):
        limit = starts[number] if number < len(starts) else len(text)
        end = _RECORD_END.search(text, start, limit)
        if end is not None:
            chunks.append(text[start : end.end()])
            continue
        head = text[start:limit]
        metadata = _METADATA_START.search(head)
        identifier = _IDENTIFIER.search(head, 0, metadata.start() if metadata else len(head))
        label = f"record {number} ({identifier.group(1)})" if identifier else f"record {number}"
        chunks.append(SkippedItem(label, TRUNCATED if number == len(starts) else UNCLOSED))
    return chunks


def _records(text: str, name: str, outcome: ParseOutcome) -> list[tuple[int, ET.Element]]:
    """Numbered ``<record>`` elements: from the whole document, or one by one if it is malformed."""
    try:
        root = parse_xml(text)
    except ET.ParseError as whole_error:
        chunks = _record_chunks(text)
        if not chunks:
            raise ParseError(
                f"{name} is not well-formed XML ({whole_error}) and no <record> could be read.",
                source=FORMAT,
                item=name,
            ) from whole_error
        records: list[tuple[int, ET.Element]] = []
        for number, chunk in enumerate(chunks, 1):
            if not outcome.budget.take(f"record {number}"):
                break
            if isinstance(chunk, SkippedItem):
                outcome.skipped.append(chunk)
                continue
            try:
                wrapper = parse_xml(_WRAPPER.format(chunk))
            except ET.ParseError as exc:
                outcome.skipped.append(SkippedItem(f"record {number}", f"malformed XML: {exc}"))
                continue
            records.extend((number, e) for e in wrapper if _local(e.tag) == "record")
        return records
    found = [element for element in root.iter() if _local(element.tag) == "record"]
    if not found:
        for error in (e for e in root.iter() if _local(e.tag) == "error"):
            said = " ".join("".join(error.itertext()).split())
            answer = f"the server answered {error.get('code') or 'an error'}" + (f": {said}" if said else "")
            outcome.skipped.append(SkippedItem("the OAI-PMH response", f"no records; {answer}"))
    return list(enumerate(found, 1))


def parse_oai_dc(text: str, name: str = "<text>") -> ParseOutcome:
    """Every record of an OAI-PMH oai_dc document.

    Raises ParseError for a document that declares a DOCTYPE/ENTITY, or that is not XML at all.
    """
    if _DECLARATION.search(text):
        raise ParseError(
            f"{name} declares a DOCTYPE or ENTITY; it is refused unparsed, since entity "
            "expansion is a known XML attack. Export the records without a DTD.",
            source=FORMAT,
            item=name,
        )
    outcome = ParseOutcome(format=FORMAT)
    try:
        records = _records(text, name, outcome)
    except UnsafeXMLError as exc:  # belt and braces: the parser refuses a DOCTYPE too
        raise ParseError(f"{name}: {exc}", source=FORMAT, item=name) from exc
    counted = outcome.budget.used > 0  # a malformed document's records were counted chunk by chunk
    for number, record in records:
        if not (outcome.budget.in_time(f"record {number}") if counted else outcome.budget.take(f"record {number}")):
            break
        record_id = _record_id(record)
        label = f"record {number} ({record_id})" if record_id else f"record {number}"
        build_item(record_fields, record, source=FORMAT, source_id=record_id, item=label, outcome=outcome)
    return outcome
