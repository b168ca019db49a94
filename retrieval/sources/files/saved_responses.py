"""API responses saved as files -> papers, through the same parsers the network ingests use.

A user who saved what an API answered (``curl ... > works.json``) can ingest that file:

- ``arxiv-atom``: an arXiv API Atom feed (``/api/query``), entries read by ``arxiv._parse_entry``;
- ``openalex``: one ``/works/W...`` object, a works list ``{"meta", "results"}`` (also what an
  author's works query returns) or a bare array of works, read by ``openalex._parse_into``;
- ``crossref``: one work or a works list, inside the ``{"status", "message-type", "message"}``
  envelope or without it (a bare work, an array of works, ``{"items": [...]}``), read by
  ``crossref._parse_into``;
- ``semantic-scholar``: Graph API paper objects, ``{"data": [...]}`` lists and ``/paper/batch``
  arrays (``citingPaper``/``citedPaper`` wrappers are opened), with a mapping of its own;
- ``dblp``: a publication search answer ``{"result": {"hits": {"hit": [{"info": ...}]}}}``.

Provenance names the API (``arxiv``, ``openalex``, ``crossref``, ``semantic-scholar``, ``dblp``),
so a saved response and a fetch of the same work give the same record and merge.

Every JSON format goes through the same steps: load the document (JSON Lines of works or of
pages too, as API snapshots are shipped), refuse an API error response with the API's own
words (``ParseError`` naming the file, never "no title"), take the records out of the envelope,
parse each one; a record that cannot become a paper is skipped with its reason.

``detect_saved_json`` and ``is_arxiv_atom`` recognise these formats from the start of a file
for ``files.detect_format``; see their docstrings for what each rule keys on.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from retrieval.errors import ParseError
from retrieval.records.paper import Paper, clean_text, normalize_doi, normalize_openalex_id, split_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.apis import arxiv, crossref, openalex
from retrieval.sources.files.base import ParseOutcome, build_item, check_field_sizes, json_array, json_object
from retrieval.sources.files.jsonl import load_json, numbered_lines
from retrieval.sources.markup.jats import UnsafeXMLError, parse_xml

_NOTHING = object()  # no document decoded (``null`` is one)

SEMANTIC_SCHOLAR = "semantic-scholar"
DBLP = "dblp"
ARXIV_ATOM = "arxiv-atom"
#: Format names this module reads, in the order ``files.FORMATS`` lists them.
FORMATS: tuple[str, ...] = (ARXIV_ATOM, openalex.SOURCE, crossref.SOURCE, SEMANTIC_SCHOLAR, DBLP)

_dict = json_object
_list = json_array


def _str(value: Any) -> str:
    return clean_text(value) if isinstance(value, str) else ""


# --- detection ------------------------------------------------------------------------------

_KEY = re.compile(r'"(@?[A-Za-z_][\w-]*)"\s*:')
_FIRST_KEY = re.compile(r'^\{\s*"([^"\\]*)"\s*:')
_OPENALEX_ID = re.compile(r'"id"\s*:\s*"https?://openalex\.org/[WASICFPTwasicfpt]\d+"')
_LIST_TITLE = re.compile(r'"(?:container-)?title"\s*:\s*\[')
# Keys only OpenAlex work objects carry (CSL, Crossref and Paper records have none of them).
_OPENALEX_KEYS = frozenset({
    "authorships", "primary_location", "publication_year", "abstract_inverted_index", "host_venue",
    "cited_by_api_url", "counts_by_year", "best_oa_location", "referenced_works", "is_authors_truncated",
    "oa_status", "any_repository_has_fulltext",  # ``select=open_access,...`` answers
    "db_response_time_ms", "groups_count",  # a list's ``meta``: an empty works list has nothing else
})  # fmt: skip
# Keys only Crossref work records carry (CSL-JSON shares DOI, URL, issued, container-title...).
_CROSSREF_KEYS = frozenset({
    "reference-count", "is-referenced-by-count", "references-count", "content-domain",
    "short-container-title", "deposited", "indexed", "member", "prefix",
})  # fmt: skip
_S2_LIST_KEYS = frozenset({"total", "offset", "next", "token", "data"})  # an empty list has only these
_S2_KEYS = frozenset({
    "externalIds", "authorId", "citationCount", "influentialCitationCount", "referenceCount",
    "fieldsOfStudy", "s2FieldsOfStudy", "publicationDate", "publicationTypes", "publicationVenue",
    "isOpenAccess", "openAccessPdf", "corpusId",
})  # fmt: skip
_ATOM_NS = "http://www.w3.org/2005/Atom"
_FEED_ROOT = re.compile(r"^(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<(?:[\w.-]+:)?feed[\s>]", re.DOTALL)


def detect_saved_json(head: str) -> str | None:
    """The saved-response format of a JSON text from its start (``head``), else None.

    Rules, first match wins:

    - an object whose first key is ``error``: an error answer of OpenAlex (it also has
      ``message``) or Semantic Scholar (``error`` alone); ``{"message", "code"}`` is Semantic
      Scholar's rate-limit answer, and an object of only ``data`` with ``total``/``offset``/
      ``next``/``token`` is its (empty) list;
    - a ``message-type`` key: Crossref's envelope (a work, a work list or a failure);
    - a first key ``result`` with ``@``-keys (``@code``, ``@total``: DBLP's rendering of XML
      attributes), or ``result`` with ``hits``, or ``info`` with ``@score``: a DBLP search answer;
    - otherwise scores, each needing two signals: OpenAlex (an ``"id": "https://openalex.org/W..."``
      counts as three, plus keys like ``authorships``, ``primary_location``,
      ``abstract_inverted_index``, ``host_venue``), Crossref without its envelope (keys like
      ``reference-count``, ``is-referenced-by-count``, ``indexed``, ``deposited``, ``member``,
      ``prefix``, plus ``title``/``container-title`` as arrays; a list title alone is not enough,
      some CSL exporters write one), Semantic Scholar (``paperId`` counts as three, plus
      camelCase keys like ``externalIds``, ``authorId``, ``publicationDate``).

    CSL-JSON, JSON Lines of papers and the arXiv snapshot have none of these keys, so they stay
    with the rules in ``files``.
    """
    head = head.lstrip("\ufeff \t\r\n")
    keys = set(_KEY.findall(head))
    first = _FIRST_KEY.match(head)
    first_key = first.group(1) if first else None
    if first_key == "error":
        return openalex.SOURCE if "message" in keys else SEMANTIC_SCHOLAR
    if first_key in {"message", "code"} and keys <= {"message", "code"}:
        return SEMANTIC_SCHOLAR
    if "data" in keys and len(keys) > 1 and keys <= _S2_LIST_KEYS:
        return SEMANTIC_SCHOLAR
    if "message-type" in keys:
        return crossref.SOURCE
    at_keys = any(key.startswith("@") for key in keys)  # DBLP renders XML attributes as "@code"
    if (first_key == "result" and at_keys) or {"result", "hits"} <= keys or {"info", "@score"} <= keys:
        return DBLP
    crossref_only = len(keys & _CROSSREF_KEYS)
    scores = {
        openalex.SOURCE: 3 * bool(_OPENALEX_ID.search(head)) + len(keys & _OPENALEX_KEYS),
        crossref.SOURCE: crossref_only + bool(_LIST_TITLE.search(head)) if crossref_only else 0,
        SEMANTIC_SCHOLAR: 3 * ("paperId" in keys) + len(keys & _S2_KEYS),
    }
    best = max(scores, key=lambda fmt: scores[fmt])
    return best if scores[best] >= 2 else None


def is_arxiv_atom(head: str) -> bool:
    """True when the XML text is an Atom feed (root ``feed`` in the Atom namespace) from arXiv
    (its namespace ``arxiv.org/schemas/atom`` or an ``arxiv.org`` link or id near the start)."""
    head = head.lstrip("\ufeff \t\r\n")
    return bool(_FEED_ROOT.match(head)) and _ATOM_NS in head and "arxiv.org" in head


# --- arXiv Atom -----------------------------------------------------------------------------


def parse_arxiv_atom(text: str, name: str = "<text>") -> ParseOutcome:
    """Every entry of a saved arXiv API feed; an error feed or broken XML raises ``ParseError``."""
    try:
        root = parse_xml(text.lstrip("\ufeff"))
    except UnsafeXMLError as exc:
        raise _file_error(name, ARXIV_ATOM, f"{name} was refused: {exc}.") from None
    except ET.ParseError as exc:
        raise _file_error(
            name, ARXIV_ATOM, f"{name} is not a well-formed Atom feed ({exc}); the download may be cut "
            "short: save the arXiv response again.",
        ) from None
    if root.tag != f"{{{_ATOM_NS}}}feed":
        raise _file_error(name, ARXIV_ATOM, f"{name} is not an Atom feed (its root is <{root.tag}>).")
    message = arxiv._error_message(root)
    if message is not None:
        raise _api_error(name, ARXIV_ATOM, "arXiv", message)
    outcome = ParseOutcome(format=ARXIV_ATOM)
    for position, entry in enumerate(root.iterfind(f"{{{_ATOM_NS}}}entry")):
        if not outcome.budget.take(f"entry {position + 1}"):
            break
        arxiv._parse_entry(entry, position, outcome)
    return outcome


# --- the shared steps of the JSON formats ---------------------------------------------------


@dataclass(frozen=True)
class _Api:
    """How one API's saved JSON is read: its error shape, its envelope, its item parser."""

    format: str
    label: str  # the API as the user knows it: "OpenAlex"
    error_of: Callable[[Any], str | None]  # the API's message when the document is an error answer
    records_of: Callable[[Any, str], list[Any]]  # the records inside the envelope (name: the file)
    parse_item: Callable[[Any, int, ParseOutcome], Paper | None]


