"""arXiv API connector: Atom feed parser (pure) and a paging client.

The API (``settings.arxiv_url``, ``/api/query``) answers with an Atom feed. Quirks handled:

- entry ids are ``http://arxiv.org/abs/<id>vN``: the id without version is the identity,
  the version is kept in ``Paper.arxiv_version``;
- old (2016) summaries and titles are hard-wrapped and start with spaces: whitespace is
  collapsed;
- ``arxiv:doi``, ``arxiv:journal_ref`` (-> venue), ``arxiv:comment`` (-> extra ``comment``)
  and per-author ``arxiv:affiliation`` are optional; ``arxiv:primary_category`` is also
  kept as extra ``primaryclass`` (``_extra_fields``);
- a rejected query comes back as a one-entry feed titled "Error" (HTTP 400): ``SourceError``
  carrying the API's message; an unknown id is simply a feed with ``totalResults`` 0.

arXiv asks for one request every ``settings.arxiv_delay`` seconds; ``PoliteClient`` keeps it.
Titles and abstracts are kept as arXiv sends them (LaTeX included).
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date

import httpx

from retrieval.config import Settings
from retrieval.errors import InputError, SourceError
from retrieval.records.paper import Paper, clean_text, normalize_doi, split_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.files.base import ItemRejected, ParseOutcome, build_paper, check_field_sizes
from retrieval.sources.http import ApiSource
from retrieval.sources.markup.jats import UnsafeXMLError, parse_xml
from retrieval.sources.markup.latex import latex_to_text

SOURCE = "arxiv"
MAX_TITLE_CHARS = 2_000
MAX_ABSTRACT_CHARS = 100_000
#: The API refuses pages larger than this.
MAX_PAGE_SIZE = 2_000
#: Ids per ``id_list`` request; also the page size sent with it.
ID_BATCH = 100

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
_OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"
_PARTICLES = {
    "van", "von", "der", "den", "de", "del", "della", "da", "di", "la", "le", "du", "dos", "das", "ter", "ten", "st", "st."
}


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


def _error_message(root: ET.Element) -> str | None:
    """The API's message when the feed is an error report (one entry titled "Error").

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


class _FeedError(ValueError):
    """The feed as a whole is unusable; the message says why (no source prefix)."""


def _read_feed(xml: str | bytes) -> ET.Element:
    try:
        root = parse_xml(xml)
    except UnsafeXMLError as exc:
        raise _FeedError(f"refused the response: {exc}.") from None
    except ET.ParseError as exc:
        raise _FeedError(f"returned a malformed or truncated Atom feed ({exc}). Try again in a minute.") from None
    if root.tag != f"{_ATOM}feed":
        raise _FeedError(f"returned a document that is not an Atom feed (root <{root.tag}>).")
    return root


def _parse_feed(xml: str | bytes) -> AtomPage:
    root = _read_feed(xml)
    message = _error_message(root)
    if message is not None:
        raise _FeedError(f"the API rejected the request: {message}.")
    entries = root.findall(f"{_ATOM}entry")
    outcome = ParseOutcome(format="arxiv-atom")
    for position, entry in enumerate(entries):
        _parse_entry(entry, position, outcome)
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
    """Parse one arXiv API response into papers.

    Raises ``SourceError`` for an error feed (with the API's message), hostile, malformed or
    truncated XML, or a document that is not an Atom feed. Bad entries are skipped, not raised.
    """
    try:
        return _parse_feed(xml)
    except _FeedError as exc:
        raise SourceError(SOURCE, str(exc)) from None


def _parse_entry(entry: ET.Element, position: int, outcome: ParseOutcome) -> None:
    raw_id = _text(entry.find(f"{_ATOM}id"))
    parts = split_arxiv_id(raw_id)
    item = f"arXiv entry {raw_id or f'#{position + 1}'}"
    if parts is None:
        outcome.skipped.append(SkippedItem(item, f"entry id {raw_id!r} is not an arXiv identifier"))
        return
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
        return
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


def _published_before(paper: Paper, since: date) -> bool:
    """True when the paper's date (YYYY[-MM[-DD]]) is certainly before ``since``."""
    return paper.published is not None and paper.published < since.isoformat()[: len(paper.published)]


def _until(papers: Iterator[Paper], since: date) -> Iterator[Paper]:
    """Papers of a newest-first listing up to the first one published before ``since``."""
    for paper in papers:
        if _published_before(paper, since):
            return
        yield paper


def author_query(name: str) -> str:
    """``au:"Last_First"`` for a person's name ("Adrian Del Maestro" or "Del Maestro, Adrian").

    arXiv matches author names with underscores for spaces; family-name particles (van, de,
    del...) stay with the family name. A name that already is a query (``au:...``) is kept.
    """
    text = clean_text(name)
    if not text:
        raise InputError("Give an author name to look up on arXiv.")
    if re.match(r"^(au|ti|abs|all|cat):", text):
        return text
    if "," in text:
        family, given = (part.strip() for part in text.split(",", 1))
    else:
        words = text.split()
        cut = len(words) - 1
        while cut > 0 and words[cut - 1].lower() in _PARTICLES:
            cut -= 1
        family, given = " ".join(words[cut:]), " ".join(words[:cut])
    tokens = [t for t in re.split(r"[\s]+", f"{family} {given}".replace('"', "")) if t]
    return 'au:"' + "_".join(tokens) + '"'


