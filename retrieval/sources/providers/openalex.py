"""OpenAlex: work and author objects -> papers and profiles (pure), for the API client and saved files.

``read_work`` reads one work object; ``parse_works_page`` one ``/works`` page; ``parse_author``
one author profile. For a saved response, ``error_of`` recognises an error answer and
``works_of`` takes the work objects out of a document (one work, a works list, an array). The
API client (``sources.apis.openalex``) and the saved-file reader
(``sources.files.saved_responses``) both read through them.

Schema drift handled by the parsers:

- works: the abstract exists only as ``abstract_inverted_index`` (word -> positions), often
  null; the venue is ``primary_location.source`` (newer) or ``host_venue`` (older); topics
  (newer) or concepts (older) become categories; arXiv ids come from ``ids.arxiv``, a
  ``10.48550/arXiv.*`` DOI or an arxiv.org landing page among the locations; ``select=``
  responses are partial (no title -> the item is skipped, never guessed);
- authors: ``affiliations`` with years and ``last_known_institutions`` (newer) or only
  ``last_known_institution`` (older); ``topics`` or ``x_concepts``; a deleted profile comes
  back as "Deleted Author" with no works; a merged id redirects to the surviving profile;
- ``biblio`` gives volume, issue and pages (``first_page``-``last_page``, one page when they
  agree); ``language`` and ``primary_location.source.issn_l`` go to ``extra_fields``.

List responses cut authorships at 100 (``is_authors_truncated``): such papers carry only the
first 100 authors and ``authors_truncated``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import BaseModel, Field

from retrieval.errors import ParseError, SourceError
from retrieval.records.paper import (
    Paper,
    clean_text,
    normalize_doi,
    normalize_openalex_id,
    normalize_orcid,
    split_arxiv_id,
)
from retrieval.results import SkippedItem
from retrieval.sources.files.base import (
    ItemRejected,
    ParseOutcome,
    build_item,
    check_field_sizes,
    json_array,
    json_object,
)

#: The provenance source of OpenAlex records, and the file format of a saved OpenAlex response.
SOURCE = "openalex"
FORMAT = SOURCE
#: The API as a user knows it, in messages.
LABEL = "OpenAlex"
MAX_TITLE_CHARS = 2_000
MAX_ABSTRACT_CHARS = 100_000
#: An inverted index with more positions than this is refused before it is rebuilt.
MAX_ABSTRACT_WORDS = 30_000
#: Concept scores below this are too weak to describe a work (older schema only).
MIN_CONCEPT_SCORE = 0.3
_DELETED_NAME = "Deleted Author"


# --- models -------------------------------------------------------------------------------


class Institution(BaseModel):
    """An institution as OpenAlex names it."""

    id: str | None = None
    display_name: str
    ror: str | None = None
    country_code: str | None = None
    type: str | None = None


class Affiliation(BaseModel):
    """An institution and the years the author published with it (newest first)."""

    institution: Institution
    years: list[int] = Field(default_factory=list)


class OpenAlexAuthor(BaseModel):
    """An OpenAlex author profile: enough to choose between namesakes and to describe them."""

    id: str  # bare "A5023888391"
    display_name: str
    orcid: str | None = None
    alternative_names: list[str] = Field(default_factory=list)
    works_count: int = 0
    cited_by_count: int = 0
    h_index: int | None = None
    last_known_institutions: list[Institution] = Field(default_factory=list)
    affiliations: list[Affiliation] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    deleted: bool = False
    #: The id that was asked for when OpenAlex answered with this (merged) profile instead.
    redirected_from: str | None = None

    @property
    def current_institutions(self) -> list[str]:
        return [inst.display_name for inst in self.last_known_institutions]


@dataclass
class WorksPage:
    """One page of ``/works``: papers, the cursor to the next page and what was skipped."""

    papers: list[Paper]
    count: int | None  # total matches reported by ``meta.count``
    next_cursor: str | None
    results: int = 0  # items on the page, kept or skipped
    skipped: list[SkippedItem] = field(default_factory=list)
    warnings: list[SkippedItem] = field(default_factory=list)


# --- parsing (pure) -----------------------------------------------------------------------


_dict = json_object
_list = json_array


def _str(value: Any) -> str:
    return clean_text(value) if isinstance(value, str) else ""


def rebuild_abstract(inverted: Mapping[str, Any] | None) -> str | None:
    """Text from an ``abstract_inverted_index``; None when absent or empty.

    Raises ``ItemRejected`` for an absurdly large or malformed index.
    """
    if not inverted:
        return None
    if not isinstance(inverted, Mapping):
        raise ItemRejected("abstract_inverted_index is not an object")
    placed: list[tuple[int, str]] = []
    for word, positions in inverted.items():
        if not isinstance(positions, list):
            raise ItemRejected("abstract_inverted_index has a non-list position entry")
        for position in positions:
            if not isinstance(position, int) or position < 0:
                raise ItemRejected("abstract_inverted_index has an invalid position")
            placed.append((position, word))
        if len(placed) > MAX_ABSTRACT_WORDS:
            raise ItemRejected(f"abstract has more than {MAX_ABSTRACT_WORDS} words")
    placed.sort()
    text = " ".join(word for _, word in placed)
    if len(text) > MAX_ABSTRACT_CHARS:
        raise ItemRejected(f"abstract is longer than {MAX_ABSTRACT_CHARS} characters")
    return text or None


def _arxiv_id(obj: Mapping[str, Any], doi: str | None) -> tuple[str, str | None] | None:
    ids = _dict(obj.get("ids"))
    candidates: list[Any] = [ids.get("arxiv")]
    if doi and doi.startswith("10.48550/arxiv."):
        candidates.append(doi.removeprefix("10.48550/arxiv."))
    for location in [obj.get("primary_location"), *_list(obj.get("locations"))]:
        location = _dict(location)
        candidates += [location.get("landing_page_url"), location.get("pdf_url")]
    for candidate in candidates:
        if isinstance(candidate, str):
            parts = split_arxiv_id(candidate.replace("://www.", "://"))
            if parts:
                return parts
    return None


def _author(authorship: Mapping[str, Any]) -> dict[str, Any] | None:
    person = _dict(authorship.get("author"))
    name = _str(person.get("display_name")) or _str(authorship.get("raw_author_name"))
    if not name:
        return None
    institutions = [_str(_dict(i).get("display_name")) for i in _list(authorship.get("institutions"))]
    affiliations = [i for i in institutions if i] or [
        _str(raw) for raw in _list(authorship.get("raw_affiliation_strings")) if _str(raw)
    ]
    return {
        "name": name,
        "orcid": person.get("orcid") if isinstance(person.get("orcid"), str) else None,
        "openalex_id": person.get("id") if isinstance(person.get("id"), str) else None,
        "affiliations": affiliations,
    }


def _categories(obj: Mapping[str, Any]) -> list[str]:
    topics = [_str(_dict(t).get("display_name")) for t in _list(obj.get("topics"))]
    if any(topics):
        return [t for t in topics if t]
    concepts = [_dict(c) for c in _list(obj.get("concepts"))]
    strong = [c for c in concepts if isinstance(c.get("score"), (int, float)) and c["score"] >= MIN_CONCEPT_SCORE]
    return [name for name in (_str(c.get("display_name")) for c in strong) if name]


def _venue_and_publisher(obj: Mapping[str, Any]) -> tuple[str | None, str | None]:
    source = _dict(_dict(obj.get("primary_location")).get("source"))
    if source:
        return _str(source.get("display_name")) or None, _str(source.get("host_organization_name")) or None
    host = _dict(obj.get("host_venue"))
    return _str(host.get("display_name")) or None, _str(host.get("publisher")) or None


def _pages(biblio: Mapping[str, Any]) -> str | None:
    """``first_page``-``last_page`` ("12–15"); the one page when they agree or only the first is
    known; None when the first page is unknown (a last page alone says nothing)."""
    first, last = (_str(str(v) if isinstance(v, int) and not isinstance(v, bool) else v)
                   for v in (biblio.get("first_page"), biblio.get("last_page")))
    if not first:
        return None
    return f"{first}\u2013{last}" if last and last != first else first


def _extra_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    """``language`` and the source's ISSN-L (as ``issn``), under their BibTeX field names."""
    source = _dict(_dict(obj.get("primary_location")).get("source"))
    extra = {"language": _str(obj.get("language")), "issn": _str(source.get("issn_l"))}
    return {name: value for name, value in extra.items() if value}