def _file_error(name: str, fmt: str, message: str) -> ParseError:
    return ParseError(message, source=fmt, item=name)


def _api_error(name: str, fmt: str, label: str, message: str) -> ParseError:
    return _file_error(
        name, fmt, f"{name} is a saved {label} error response, not records: the API said "
        f"{message.rstrip('.')!r}. Correct the request and save the response again.",
    )


def _described(describe: Callable[[httpx.Response], str | None], document: Any) -> str | None:
    """A network client's error description applied to a saved body (the same words); None when
    the body cannot be encoded again (nested too deeply for ``json.dumps``)."""
    try:
        response = httpx.Response(200, json=document)
    except (RecursionError, ValueError):
        return None
    return describe(response)


def _documents(text: str, name: str, api: _Api, outcome: ParseOutcome) -> tuple[bool, Iterator[tuple[str, Any]]]:
    """(whole, documents): the file's one JSON document (``whole``), or each line's when it is JSON
    Lines (API snapshots ship works that way), decoded one at a time as they are read; a line
    that is not JSON is skipped. Reading lines stops at the file's budget."""
    body = text.lstrip("\ufeff")
    try:
        return True, iter([(name, load_json(body))])
    except ValueError as exc:
        whole_error = exc
    lines = numbered_lines(body)
    first, second = next(lines, None), next(lines, None)
    document: Any = _NOTHING
    if first is not None and second is not None:
        with contextlib.suppress(ValueError):
            document = load_json(first[1])
    if first is None or second is None or document is _NOTHING:  # one line: not JSON Lines either
        where = ""
        if isinstance(whole_error, json.JSONDecodeError):
            where = f" ({whole_error.msg} at line {whole_error.lineno}, column {whole_error.colno})"
        raise _file_error(
            name, api.format, f"{name} is not valid JSON{where}; a saved {api.label} response is one JSON "
            "document: the download may be cut short, save it again.",
        )

    def documents() -> Iterator[tuple[str, Any]]:
        yield f"line {first[0]}", document
        for number, line in itertools.chain([second], lines):
            label = f"line {number}"
            if not outcome.budget.in_time(label):
                return
            try:
                yield label, load_json(line)
            except ValueError as exc:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                if not outcome.budget.take(label):
                    return
                outcome.skipped.append(SkippedItem(label, f"invalid JSON: {reason}"))

    return False, documents()


