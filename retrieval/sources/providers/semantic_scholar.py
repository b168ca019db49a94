"""Semantic Scholar: Graph API paper objects -> papers (pure), for saved responses.

paperbot has no Semantic Scholar client; a user who saved what the Graph API answered
(``/paper/{id}``, ``/paper/search``, ``/paper/batch``, ``/author/{id}/papers``, ``/citations``)
ingests the file, read through ``sources.files.saved_responses`` with the functions here:

- ``error_of``: an error answer (``{"error": ...}``, or the rate-limit ``{"message", "code"}``);
- ``works_of``: the papers of a document (one paper, ``{"data": [...]}``, an array);
- ``read_work``: one paper object (``citingPaper``/``citedPaper`` wrappers are opened; ``null``,
  what ``/paper/batch`` answers for an unknown id, is skipped with that reason).

Provenance names the API (``semantic-scholar``) with the ``paperId``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from retrieval.errors import ParseError
from retrieval.records.paper import clean_text, normalize_doi
from retrieval.results import SkippedItem
from retrieval.sources.files.base import ParseOutcome, build_item, check_field_sizes, json_array, json_object

#: The provenance source of Semantic Scholar records, and the file format of a saved response.
SOURCE = "semantic-scholar"
FORMAT = SOURCE
#: The API as a user knows it, in messages.
LABEL = "Semantic Scholar"

_dict = json_object
_list = json_array


def _str(value: Any) -> str:
    return clean_text(value) if isinstance(value, str) else ""


# In the order one is chosen when a paper has several (a NeurIPS paper is also "JournalArticle").
_TYPES = {
    "Conference": "inproceedings", "JournalArticle": "article", "BookSection": "incollection", "Book": "book",
    "Dataset": "dataset", "Review": "review",
}  # fmt: skip


def error_of(document: Any) -> str | None:
    """The API's message when a saved document is an error answer (``{"error": ...}`` or the
    rate-limit ``{"message", "code"}``), else None."""
    if not isinstance(document, Mapping) or "data" in document or "paperId" in document:
        return None
    if "error" in document:
        return str(document["error"]) or "unspecified error"
    if isinstance(document.get("message"), str) and "code" in document:
        return f"{document['message']} (code {document['code']})"
    return None


def works_of(document: Any, name: str) -> list[Any]:
    """The paper objects of a saved document (``name``: the file, for messages): an array,
    ``{"data": [...]}`` or one paper; ``ParseError`` for anything else."""
    if isinstance(document, list):
        return document
    if isinstance(document, Mapping) and isinstance(document.get("data"), list):
        return document["data"]
    if isinstance(document, Mapping) and "paperId" in document:
        return [document]
    raise ParseError(f"{name} is not a Semantic Scholar paper or list, not Semantic Scholar works; save a /paper "
                     "or /paper/search response.", source=FORMAT, item=name)


def _fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    ids = _dict(obj.get("externalIds"))
    journal = _dict(obj.get("journal"))
    journal_name = _str(journal.get("name"))
    volume = _str(journal.get("volume"))
    authors = [{"name": _str(_dict(a).get("name"))} for a in _list(obj.get("authors")) if _str(_dict(a).get("name"))]
    categories = [c for c in _list(obj.get("fieldsOfStudy")) if isinstance(c, str)]
    categories += [_str(_dict(c).get("category")) for c in _list(obj.get("s2FieldsOfStudy"))]
    kinds = [t for t in _list(obj.get("publicationTypes")) if isinstance(t, str)]
    year, cited, is_oa = obj.get("year"), obj.get("citationCount"), obj.get("isOpenAccess")
    data = {
        "title": _str(obj.get("title")),
        "abstract": _str(obj.get("abstract")) or None,
        "authors": authors,
        "published": _str(obj.get("publicationDate")) or (str(year) if isinstance(year, int) else None),
        "venue": _str(obj.get("venue")) or journal_name or _str(_dict(obj.get("publicationVenue")).get("name")),
        "doi": normalize_doi(ids.get("DOI") if isinstance(ids.get("DOI"), str) else None),
        "arxiv_id": ids.get("ArXiv") if isinstance(ids.get("ArXiv"), str) else None,
        "url": obj.get("url") if isinstance(obj.get("url"), str) else None,
        "type": next((_TYPES[t] for t in _TYPES if t in kinds), kinds[0] if kinds else None),
        # arXiv papers come with journal "ArXiv" and volume "abs/<id>": no volume of a journal
        "volume": volume if volume and not volume.startswith("abs/") else None,
        "pages": _str(journal.get("pages")) or None,
        "categories": [c for c in categories if c],
        "open_access": is_oa if isinstance(is_oa, bool) else None,
        "citation_count": cited if isinstance(cited, int) and cited >= 0 else None,
    }
    check_field_sizes({**data, "authors": [a["name"] for a in authors]})
    return data


def read_work(obj: Any, position: int = 0) -> ParseOutcome:
    """One Graph API paper object (the ``position``-th of its list, from 0) -> an outcome holding
    its paper, or the reason it was skipped (``null``, not an object, no title, absurd sizes) and
    the optional values dropped (``warnings``). Never raises for a bad item."""
    outcome = ParseOutcome(format=FORMAT)
    if isinstance(obj, Mapping) and len(obj) == 1 and ("citingPaper" in obj or "citedPaper" in obj):
        obj = next(iter(obj.values()))  # /citations and /references wrap each paper
    label = f"Semantic Scholar item #{position + 1}"
    if obj is None:
        outcome.skipped.append(SkippedItem(label, "null: Semantic Scholar found no paper for this id"))
        return outcome
    if not isinstance(obj, Mapping):
        outcome.skipped.append(SkippedItem(label, "not a JSON object"))
        return outcome
    paper_id = _str(obj.get("paperId")) or None
    if paper_id:
        label = f"Semantic Scholar paper {paper_id}"
    build_item(_fields, obj, source=SOURCE, source_id=paper_id, item=label, outcome=outcome)
    return outcome
