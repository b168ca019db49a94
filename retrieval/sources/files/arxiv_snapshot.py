"""The arXiv metadata snapshot (Kaggle/Cornell ``arxiv-metadata-oai-snapshot.json``): JSON Lines
(or the same records as one JSON array, as converted copies have them).

Per line: ``id``, ``title`` and ``abstract`` (hard-wrapped, with LaTeX escapes and ``$...$``
math, decoded here), ``authors_parsed`` (``[last, first, suffix]`` lists; the flat ``authors``
string is only a fallback, it is ambiguous), ``versions`` (``created`` of the first is the
submission date, the last gives the current version), ``journal-ref`` -> venue, ``doi``
(sometimes several, space separated: the first is kept), ``categories`` (space separated; the
first, the primary one, also as extra ``primaryclass``), ``comments`` -> extra ``comment``.
"""

from __future__ import annotations

import re
from email.utils import parsedate_to_datetime
from typing import Any

from retrieval.records.paper import clean_text, normalize_doi, split_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.files.base import ItemRejected, ParseOutcome, build_item, check_field_sizes, person_name
from retrieval.sources.files.jsonl import json_items
from retrieval.sources.markup.latex import latex_to_text

FORMAT = "arxiv-snapshot"
_AUTHOR_SPLIT = re.compile(r",\s*|\s+and\s+")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _text(value: Any) -> str:
    return latex_to_text(_str(value), tilde_is_space=False)


def _authors(record: dict[str, Any]) -> list[dict[str, str]]:
    parsed = record.get("authors_parsed")
    names: list[str] = []
    if isinstance(parsed, list) and parsed:
        for parts in parsed:
            if isinstance(parts, list) and parts:
                last, first, suffix = [*map(_text, parts), "", ""][:3]
                names.append(person_name(last, first, suffix))
    else:
        names = [_text(name) for name in _AUTHOR_SPLIT.split(_str(record.get("authors")))]
    return [{"name": name} for name in names if name]


def _submitted(record: dict[str, Any]) -> str | None:
    versions = record.get("versions")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        try:
            return parsedate_to_datetime(_str(versions[0].get("created"))).date().isoformat()
        except (TypeError, ValueError, IndexError):
            pass
    return _str(record.get("update_date"))[:10] or None


def _version(record: dict[str, Any]) -> str | None:
    versions = record.get("versions")
    if isinstance(versions, list) and versions and isinstance(versions[-1], dict):
        version = _str(versions[-1].get("version"))
        return version if re.fullmatch(r"v\d+", version) else None
    return None


def _extra_fields(record: dict[str, Any]) -> dict[str, str]:
    """``primaryclass``: the first of ``categories`` (arXiv lists the primary one first);
    ``comment``: ``comments``, unwrapped (a field styles do not print, unlike ``note``)."""
    categories = _str(record.get("categories")).split()
    extra = {"primaryclass": categories[0] if categories else "", "comment": clean_text(_str(record.get("comments")))}
    return {name: value for name, value in extra.items() if value}


def record_fields(record: dict[str, Any]) -> dict[str, object]:
    """The Paper fields of one snapshot record."""
    check_field_sizes(record)
    parts = split_arxiv_id(_str(record.get("id")))
    if parts is None:
        raise ItemRejected(f"id {record.get('id')!r} is not an arXiv identifier")
    arxiv_id = parts[0]
    doi = next((d for d in map(normalize_doi, _str(record.get("doi")).split()) if d), None)
    return {
        "title": _text(record.get("title")),
        "authors": _authors(record),
        "abstract": _text(record.get("abstract")),
        "published": _submitted(record),
        "venue": _text(record.get("journal-ref")),
        "doi": doi,
        "arxiv_id": arxiv_id,
        "arxiv_version": _version(record),
        "url": f"https://arxiv.org/abs/{arxiv_id}",
        "type": "preprint",
        "categories": _str(record.get("categories")).split(),
        "extra_fields": _extra_fields(record),
        "open_access": True,
    }


def _add_record(record: Any, label: str, outcome: ParseOutcome) -> None:
    if not isinstance(record, dict):
        outcome.skipped.append(SkippedItem(label, f"not a JSON object (found {type(record).__name__})"))
        return
    record_id = _str(record.get("id"))
    if record_id:
        label = f"{label} ({record_id})"
    build_item(record_fields, record, source=FORMAT, source_id=record_id, item=label, outcome=outcome)


def parse_arxiv_snapshot(text: str) -> ParseOutcome:
    """Every record of a snapshot (JSON Lines); bad lines are reported with their number.

    A document that is one JSON array is read item by item ("item 3 (0704.0001)").
    """
    outcome = ParseOutcome(format=FORMAT)
    for record, label in json_items(text, outcome):
        _add_record(record, label, outcome)
    return outcome