def _work_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    title = _str(obj.get("title")) or _str(obj.get("display_name"))
    if len(title) > MAX_TITLE_CHARS:
        raise ItemRejected(f"title is longer than {MAX_TITLE_CHARS} characters")
    abstract = rebuild_abstract(obj.get("abstract_inverted_index"))
    authors = [a for a in (_author(_dict(x)) for x in _list(obj.get("authorships"))) if a]
    check_field_sizes({"authors": [a["name"] for a in authors]})
    doi = normalize_doi(obj.get("doi") if isinstance(obj.get("doi"), str) else None) or normalize_doi(
        _dict(obj.get("ids")).get("doi") if isinstance(_dict(obj.get("ids")).get("doi"), str) else None
    )
    arxiv = _arxiv_id(obj, doi)
    venue, publisher = _venue_and_publisher(obj)
    open_access = _dict(obj.get("open_access")).get("is_oa", obj.get("is_oa"))
    cited = obj.get("cited_by_count")
    published = obj.get("publication_date") or obj.get("publication_year")
    return {
        "title": title,
        "abstract": abstract,
        "authors": authors,
        "published": str(published) if isinstance(published, (str, int)) else None,
        "venue": venue,
        "publisher": publisher,
        "doi": doi,
        "arxiv_id": arxiv[0] if arxiv else None,
        "arxiv_version": arxiv[1] if arxiv else None,
        "openalex_id": obj.get("id") if isinstance(obj.get("id"), str) else None,
        "url": _dict(obj.get("primary_location")).get("landing_page_url")
        or _dict(obj.get("host_venue")).get("url"),
        "type": _str(obj.get("type")) or None,
        "pages": _pages(_dict(obj.get("biblio"))),
        "volume": _str(_dict(obj.get("biblio")).get("volume")) or None,
        "issue": _str(_dict(obj.get("biblio")).get("issue")) or None,
        "extra_fields": _extra_fields(obj),
        "categories": _categories(obj),
        "open_access": open_access if isinstance(open_access, bool) else None,
        "citation_count": cited if isinstance(cited, int) and cited >= 0 else None,
        "authors_truncated": obj.get("is_authors_truncated") is True,
    }


