"""arXiv API client: search, author listings and id lookups, paged, read by ``providers.arxiv``.

The API (``settings.arxiv_url``, ``/api/query``) answers with an Atom feed; a rejected query
comes back as an error feed (HTTP 400) and becomes a ``SourceError`` carrying the API's message.
arXiv asks for one request every ``settings.arxiv_delay`` seconds; ``PoliteClient`` keeps it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date

import httpx

from retrieval.config import Settings
from retrieval.errors import InputError, ParseError, SourceError
from retrieval.records.paper import Paper, clean_text, split_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.fetched import Fetched, PaperStream
from retrieval.sources.http import ApiSource
from retrieval.sources.providers.arxiv import SOURCE, AtomPage, describe_error, read_feed

#: The API refuses pages larger than this.
MAX_PAGE_SIZE = 2_000
#: Ids per ``id_list`` request; also the page size sent with it.
ID_BATCH = 100

_PARTICLES = {
    "van", "von", "der", "den", "de", "del", "della", "da", "di", "la", "le", "du", "dos", "das", "ter", "ten", "st", "st."
}


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


class ArxivSource(ApiSource):
    """Search, author listings and id lookups against the arXiv API.

    Each call returns its outcome (``PaperStream`` or ``Fetched``): the papers, the entries that
    could not become papers and the ids arXiv did not return, each with the reason. A failed
    request raises ``SourceError`` naming the request and, for an error feed, the API's message.
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
            settings, client, sleep, clock=clock, min_interval=settings.arxiv_delay, describe_error=describe_error
        )
        self.url = settings.arxiv_url

    def search(self, query: str, *, max_results: int = 100, page_size: int = 100) -> PaperStream:
        """Papers matching a raw arXiv ``search_query`` (``all:graph AND cat:cs.LG``), by relevance.

        Pages are fetched lazily as the stream is consumed; papers of pages already fetched
        stay with the caller if a later page fails. ``InputError`` for an empty query.
        """
        query = clean_text(query)
        if not query:
            raise InputError("Give something to search arXiv for.")
        return PaperStream(lambda stream: self._paged(
            stream, query, "relevance", max_results, page_size, what=f"search {query!r}"))

    def by_author(self, name: str, *, since: date | None = None, max_results: int = 500) -> PaperStream:
        """An author's papers, newest submission first, stopping at the first one before ``since``
        (``author_query`` builds the query; ``InputError`` for an empty name)."""
        query = author_query(name)

        def pages(stream: PaperStream) -> Iterator[Paper]:
            papers = self._paged(stream, query, "submittedDate", max_results, 100, what=f"papers of {name!r}")
            return papers if since is None else _until(papers, since)

        return PaperStream(pages)

    def by_ids(self, ids: Sequence[str]) -> Fetched[Paper]:
        """Papers for arXiv ids (with or without version), fetched ``ID_BATCH`` at a time; malformed
        ids, entries that cannot become papers and ids arXiv does not know are ``skipped``."""
        fetched: Fetched[Paper] = Fetched()
        wanted: list[tuple[str, str]] = []  # (as sent, id without version)
        for raw in ids:
            parts = split_arxiv_id(raw)
            if parts is None:
                fetched.skipped.append(SkippedItem(f"arXiv id {raw!r}", "not an arXiv identifier"))
                continue
            sent = parts[0] + (parts[1] or "")
            if sent not in (w[0] for w in wanted):
                wanted.append((sent, parts[0]))
        for offset in range(0, len(wanted), ID_BATCH):
            batch = wanted[offset : offset + ID_BATCH]
            sent = ",".join(w[0] for w in batch)
            page = self._fetch("", sent, "relevance", 0, ID_BATCH, what=f"lookup of arXiv ids {_ids_label(batch)}")
            fetched.items.extend(page.papers)
            fetched.skipped.extend(page.skipped)
            fetched.warnings.extend(page.warnings)
            found = {p.arxiv_id for p in page.papers} | {_skipped_id(s) for s in page.skipped}
            for sent_id, base_id in batch:
                if base_id not in found:
                    fetched.skipped.append(SkippedItem(f"arXiv id {sent_id}", "arXiv has no paper with this id"))
        return fetched

    # --- paging ----------------------------------------------------------------------------

    def _paged(self, stream: PaperStream, query: str, sort_by: str, max_results: int, page_size: int, *,
               what: str) -> Iterator[Paper]:
        """The papers of a listing, page by page; each page's skips and warnings go to ``stream``."""
        page_size = max(1, min(page_size, MAX_PAGE_SIZE))
        start = 0
        delivered = 0
        while delivered < max_results:
            size = min(page_size, max_results - delivered)
            page = self._fetch(query, "", sort_by, start, size, what=what)
            stream.note(page.skipped, page.warnings)
            for paper in page.papers:
                if delivered >= max_results:
                    return
                delivered += 1
                yield paper
            if page.entries == 0 and start < page.total_results:
                # arXiv occasionally answers a valid page with no entries; say so, don't loop.
                stream.warnings.append(SkippedItem(
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
            page = read_feed(response.content)
        except ParseError as exc:
            raise SourceError(SOURCE, f"{what} (results from {start}): {exc.user_message}",
                              status=response.status_code) from None
        return page


def _ids_label(batch: Sequence[tuple[str, str]], limit: int = 3) -> str:
    """"a, b, c and 7 more" for error messages about an id batch."""
    shown = ", ".join(w[0] for w in batch[:limit])
    return shown + (f" and {len(batch) - limit} more" if len(batch) > limit else "")


def _skipped_id(item: SkippedItem) -> str | None:
    parts = split_arxiv_id(item.item.removeprefix("arXiv entry ").strip())
    return parts[0] if parts else None
