"""Crossref API client: works by DOI, by ORCID and by search, cursor-paged, read by ``providers.crossref``.

Crossref's polite pool is joined through the User-Agent (it carries ``settings.contact_email``).
A 404 for one DOI means "not known"; other failures are ``SourceError`` with the API's message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any
from urllib.parse import quote

import httpx

from retrieval.config import Settings
from retrieval.errors import InputError, SourceError
from retrieval.records.paper import Paper, clean_text, normalize_doi, normalize_orcid
from retrieval.sources.fetched import Fetched, PaperStream
from retrieval.sources.http import ApiSource
from retrieval.sources.providers.crossref import SOURCE, describe_error, parse_crossref_page, read_work, unwrap

MAX_ROWS = 1_000


class CrossrefSource(ApiSource):
    """Works from the Crossref REST API (``settings.crossref_url``).

    Each call returns its outcome (``Fetched`` or ``PaperStream``): the works, and the items it
    could not use with the reason. A failed request raises ``SourceError``.
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
        super().__init__(settings, client, sleep, clock=clock, describe_error=describe_error)
        self.base = settings.crossref_url

    def work_by_doi(self, doi: str) -> Fetched[Paper] | None:
        """The work with this DOI (in ``items``, or in ``skipped`` with the reason when it cannot
        become a paper), or None when Crossref does not know it (HTTP 404)."""
        bare = normalize_doi(doi)
        if not bare:
            raise InputError(f"{doi!r} is not a DOI (they look like 10.1234/abcd).")
        url = f"{self.base}/works/" + quote(bare, safe="/:;()@,+=$!*'")
        payload = self._json(url, {}, what=f"work {bare}", not_found_is_empty=True)
        if payload is None:
            return None
        outcome = read_work(unwrap(payload))
        return Fetched(outcome.papers, outcome.skipped, outcome.warnings)

    def works_by_orcid(self, orcid: str, *, since: date | None = None, max_results: int = 1000) -> PaperStream:
        """Works whose metadata carries this ORCID, newest first."""
        bare = normalize_orcid(orcid)
        if not bare:
            raise InputError(f"{orcid!r} is not an ORCID (they look like 0000-0002-1825-0097).")
        filter_ = f"orcid:{bare}"
        if since is not None:
            filter_ += f",from-pub-date:{since.isoformat()}"
        params = {"filter": filter_, "sort": "published", "order": "desc"}
        return self._paged(params, max_results, what=f"works of ORCID {bare}")

    def search(self, query: str, *, max_results: int = 100) -> PaperStream:
        """Bibliographic search, by relevance."""
        query = clean_text(query)
        if not query:
            raise InputError("Give something to search Crossref for.")
        return self._paged({"query": query}, max_results, what=f"search {query!r}")

    # --- plumbing --------------------------------------------------------------------------

    def _paged(self, params: dict[str, Any], max_results: int, *, what: str) -> PaperStream:
        return PaperStream(lambda stream: self._pages(stream, params, max_results, what=what))

    def _pages(self, stream: PaperStream, params: dict[str, Any], max_results: int, *, what: str) -> Iterator[Paper]:
        """The works of a listing, cursor page by page; each page's skips and warnings go to ``stream``."""
        rows = max(1, min(max_results, MAX_ROWS))
        cursor = "*"
        delivered = 0
        seen = 0
        while delivered < max_results:
            payload = self._json(f"{self.base}/works", {**params, "rows": rows, "cursor": cursor}, what=what)
            page = parse_crossref_page(payload)
            stream.note(page.skipped, page.warnings)
            for paper in page.papers:
                if delivered >= max_results:
                    return
                delivered += 1
                yield paper
            seen += page.items
            if page.items == 0 or not page.next_cursor:
                return
            if page.total_results is not None and seen >= page.total_results:
                return
            cursor = page.next_cursor

    def _json(self, url: str, params: dict[str, Any], *, what: str, not_found_is_empty: bool = False) -> Any:
        response = (self.http.get_or_none if not_found_is_empty else self.http.get)(url, params, what=what)
        if response is None:
            return None
        try:
            return response.json()
        except ValueError:
            raise SourceError(
                SOURCE,
                f"{what}: the response is not valid JSON (truncated or malformed, {len(response.content)} bytes). "
                "Try again in a minute.",
                status=response.status_code,
            ) from None