# --- client -----------------------------------------------------------------------------------


def _describe_error(response: httpx.Response) -> str | None:
    """The message of an arXiv error feed, for ``SourceError``."""
    try:
        return _error_message(parse_xml(response.content))
    except (ET.ParseError, UnsafeXMLError):
        return None


class ArxivSource(ApiSource):
    """Search, author listings and id lookups against the arXiv API.

    After each call (once its iterator is exhausted) ``skipped`` holds the entries that could
    not become papers, and ids that arXiv did not return, each with the reason.
    """

    SOURCE = SOURCE

    def __init__(
        self,
        settings: Settings,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            settings, client, sleep, clock=clock, min_interval=settings.arxiv_delay, describe_error=_describe_error
        )
        self.url = settings.arxiv_url

    def search(self, query: str, *, max_results: int = 100, page_size: int = 100) -> Iterator[Paper]:
        """Papers matching a raw arXiv ``search_query`` (``all:graph AND cat:cs.LG``), by relevance.

        Pages are fetched lazily as the iterator is consumed; papers of pages already fetched
        stay with the caller if a later page fails.
        """
        query = clean_text(query)
        if not query:
            raise InputError("Give something to search arXiv for.")
        return self._paged(query, "relevance", max_results, page_size, what=f"search {query!r}")

    def by_author(self, name: str, *, since: date | None = None, max_results: int = 500) -> Iterator[Paper]:
        """An author's papers, newest submission first, stopping at the first one before ``since``."""
        query = author_query(name)
        papers = self._paged(query, "submittedDate", max_results, 100, what=f"papers of {name!r}")
        return papers if since is None else _until(papers, since)

    def by_ids(self, ids: Sequence[str]) -> list[Paper]:
        """Papers for arXiv ids (with or without version); unknown and malformed ids are skipped."""
        self._reset()
        wanted: list[tuple[str, str]] = []  # (as sent, id without version)
        for raw in ids:
            parts = split_arxiv_id(raw)
            if parts is None:
                self.skipped.append(SkippedItem(f"arXiv id {raw!r}", "not an arXiv identifier"))
                continue
            sent = parts[0] + (parts[1] or "")
            if sent not in (w[0] for w in wanted):
                wanted.append((sent, parts[0]))
        papers: list[Paper] = []
        for offset in range(0, len(wanted), ID_BATCH):
            batch = wanted[offset : offset + ID_BATCH]
            sent = ",".join(w[0] for w in batch)
            page = self._fetch("", sent, "relevance", 0, ID_BATCH, what=f"lookup of arXiv ids {_ids_label(batch)}")
            papers.extend(page.papers)
            found = {p.arxiv_id for p in page.papers} | {_skipped_id(s) for s in page.skipped}
            for sent_id, base_id in batch:
                if base_id not in found:
                    self.skipped.append(SkippedItem(f"arXiv id {sent_id}", "arXiv has no paper with this id"))
        return papers

    # --- paging ----------------------------------------------------------------------------

    def _reset(self) -> None:
        self.skipped = []
        self.warnings = []

    def _paged(self, query: str, sort_by: str, max_results: int, page_size: int, *, what: str) -> Iterator[Paper]:
        self._reset()
        page_size = max(1, min(page_size, MAX_PAGE_SIZE))
        start = 0
        delivered = 0
        while delivered < max_results:
            size = min(page_size, max_results - delivered)
            page = self._fetch(query, "", sort_by, start, size, what=what)
            for paper in page.papers:
                if delivered >= max_results:
                    return
                delivered += 1
                yield paper
            if page.entries == 0 and start < page.total_results:
                # arXiv occasionally answers a valid page with no entries; say so, don't loop.
                self.warnings.append(SkippedItem(
                    f"results from {start} of {page.total_results}",
                    "arXiv returned an empty page; the listing may be incomplete, try again later",
                ))
            start += page.entries
            if page.entries == 0 or start >= page.total_results:
                return

    def _fetch(self, query: str, id_list: str, sort_by: str, start: int, size: int, *, what: str) -> AtomPage:
        params = {
            "search_query": query,
            "id_list": id_list,
            "sortBy": sort_by,
            "sortOrder": "descending",
            "start": start,
            "max_results": size,
        }
        response = self.http.get(self.url, params, what=what)
        try:
            page = _parse_feed(response.content)
        except _FeedError as exc:
            raise SourceError(SOURCE, f"{what} (results from {start}): {exc}", status=response.status_code) from None
        self.skipped.extend(page.skipped)
        self.warnings.extend(page.warnings)
        return page


def _ids_label(batch: Sequence[tuple[str, str]], limit: int = 3) -> str:
    """"a, b, c and 7 more" for error messages about an id batch."""
    shown = ", ".join(w[0] for w in batch[:limit])
    return shown + (f" and {len(batch) - limit} more" if len(batch) > limit else "")


def _skipped_id(item: SkippedItem) -> str | None:
    parts = split_arxiv_id(item.item.removeprefix("arXiv entry ").strip())
    return parts[0] if parts else None
