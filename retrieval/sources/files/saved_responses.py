"""API responses saved as files -> papers, through the same parsers the network ingests use.

A user who saved what an API answered (``curl ... > works.json``) can ingest that file:

- ``arxiv-atom``: an arXiv API Atom feed (``/api/query``);
- ``openalex``: one ``/works/W...`` object, a works list ``{"meta", "results"}`` (also what an
  author's works query returns) or a bare array of works;
- ``crossref``: one work or a works list, inside the ``{"status", "message-type", "message"}``
  envelope or without it (a bare work, an array of works, ``{"items": [...]}``);
- ``semantic-scholar``: Graph API paper objects, ``{"data": [...]}`` lists and ``/paper/batch``
  arrays (``citingPaper``/``citedPaper`` wrappers are opened);
- ``dblp``: a publication search answer ``{"result": {"hits": {"hit": [{"info": ...}]}}}``.

What each API's documents look like, and how one of its items becomes a paper, is the
provider's module (``sources.providers.<provider>``: ``error_of``, ``works_of``, ``read_work``),
the same code the API clients read their answers with.

Provenance names the API (``arxiv``, ``openalex``, ``crossref``, ``semantic-scholar``, ``dblp``),
so a saved response and a fetch of the same work give the same record and merge.

Every JSON format goes through the same steps: load the document (JSON Lines of works or of
pages too, as API snapshots are shipped), refuse an API error response with the API's own
words (``ParseError`` naming the file, never "no title"), take the records out of the envelope,
parse each one; a record that cannot become a paper is skipped with its reason.

``sniff`` recognises these formats from the start of a file (``sniff.saved_api_format``,
``sniff.arxiv_atom``); ``formats.READERS`` names the parser of each.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from retrieval.errors import ParseError
from retrieval.results import SkippedItem
from retrieval.sources.files.base import ParseOutcome
from retrieval.sources.files.jsonl import load_json, numbered_lines
from retrieval.sources.markup.jats import UnsafeXMLError, parse_xml
from retrieval.sources.providers import arxiv, crossref, dblp, openalex, semantic_scholar

_NOTHING = object()  # no document decoded (``null`` is one)


# --- arXiv Atom -----------------------------------------------------------------------------


def parse_arxiv_atom(text: str, name: str = "<text>") -> ParseOutcome:
    """Every entry of a saved arXiv API feed; an error feed or broken XML raises ``ParseError``."""
    try:
        root = parse_xml(text.lstrip("\ufeff"))
    except UnsafeXMLError as exc:
        raise _file_error(name, arxiv.FORMAT, f"{name} was refused: {exc}.") from None
    except ET.ParseError as exc:
        raise _file_error(
            name, arxiv.FORMAT, f"{name} is not a well-formed Atom feed ({exc}); the download may be cut "
            "short: save the arXiv response again.",
        ) from None
    if root.tag != f"{{{arxiv.ATOM_NAMESPACE}}}feed":
        raise _file_error(name, arxiv.FORMAT, f"{name} is not an Atom feed (its root is <{root.tag}>).")
    message = arxiv.feed_error(root)
    if message is not None:
        raise _api_error(name, arxiv.FORMAT, "arXiv", message)
    outcome = ParseOutcome(format=arxiv.FORMAT)
    for position, entry in enumerate(root.iterfind(f"{{{arxiv.ATOM_NAMESPACE}}}entry")):
        if not outcome.budget.take(f"entry {position + 1}"):
            break
        outcome.add(arxiv.read_entry(entry, position))
    return outcome


# --- the shared steps of the JSON formats ---------------------------------------------------


@dataclass(frozen=True)
class _Api:
    """How one API's saved JSON is read: its provider's error shape, envelope and item parser."""

    format: str
    label: str  # the API as the user knows it: "OpenAlex"
    error_of: Callable[[Any], str | None]  # the API's message when the document is an error answer
    works_of: Callable[[Any, str], list[Any]]  # the items inside the envelope (name: the file)
    read_work: Callable[[Any, int], ParseOutcome]


def _file_error(name: str, fmt: str, message: str) -> ParseError:
    return ParseError(message, source=fmt, item=name)


def _api_error(name: str, fmt: str, label: str, message: str) -> ParseError:
    return _file_error(
        name, fmt, f"{name} is a saved {label} error response, not records: the API said "
        f"{message.rstrip('.')!r}. Correct the request and save the response again.",
    )


def _error_of(api: _Api, document: Any) -> str | None:
    """``api.error_of(document)``; None (not an error answer) when its values nest too deeply to
    read (OpenAlex and Crossref describe such an error answer without its values themselves)."""
    try:
        return api.error_of(document)
    except RecursionError:
        return None


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
        message = _error_of(api, document)
        if message is not None:
            if whole:
                raise _api_error(name, api.format, api.label, message)
            if not outcome.budget.take(where):
                break
            outcome.skipped.append(SkippedItem(where, f"a {api.label} error response: {message}"))
            continue
        for record in api.works_of(document, name):
            if not outcome.budget.take(f"record {position + 1} ({where})" if not whole else f"record {position + 1}"):
                return outcome
            outcome.add(api.read_work(record, position))
            position += 1
    return outcome


_OPENALEX = _Api(openalex.FORMAT, openalex.LABEL, openalex.error_of, openalex.works_of, openalex.read_work)
_CROSSREF = _Api(crossref.FORMAT, crossref.LABEL, crossref.error_of, crossref.works_of, crossref.read_work)
_SEMANTIC_SCHOLAR = _Api(semantic_scholar.FORMAT, semantic_scholar.LABEL, semantic_scholar.error_of,
                         semantic_scholar.works_of, semantic_scholar.read_work)
_DBLP = _Api(dblp.FORMAT, dblp.LABEL, dblp.error_of, dblp.works_of, dblp.read_work)


def parse_openalex(text: str, name: str = "<text>") -> ParseOutcome:
    """A saved OpenAlex work, works list or array (or JSON Lines of them) -> papers."""
    return _parse_json(text, name, _OPENALEX)


def parse_crossref(text: str, name: str = "<text>") -> ParseOutcome:
    """A saved Crossref work or works list, with or without its envelope -> papers."""
    return _parse_json(text, name, _CROSSREF)


def parse_semantic_scholar(text: str, name: str = "<text>") -> ParseOutcome:
    """Saved Semantic Scholar Graph API papers (one, ``{"data": [...]}`` or an array) -> papers."""
    return _parse_json(text, name, _SEMANTIC_SCHOLAR)


def parse_dblp(text: str, name: str = "<text>") -> ParseOutcome:
    """A saved DBLP publication search answer (JSON) -> papers."""
    return _parse_json(text, name, _DBLP)

