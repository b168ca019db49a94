"""arXiv: its Atom feed and entries -> papers (pure), for the API client and saved feeds alike.

``read_entry`` reads one ``<entry>``; ``read_feed`` one whole feed (a page of the API, with its
paging counters); ``feed_error`` recognises arXiv's error feed. The API client
(``sources.apis.arxiv``) and the saved-file reader (``sources.files.saved_responses``) both read
through them, so a fetched and a saved feed give the same records. Quirks handled:

- entry ids are ``http://arxiv.org/abs/<id>vN``: the id without version is the identity,
  the version is kept in ``Paper.arxiv_version``;
- old (2016) summaries and titles are hard-wrapped and start with spaces: whitespace is
  collapsed;
- ``arxiv:doi``, ``arxiv:journal_ref`` (-> venue), ``arxiv:comment`` (-> extra ``comment``)
  and per-author ``arxiv:affiliation`` are optional; ``arxiv:primary_category`` is also
  kept as extra ``primaryclass`` (``_extra_fields``);
- a rejected query comes back as a one-entry feed titled "Error" (HTTP 400): ``SourceError``
  carrying the API's message; an unknown id is simply a feed with ``totalResults`` 0.

Titles and abstracts are kept as arXiv sends them (LaTeX included).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import httpx

from retrieval.errors import ParseError, SourceError
from retrieval.records.paper import Paper, clean_text, normalize_doi, split_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.files.base import ItemRejected, ParseOutcome, build_paper, check_field_sizes
from retrieval.sources.markup.jats import UnsafeXMLError, parse_xml
from retrieval.sources.markup.latex import latex_to_text

#: The provenance source of arXiv records.
SOURCE = "arxiv"
#: The file format of a saved arXiv API response (``formats.FILE_FORMATS``).
FORMAT = "arxiv-atom"
MAX_TITLE_CHARS = 2_000
MAX_ABSTRACT_CHARS = 100_000
#: The Atom namespace, as ElementTree writes it in tags.
ATOM_NAMESPACE = "http://www.w3.org/2005/Atom"

_ATOM = f"{{{ATOM_NAMESPACE}}}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
_OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"


@dataclass
class AtomPage:
    """One page of an arXiv feed: the papers, the paging counters and what was skipped."""

    papers: list[Paper]
    total_results: int
    start: int
    items_per_page: int
    entries: int = 0  # entries in the feed, kept or skipped (how far paging advances)
    skipped: list[SkippedItem] = field(default_factory=list)
    warnings: list[SkippedItem] = field(default_factory=list)


# --- parsing (pure) -------------------------------------------------------------------------


def _text(element: ET.Element | None) -> str:
    return clean_text(element.text) if element is not None and element.text else ""


def _int(root: ET.Element, tag: str, default: int) -> int:
    try:
        return int(_text(root.find(tag)))
    except ValueError:
        return default


def feed_error(root: ET.Element) -> str | None:
    """The API's message when the feed ``root`` is an error report (one entry titled "Error"),
    else None.

    The marker is the entry id (``https://arxiv.org/api/errors#...``); a title "Error" alone
    counts only when the entry id is not a paper's, since a paper may be titled "Error".
    """
    entries = root.findall(f"{_ATOM}entry")
    if len(entries) != 1:
        return None
    entry = entries[0]
    entry_id = _text(entry.find(f"{_ATOM}id"))
    title = _text(entry.find(f"{_ATOM}title"))
    if "/api/errors" not in entry_id and not (title == "Error" and split_arxiv_id(entry_id) is None):
        return None
    return _text(entry.find(f"{_ATOM}summary")) or entry_id or "unspecified error"


def _feed_root(xml: str | bytes) -> ET.Element:
    """The root of an Atom feed; ``ParseError`` (a message without source prefix) otherwise."""
    try:
        root = parse_xml(xml)
    except UnsafeXMLError as exc:
        raise ParseError(f"refused the response: {exc}.", source=SOURCE, item="feed") from None
    except ET.ParseError as exc:
        raise ParseError(f"returned a malformed or truncated Atom feed ({exc}). Try again in a minute.",
                         source=SOURCE, item="feed") from None
    if root.tag != f"{_ATOM}feed":
        raise ParseError(f"returned a document that is not an Atom feed (root <{root.tag}>).",
                         source=SOURCE, item="feed")
    return root


def read_feed(xml: str | bytes) -> AtomPage:
    """One arXiv API response (an Atom feed) -> its papers, skipped entries and paging counters.

    Raises ``ParseError`` for an error feed (with the API's message), hostile, malformed or
    truncated XML, or a document that is not an Atom feed; its ``user_message`` says what the
    API "returned" and the caller names the source and the request. Bad entries are skipped,
    not raised.
    """
    root = _feed_root(xml)
    message = feed_error(root)
    if message is not None:
        raise ParseError(f"the API rejected the request: {message}.", source=SOURCE, item="feed")
    entries = root.findall(f"{_ATOM}entry")
    outcome = ParseOutcome.of_items(FORMAT, entries, read_entry)
    return AtomPage(
        papers=outcome.papers,
        total_results=_int(root, f"{_OPENSEARCH}totalResults", len(entries)),
        start=_int(root, f"{_OPENSEARCH}startIndex", 0),
        items_per_page=_int(root, f"{_OPENSEARCH}itemsPerPage", len(entries)),
        entries=len(entries),
        skipped=outcome.skipped,
        warnings=outcome.warnings,
    )


def parse_atom(xml: str | bytes) -> AtomPage:
    """``read_feed``, its failures raised as ``SourceError`` of arXiv (with the API's message)."""
    try:
        return read_feed(xml)
    except ParseError as exc:
        raise SourceError(SOURCE, exc.user_message) from None


def read_entry(entry: ET.Element, position: int = 0) -> ParseOutcome:
    """One Atom ``<entry>`` (the ``position``-th of its feed, from 0) -> an outcome holding its
    paper, or the reason it was skipped (an id that is not arXiv's, an absurd size, no title) and
    the optional values dropped (``warnings``). Never raises for a bad entry."""
    outcome = ParseOutcome(format=FORMAT)
    raw_id = _text(entry.find(f"{_ATOM}id"))
    parts = split_arxiv_id(raw_id)
    item = f"arXiv entry {raw_id or f'#{position + 1}'}"
    if parts is None:
        outcome.skipped.append(SkippedItem(item, f"entry id {raw_id!r} is not an arXiv identifier"))
        return outcome
    arxiv_id, version = parts
    title = _text(entry.find(f"{_ATOM}title"))
    abstract = _text(entry.find(f"{_ATOM}summary"))
    try:
        if len(title) > MAX_TITLE_CHARS:
            raise ItemRejected(f"title is longer than {MAX_TITLE_CHARS} characters")
        if len(abstract) > MAX_ABSTRACT_CHARS:
            raise ItemRejected(f"abstract is longer than {MAX_ABSTRACT_CHARS} characters")
        authors = _authors(entry)
        check_field_sizes({"authors": [a["name"] for a in authors]})
    except ItemRejected as exc:
        outcome.skipped.append(SkippedItem(item, exc.reason))
        return outcome
    primary = entry.find(f"{_ARXIV}primary_category")
    categories = [primary.get("term", "")] if primary is not None else []
    categories += [c.get("term", "") for c in entry.findall(f"{_ATOM}category")]
    dois = _text(entry.find(f"{_ARXIV}doi")).split()
    data = {
        # arXiv sends titles and abstracts as the authors typed them: decode LaTeX ($\alpha$, \'e)
        "title": latex_to_text(title, tilde_is_space=False),
        "abstract": latex_to_text(abstract, tilde_is_space=False),
        "authors": authors,
        "published": _text(entry.find(f"{_ATOM}published"))[:10],
        "venue": _text(entry.find(f"{_ARXIV}journal_ref")),
        "doi": next((d for d in map(normalize_doi, dois) if d), None),
        "arxiv_id": arxiv_id,
        "arxiv_version": version,
        "url": _abs_link(entry) or f"https://arxiv.org/abs/{arxiv_id}{version or ''}",
        "type": "preprint",
        "categories": [c for c in categories if c],
        "extra_fields": _extra_fields(
            primary.get("term") if primary is not None else None, _text(entry.find(f"{_ARXIV}comment"))
        ),
        "open_access": True,
    }
    build_paper(data, source=SOURCE, source_id=f"{arxiv_id}{version or ''}", item=item, outcome=outcome)
    return outcome


def _extra_fields(primary_category: str | None, comment: str | None) -> dict[str, str]:
    """An arXiv record's export-only fields: ``primaryclass`` (the primary category, named as
    arXiv's own BibTeX export names it; biblatex reads it as ``eprintclass``) and ``comment``
    (the authors' "12 pages, 3 figures" remark: kept, under a field bibliography styles do not
    print, unlike ``note``). ``eprint``/``archiveprefix`` are written from ``arxiv_id``."""
    extra = {"primaryclass": clean_text(primary_category), "comment": clean_text(comment)}
    return {name: value for name, value in extra.items() if value}


def _authors(entry: ET.Element) -> list[dict[str, object]]:
    authors: list[dict[str, object]] = []
    for author in entry.findall(f"{_ATOM}author"):
        name = _text(author.find(f"{_ATOM}name"))
        if name:
            affiliations = [_text(a) for a in author.findall(f"{_ARXIV}affiliation")]
            authors.append({"name": name, "affiliations": [a for a in affiliations if a]})
    return authors


def _abs_link(entry: ET.Element) -> str | None:
    for link in entry.findall(f"{_ATOM}link"):
        if link.get("rel") == "alternate" and link.get("href"):
            return link.get("href")
    return None


def describe_error(response: httpx.Response) -> str | None:
    """The message of an arXiv error feed in an HTTP response, else None (for ``PoliteClient``)."""
    try:
        return feed_error(parse_xml(response.content))
    except (ET.ParseError, UnsafeXMLError):
        return None
