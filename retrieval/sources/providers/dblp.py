"""DBLP: publication search hits -> papers (pure), for saved responses.

paperbot has no DBLP client; a user who saved a publication search answer
(``/search/publ/api?format=json``: ``{"result": {"hits": {"hit": [{"info": ...}]}}}``) ingests
the file, read through ``sources.files.saved_responses`` with the functions here: ``error_of``
(a status other than 200), ``works_of`` (the hits; a ``hit`` array saved on its own too) and
``read_work`` (one hit). DBLP's namesake numbers ("Wei Wang 0001") and the full stop ending
every title are removed; an editorship lists editors, not authors.

Provenance names the API (``dblp``) with the record key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from retrieval.errors import ParseError
from retrieval.records.paper import clean_text, normalize_doi, split_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.files.base import ParseOutcome, build_item, check_field_sizes, json_array, json_object

#: The provenance source of DBLP records, and the file format of a saved response.
SOURCE = "dblp"
FORMAT = SOURCE
#: The API as a user knows it, in messages.
LABEL = "DBLP"

_dict = json_object
_list = json_array


def _str(value: Any) -> str:
    return clean_text(value) if isinstance(value, str) else ""


_TYPES = {
    "Journal Articles": "article", "Conference and Workshop Papers": "inproceedings",
    "Books and Theses": "book", "Parts in Books or Collections": "incollection", "Editorship": "proceedings",
    "Data and Artifacts": "dataset", "Informal and Other Publications": "misc", "Reference Works": "misc",
}  # fmt: skip
_HOMONYM = re.compile(r"\s+\d{4}$")  # "Wei Wang 0001": DBLP's number for namesakes


def error_of(document: Any) -> str | None:
    """The API's answer when a saved document reports a failure (``result.status.@code`` other
    than 200: "500 Internal Error"), else None."""
    status = _dict(_dict(_dict(document).get("result")).get("status"))
    code = status.get("@code")
    if code is None or str(code) == "200":
        return None
    return f"{code} {_str(status.get('text'))}".strip()


def works_of(document: Any, name: str) -> list[Any]:
    """The hits of a saved search answer (``name``: the file, for messages), or the array itself
    when ``result.hits.hit`` was saved on its own; ``ParseError`` for anything else."""
    if isinstance(document, list):  # result.hits.hit saved on its own
        return document
    hits = _dict(_dict(_dict(document).get("result")).get("hits"))
    if not hits:
        raise ParseError(f"{name} is not a DBLP search answer, not DBLP works; save a /search/publ/api?format=json "
                         "response.", source=FORMAT, item=name)
    hit = hits.get("hit")
    return [hit] if isinstance(hit, Mapping) else _list(hit)


def _values(value: Any) -> list[str]:
    """A DBLP field that is one value or a list of them, as strings."""
    values = value if isinstance(value, list) else [value]
    return [_str(v) for v in values if _str(v)]


def _fields(info: Mapping[str, Any]) -> dict[str, Any]:
    people = _dict(info.get("authors")).get("author")
    people = people if isinstance(people, list) else [people]
    names = [_HOMONYM.sub("", _str(_dict(p).get("text")) or _str(p)) for p in people]
    names = [n for n in names if n]
    title = _str(info.get("title"))
    if title.endswith(".") and not title.endswith(".."):
        title = title[:-1]  # DBLP ends every title with a full stop
    links = _values(info.get("ee"))
    arxiv_id = next((parts[0] for parts in map(split_arxiv_id, links) if parts), None)
    doi = normalize_doi(_str(info.get("doi"))) or next((d for d in map(normalize_doi, links) if d), None)
    venue = next(iter(_values(info.get("venue"))), None)
    kind = _TYPES.get(_str(info.get("type")), _str(info.get("type")) or None)
    if kind == "misc" and (venue == "CoRR" or arxiv_id):
        kind = "preprint"
    editorship = kind == "proceedings"
    volume = _str(info.get("volume"))
    data = {
        "title": title,
        "authors": [] if editorship else [{"name": n} for n in names],
        "editors": names if editorship else [],
        "published": _str(str(info.get("year") or "")) or None,
        "venue": venue,
        "doi": doi,
        "arxiv_id": arxiv_id,
        "url": links[0] if links else _str(info.get("url")) or None,
        "type": kind,
        "volume": volume if volume and not volume.startswith("abs/") else None,
        "issue": _str(info.get("number")) or None,
        "pages": _str(info.get("pages")) or None,
        "open_access": True if info.get("access") == "open" else None,
    }
    check_field_sizes({**data, "authors": names})
    return data


def read_work(hit: Any, position: int = 0) -> ParseOutcome:
    """One search hit (``{"info": {...}}``, the ``position``-th of its list, from 0) -> an outcome
    holding its paper, or the reason it was skipped (no ``info``, no title, absurd sizes) and the
    optional values dropped (``warnings``). Never raises for a bad item."""
    outcome = ParseOutcome(format=FORMAT)
    info = _dict(hit).get("info")
    label = f"DBLP hit #{position + 1}"
    if not isinstance(info, Mapping):
        outcome.skipped.append(SkippedItem(label, "no 'info' object (not a DBLP publication hit)"))
        return outcome
    key = _str(info.get("key")) or None
    if key:
        label = f"DBLP record {key}"
    build_item(_fields, info, source=SOURCE, source_id=key, item=label, outcome=outcome)
    return outcome