_ENTITIES = {
    "A": "author profile", "S": "source (journal or repository)", "I": "institution", "C": "concept",
    "F": "funder", "P": "publisher", "T": "topic",
}  # fmt: skip


def entity_of(obj: Any) -> str | None:
    """What a non-work OpenAlex object is, by its id ("an OpenAlex author profile (A5023888391)");
    None for a work or anything without an OpenAlex id."""
    raw = obj.get("id") if isinstance(obj, Mapping) else None
    bare = normalize_openalex_id(raw) if isinstance(raw, str) else None
    if bare and bare[0] in _ENTITIES:
        return f"an OpenAlex {_ENTITIES[bare[0]]} ({bare})"
    return None


def read_work(obj: Any, position: int = 0) -> ParseOutcome:
    """One OpenAlex work object (the ``position``-th of its list, from 0) -> an outcome holding its
    paper, or the reason it was skipped (not an object, another kind of entity, no title, absurd
    sizes); ``warnings`` hold dropped values and a cut author list. Never raises for a bad item."""
    outcome = ParseOutcome(format=FORMAT)
    entity = entity_of(obj)
    if entity:  # an author search result would otherwise become a "paper" titled with a name
        outcome.skipped.append(SkippedItem(f"OpenAlex result #{position + 1}", f"{entity}, not a work"))
        return outcome
    if not isinstance(obj, Mapping):
        outcome.skipped.append(SkippedItem(f"OpenAlex result #{position + 1}", "not a JSON object"))
        return outcome
    work_id = normalize_openalex_id(obj.get("id") if isinstance(obj.get("id"), str) else None)
    item = f"OpenAlex work {work_id}" if work_id else f"OpenAlex result #{position + 1}"
    paper = build_item(_work_fields, obj, source=SOURCE, source_id=work_id, item=item, outcome=outcome)
    if paper is not None and obj.get("is_authors_truncated") is True:
        outcome.warnings.append(SkippedItem(
            item, f"OpenAlex listed only the first {len(paper.authors)} authors; fetch the work by DOI for all of them"
        ))
    return outcome


def parse_work(obj: dict[str, Any]) -> Paper:
    """One OpenAlex work object -> Paper; raises ``ParseError`` naming the item when unusable."""
    return read_work(obj).only_paper(SOURCE)