def _parse_json(text: str, name: str, api: _Api) -> ParseOutcome:
    outcome = ParseOutcome(format=api.format)
    whole, documents = _documents(text, name, api, outcome)
    position = 0
    for where, document in documents:
        message = api.error_of(document)
        if message is not None:
            if whole:
                raise _api_error(name, api.format, api.label, message)
            if not outcome.budget.take(where):
                break
            outcome.skipped.append(SkippedItem(where, f"a {api.label} error response: {message}"))
            continue
        for record in api.records_of(document, name):
            if not outcome.budget.take(f"record {position + 1} ({where})" if not whole else f"record {position + 1}"):
                return outcome
            api.parse_item(record, position, outcome)
            position += 1
    return outcome


def _not_records(name: str, api_label: str, fmt: str, what: str, instead: str) -> ParseError:
    return _file_error(name, fmt, f"{name} is {what}, not {api_label} works; {instead}")


# --- OpenAlex -------------------------------------------------------------------------------

_OPENALEX_ENTITIES = {
    "A": "author profile", "S": "source (journal or repository)", "I": "institution", "C": "concept",
    "F": "funder", "P": "publisher", "T": "topic",
}  # fmt: skip


def _openalex_error(document: Any) -> str | None:
    if not isinstance(document, Mapping) or "error" not in document or "results" in document or "id" in document:
        return None
    return _described(openalex._describe_error, document) or "unspecified error"