def parse_works_page(payload: Any) -> WorksPage:
    """A ``/works`` list response -> papers, skipped items and the next cursor."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("results"), list):
        raise SourceError(SOURCE, "returned a list response without 'results'; the API may have changed.")
    meta = _dict(payload.get("meta"))
    outcome = ParseOutcome.of_items(FORMAT, payload["results"], read_work)
    count = meta.get("count")
    cursor = meta.get("next_cursor")
    return WorksPage(
        papers=outcome.papers,
        count=count if isinstance(count, int) else None,
        next_cursor=cursor if isinstance(cursor, str) and cursor else None,
        results=len(payload["results"]),
        skipped=outcome.skipped,
        warnings=outcome.warnings,
    )


def _institution(obj: Any) -> Institution | None:
    obj = _dict(obj)
    name = _str(obj.get("display_name"))
    if not name:
        return None
    return Institution(
        id=normalize_openalex_id(obj.get("id")) if isinstance(obj.get("id"), str) else None,
        display_name=name,
        ror=obj.get("ror") if isinstance(obj.get("ror"), str) else None,
        country_code=obj.get("country_code") if isinstance(obj.get("country_code"), str) else None,
        type=obj.get("type") if isinstance(obj.get("type"), str) else None,
    )


def parse_author(obj: dict[str, Any]) -> OpenAlexAuthor:
    """One OpenAlex author object (newer or older schema) -> OpenAlexAuthor.

    Raises ``ParseError`` when the object has no usable id or name. A deleted profile parses
    (``deleted=True``); callers decide what to do with it.
    """
    if not isinstance(obj, Mapping):
        raise ParseError("OpenAlex author: not a JSON object.", source=SOURCE, item="author")
    author_id = normalize_openalex_id(obj.get("id")) if isinstance(obj.get("id"), str) else None
    name = _str(obj.get("display_name"))
    if not author_id or not author_id.startswith("A"):
        item = f"author {obj.get('id')!r}"
        raise ParseError(f"OpenAlex {item}: not an OpenAlex author id.", source=SOURCE, item=item)
    if not name:
        raise ParseError(f"OpenAlex author {author_id}: no name.", source=SOURCE, item=f"author {author_id}")
    last_known = [i for i in map(_institution, _list(obj.get("last_known_institutions"))) if i]
    if not last_known:
        old = _institution(obj.get("last_known_institution"))
        last_known = [old] if old else []
    affiliations: list[Affiliation] = []
    for entry in _list(obj.get("affiliations")):
        institution = _institution(_dict(entry).get("institution"))
        if institution:
            years = sorted({y for y in _list(_dict(entry).get("years")) if isinstance(y, int)}, reverse=True)
            affiliations.append(Affiliation(institution=institution, years=years))
    topics = [_str(_dict(t).get("display_name")) for t in _list(obj.get("topics"))]
    if not any(topics):
        topics = [_str(_dict(c).get("display_name")) for c in _list(obj.get("x_concepts"))]
    works = obj.get("works_count")
    cited = obj.get("cited_by_count")
    h_index = _dict(obj.get("summary_stats")).get("h_index")
    alternatives = [_str(n) for n in _list(obj.get("display_name_alternatives"))]
    return OpenAlexAuthor(
        id=author_id,
        display_name=name,
        orcid=normalize_orcid(obj.get("orcid")) if isinstance(obj.get("orcid"), str) else None,
        alternative_names=[n for n in dict.fromkeys(alternatives) if n and n != name],
        works_count=works if isinstance(works, int) else 0,
        cited_by_count=cited if isinstance(cited, int) else 0,
        h_index=h_index if isinstance(h_index, int) else None,
        last_known_institutions=last_known,
        affiliations=affiliations,
        topics=[t for t in topics if t],
        deleted=name == _DELETED_NAME and not works,
    )


# --- error answers and saved responses -----------------------------------------------------


def describe_error_body(body: Any) -> str | None:
    """The message of an OpenAlex error answer, decoded (``{"error": ..., "message": ...}``)."""
    if isinstance(body, dict):
        parts = [str(body[key]) for key in ("error", "message") if body.get(key)]
        return " - ".join(parts) or None
    return None


def describe_error(response: httpx.Response) -> str | None:
    """The message of an OpenAlex error response (for ``PoliteClient``): its JSON's ``error`` and
    ``message``, or the start of a body that is not JSON."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or None
    return describe_error_body(body)


def error_of(document: Any) -> str | None:
    """The API's message when a saved document is an error answer (an object with ``error`` and
    no ``results`` or ``id``), else None."""
    if not isinstance(document, Mapping) or "error" not in document or "results" in document or "id" in document:
        return None
    try:
        described = describe_error_body(document)
    except RecursionError:  # a value nested too deeply to print
        described = None
    return described or "unspecified error"


def works_of(document: Any, name: str) -> list[Any]:
    """The work objects of a saved document (``name``: the file, for messages): a works list's
    ``results``, a bare array, or one work. ``ParseError`` when the document is another kind of
    OpenAlex entity (an author profile...) or not an object or array."""
    if isinstance(document, list):
        return document
    if isinstance(document, Mapping) and isinstance(document.get("results"), list):
        return document["results"]
    entity = entity_of(document)
    if entity:
        instead = "save its works list (the works_api_url of the profile) instead." if entity.startswith(
            "an OpenAlex author") else "save a /works response instead."
        raise ParseError(f"{name} is {entity}, not OpenAlex works; {instead}", source=FORMAT, item=name)
    if not isinstance(document, Mapping):
        raise ParseError(f"{name} is not a JSON object or array, not OpenAlex works; save a /works response.",
                         source=FORMAT, item=name)
    return [document]