def _openalex_entity(obj: Any) -> str | None:
    """What a non-work OpenAlex object is ("author profile A5023888391"), None for a work."""
    raw = obj.get("id") if isinstance(obj, Mapping) else None
    bare = normalize_openalex_id(raw) if isinstance(raw, str) else None
    if bare and bare[0] in _OPENALEX_ENTITIES:
        return f"an OpenAlex {_OPENALEX_ENTITIES[bare[0]]} ({bare})"
    return None


def _openalex_records(document: Any, name: str) -> list[Any]:
    if isinstance(document, list):
        return document
    if isinstance(document, Mapping) and isinstance(document.get("results"), list):
        return document["results"]
    entity = _openalex_entity(document)
    if entity:
        instead = "save its works list (the works_api_url of the profile) instead." if entity.startswith(
            "an OpenAlex author") else "save a /works response instead."
        raise _not_records(name, "OpenAlex", openalex.SOURCE, entity, instead)
    if not isinstance(document, Mapping):
        raise _not_records(name, "OpenAlex", openalex.SOURCE, "not a JSON object or array", "save a /works response.")
    return [document]


def _openalex_item(obj: Any, position: int, outcome: ParseOutcome) -> Paper | None:
    entity = _openalex_entity(obj)
    if entity:  # an author search result would otherwise become a "paper" titled with a name
        outcome.skipped.append(SkippedItem(f"OpenAlex result #{position + 1}", f"{entity}, not a work"))
        return None
    return openalex._parse_into(obj, position, outcome)


_OPENALEX = _Api(openalex.SOURCE, "OpenAlex", _openalex_error, _openalex_records, _openalex_item)


def parse_openalex(text: str, name: str = "<text>") -> ParseOutcome:
    """A saved OpenAlex work, works list or array (or JSON Lines of them) -> papers."""
    return _parse_json(text, name, _OPENALEX)


# --- Crossref -------------------------------------------------------------------------------

_CROSSREF_WORKS = {"work", "work-list"}


def _crossref_error(document: Any) -> str | None:
    if not isinstance(document, Mapping):
        return None
    status, kind = document.get("status"), document.get("message-type")
    failed = (isinstance(status, str) and status != "ok") or (isinstance(kind, str) and kind.endswith("failure"))
    if not failed:
        return None
    return _described(crossref._describe_error, document) or f"status {status!r}"


def _crossref_records(document: Any, name: str) -> list[Any]:
    if isinstance(document, list):
        return document
    if not isinstance(document, Mapping):
        raise _not_records(name, "Crossref", crossref.SOURCE, "not a JSON object or array", "save a /works response.")
    kind = document.get("message-type")
    if isinstance(kind, str) and kind not in _CROSSREF_WORKS:
        raise _not_records(name, "Crossref", crossref.SOURCE, f"a Crossref {kind!r} response",
                           "save a /works response instead.")
    message = crossref._unwrap(document)
    if isinstance(message, Mapping) and isinstance(message.get("items"), list):
        return message["items"]
    if kind == "work-list":
        raise _not_records(name, "Crossref", crossref.SOURCE, "a Crossref work list without 'items'",
                           "the response may be cut short: save it again.")
    return [message]


_CROSSREF = _Api(crossref.SOURCE, "Crossref", _crossref_error, _crossref_records, crossref._parse_into)


def parse_crossref(text: str, name: str = "<text>") -> ParseOutcome:
    """A saved Crossref work or works list, with or without its envelope -> papers."""
    return _parse_json(text, name, _CROSSREF)


# --- Semantic Scholar -----------------------------------------------------------------------

# In the order one is chosen when a paper has several (a NeurIPS paper is also "JournalArticle").
_S2_TYPES = {
    "Conference": "inproceedings", "JournalArticle": "article", "BookSection": "incollection", "Book": "book",
    "Dataset": "dataset", "Review": "review",
}  # fmt: skip


def _s2_error(document: Any) -> str | None:
    if not isinstance(document, Mapping) or "data" in document or "paperId" in document:
        return None
    if "error" in document:
        return str(document["error"]) or "unspecified error"
    if isinstance(document.get("message"), str) and "code" in document:
        return f"{document['message']} (code {document['code']})"
    return None


def _s2_records(document: Any, name: str) -> list[Any]:
    if isinstance(document, list):
        return document
    if isinstance(document, Mapping) and isinstance(document.get("data"), list):
        return document["data"]
    if isinstance(document, Mapping) and "paperId" in document:
        return [document]
    raise _not_records(name, "Semantic Scholar", SEMANTIC_SCHOLAR, "not a Semantic Scholar paper or list",
                       "save a /paper or /paper/search response.")


def _s2_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
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
        "type": next((_S2_TYPES[t] for t in _S2_TYPES if t in kinds), kinds[0] if kinds else None),
        # arXiv papers come with journal "ArXiv" and volume "abs/<id>": no volume of a journal
        "volume": volume if volume and not volume.startswith("abs/") else None,
        "pages": _str(journal.get("pages")) or None,
        "categories": [c for c in categories if c],
        "open_access": is_oa if isinstance(is_oa, bool) else None,
        "citation_count": cited if isinstance(cited, int) and cited >= 0 else None,
    }
    check_field_sizes({**data, "authors": [a["name"] for a in authors]})
    return data


def _s2_item(obj: Any, position: int, outcome: ParseOutcome) -> Paper | None:
    if isinstance(obj, Mapping) and len(obj) == 1 and ("citingPaper" in obj or "citedPaper" in obj):
        obj = next(iter(obj.values()))  # /citations and /references wrap each paper
    label = f"Semantic Scholar item #{position + 1}"
    if obj is None:
        outcome.skipped.append(SkippedItem(label, "null: Semantic Scholar found no paper for this id"))
        return None
    if not isinstance(obj, Mapping):
        outcome.skipped.append(SkippedItem(label, "not a JSON object"))
        return None
    paper_id = _str(obj.get("paperId")) or None
    if paper_id:
        label = f"Semantic Scholar paper {paper_id}"
    return build_item(_s2_fields, obj, source=SEMANTIC_SCHOLAR, source_id=paper_id, item=label, outcome=outcome)


_SEMANTIC_SCHOLAR = _Api(SEMANTIC_SCHOLAR, "Semantic Scholar", _s2_error, _s2_records, _s2_item)


def parse_semantic_scholar(text: str, name: str = "<text>") -> ParseOutcome:
    """Saved Semantic Scholar Graph API papers (one, ``{"data": [...]}`` or an array) -> papers."""
    return _parse_json(text, name, _SEMANTIC_SCHOLAR)


# --- DBLP -----------------------------------------------------------------------------------

_DBLP_TYPES = {
    "Journal Articles": "article", "Conference and Workshop Papers": "inproceedings",
    "Books and Theses": "book", "Parts in Books or Collections": "incollection", "Editorship": "proceedings",
    "Data and Artifacts": "dataset", "Informal and Other Publications": "misc", "Reference Works": "misc",
}  # fmt: skip
_DBLP_HOMONYM = re.compile(r"\s+\d{4}$")  # "Wei Wang 0001": DBLP's number for namesakes


def _dblp_error(document: Any) -> str | None:
    status = _dict(_dict(_dict(document).get("result")).get("status"))
    code = status.get("@code")
    if code is None or str(code) == "200":
        return None
    return f"{code} {_str(status.get('text'))}".strip()


def _dblp_records(document: Any, name: str) -> list[Any]:
    if isinstance(document, list):  # result.hits.hit saved on its own
        return document
    hits = _dict(_dict(_dict(document).get("result")).get("hits"))
    if not hits:
        raise _not_records(name, "DBLP", DBLP, "not a DBLP search answer",
                           "save a /search/publ/api?format=json response.")
    hit = hits.get("hit")
    return [hit] if isinstance(hit, Mapping) else _list(hit)


def _dblp_values(value: Any) -> list[str]:
    """A DBLP field that is one value or a list of them, as strings."""
    values = value if isinstance(value, list) else [value]
    return [_str(v) for v in values if _str(v)]


def _dblp_fields(info: Mapping[str, Any]) -> dict[str, Any]:
    people = _dict(info.get("authors")).get("author")
    people = people if isinstance(people, list) else [people]
    names = [_DBLP_HOMONYM.sub("", _str(_dict(p).get("text")) or _str(p)) for p in people]
    names = [n for n in names if n]
    title = _str(info.get("title"))
    if title.endswith(".") and not title.endswith(".."):
        title = title[:-1]  # DBLP ends every title with a full stop
    links = _dblp_values(info.get("ee"))
    arxiv_id = next((parts[0] for parts in map(split_arxiv_id, links) if parts), None)
    doi = normalize_doi(_str(info.get("doi"))) or next((d for d in map(normalize_doi, links) if d), None)
    venue = next(iter(_dblp_values(info.get("venue"))), None)
    kind = _DBLP_TYPES.get(_str(info.get("type")), _str(info.get("type")) or None)
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


def _dblp_item(hit: Any, position: int, outcome: ParseOutcome) -> Paper | None:
    info = _dict(hit).get("info")
    label = f"DBLP hit #{position + 1}"
    if not isinstance(info, Mapping):
        outcome.skipped.append(SkippedItem(label, "no 'info' object (not a DBLP publication hit)"))
        return None
    key = _str(info.get("key")) or None
    if key:
        label = f"DBLP record {key}"
    return build_item(_dblp_fields, info, source=DBLP, source_id=key, item=label, outcome=outcome)


_DBLP = _Api(DBLP, "DBLP", _dblp_error, _dblp_records, _dblp_item)


def parse_dblp(text: str, name: str = "<text>") -> ParseOutcome:
    """A saved DBLP publication search answer (JSON) -> papers."""
    return _parse_json(text, name, _DBLP)


#: Format name -> parser ``(text, name) -> ParseOutcome``, for ``files``.
PARSERS: dict[str, Callable[[str, str], ParseOutcome]] = {
    ARXIV_ATOM: parse_arxiv_atom,
    openalex.SOURCE: parse_openalex,
    crossref.SOURCE: parse_crossref,
    SEMANTIC_SCHOLAR: parse_semantic_scholar,
    DBLP: parse_dblp,
}
