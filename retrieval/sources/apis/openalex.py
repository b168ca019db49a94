"""OpenAlex API client: author profiles and works, cursor-paged, read by ``providers.openalex``.

``settings.contact_email`` is sent as ``mailto=`` (the polite pool). A 404 for one work or
profile means "not known"; other failures are ``SourceError`` carrying the API's message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any
from urllib.parse import quote

import httpx

from retrieval.config import Settings
from retrieval.errors import InputError, ParseError, SourceError
from retrieval.records.paper import Paper, clean_text, normalize_doi, normalize_openalex_id, normalize_orcid
from retrieval.results import SkippedItem
from retrieval.sources.fetched import Fetched, PaperStream
from retrieval.sources.files.base import json_object
from retrieval.sources.http import ApiSource
from retrieval.sources.providers.openalex import (
    SOURCE,
    OpenAlexAuthor,
    describe_error,
    parse_author,
    parse_works_page,
    read_work,
)

MAX_PER_PAGE = 200


class OpenAlexSource(ApiSource):
    """Authors and works from the OpenAlex API (``settings.openalex_url``).

    Each call that reads several items returns its outcome (``Fetched`` or ``PaperStream``): the
    items, and the ones it could not use with the reason. A failed request raises ``SourceError``.
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
        self.base = settings.openalex_url
        self.mailto = settings.contact_email

    # --- authors ---------------------------------------------------------------------------

    def find_authors(self, name: str, *, limit: int = 10) -> Fetched[OpenAlexAuthor]:
        """Profiles matching a name, best match first, for choosing between namesakes; unusable
        and deleted profiles are ``skipped``. ``InputError`` for an empty name."""
        found: Fetched[OpenAlexAuthor] = Fetched()
        name = clean_text(name)
        if not name:
            raise InputError("Give a name to look up on OpenAlex.")
        per_page = max(1, min(limit, MAX_PER_PAGE))
        payload = self._json("/authors", {"search": name, "per-page": per_page}, what=f"author search {name!r}")
        results = json_object(payload).get("results")
        if not isinstance(results, list):
            raise SourceError(SOURCE, f"author search {name!r}: the response has no 'results'; the API may have changed.")
        for position, obj in enumerate(results):
            item = f"OpenAlex author result #{position + 1}"
            try:
                author = parse_author(obj)
            except ParseError as exc:
                found.skipped.append(SkippedItem(exc.item or item, exc.user_message))
                continue
            if author.deleted:
                found.skipped.append(SkippedItem(f"OpenAlex author {author.id}", "profile was deleted"))
                continue
            found.items.append(author)
        del found.items[limit:]
        return found

    def author(self, author_id_or_orcid: str) -> OpenAlexAuthor:
        """One profile by OpenAlex id (``A...`` or URL) or ORCID; merged ids follow the redirect.

        ``InputError`` for an unknown or deleted profile; ``SourceError`` for an unusable one."""
        key = _author_key(author_id_or_orcid)
        payload = self._json(f"/authors/{key}", {}, what=f"author {author_id_or_orcid}", not_found_is_empty=True)
        if payload is None:
            raise InputError(
                f"OpenAlex has no author {author_id_or_orcid!r}.",
                hint="Check the id, or look the person up by name to pick the right profile.",
            )
        try:
            author = parse_author(payload)
        except ParseError as exc:
            raise SourceError(SOURCE, f"author {author_id_or_orcid}: unusable profile ({exc.user_message})") from None
        if author.deleted:
            raise InputError(
                f"The OpenAlex author profile {author.id} has been deleted (usually merged into another profile).",
                hint="Look the person up by name or ORCID to find the profile that replaced it.",
            )
        requested = normalize_openalex_id(author_id_or_orcid)
        if requested and requested != author.id:
            author.redirected_from = requested
        return author

    # --- works -----------------------------------------------------------------------------

    def works_by_author(self, author_id: str, *, since: date | None = None, max_results: int = 1000) -> PaperStream:
        """An author's works, newest first; ``since`` keeps works published on or after it."""
        bare = normalize_openalex_id(author_id)
        if not bare or not bare.startswith("A"):
            raise InputError(f"{author_id!r} is not an OpenAlex author id (they look like A5023888391).")
        return self._works(f"author.id:{bare}", since, max_results, what=f"works of author {bare}")

    def works_by_orcid(self, orcid: str, *, since: date | None = None, max_results: int = 1000) -> PaperStream:
        """Works whose authorships carry this ORCID, newest first."""
        bare = normalize_orcid(orcid)
        if not bare:
            raise InputError(f"{orcid!r} is not an ORCID (they look like 0000-0002-1825-0097).")
        return self._works(f"author.orcid:{bare}", since, max_results, what=f"works of ORCID {bare}")

    def work_by_doi(self, doi: str) -> Fetched[Paper] | None:
        """The work with this DOI (in ``items``, or in ``skipped`` with the reason when it cannot
        become a paper), or None when OpenAlex does not know it."""
        bare = normalize_doi(doi)
        if not bare:
            raise InputError(f"{doi!r} is not a DOI (they look like 10.1234/abcd).")
        path = "/works/https://doi.org/" + quote(bare, safe="/:;()@,+=$!*'")
        payload = self._json(path, {}, what=f"work {bare}", not_found_is_empty=True)
        if payload is None:
            return None
        outcome = read_work(payload)
        return Fetched(outcome.papers, outcome.skipped, outcome.warnings)

    def search(self, query: str, *, max_results: int = 100) -> PaperStream:
        """Full-text search over titles, abstracts and fulltext, by relevance."""
        query = clean_text(query)
        if not query:
            raise InputError("Give something to search OpenAlex for.")
        return self._paged({"search": query}, max_results, what=f"search {query!r}")

    # --- plumbing --------------------------------------------------------------------------

    def _works(self, filter_: str, since: date | None, max_results: int, *, what: str) -> PaperStream:
        if since is not None:
            filter_ += f",from_publication_date:{since.isoformat()}"
        return self._paged({"filter": filter_, "sort": "publication_date:desc"}, max_results, what=what)

    def _paged(self, params: dict[str, Any], max_results: int, *, what: str) -> PaperStream:
        return PaperStream(lambda stream: self._pages(stream, params, max_results, what=what))

    def _pages(self, stream: PaperStream, params: dict[str, Any], max_results: int, *, what: str) -> Iterator[Paper]:
        """The works of a listing, cursor page by page; each page's skips and warnings go to ``stream``."""
        delivered = 0
        cursor: str | None = "*"
        per_page = max(1, min(max_results, MAX_PER_PAGE))
        while cursor and delivered < max_results:
            payload = self._json("/works", {**params, "per-page": per_page, "cursor": cursor}, what=what)
            page = parse_works_page(payload)
            stream.note(page.skipped, page.warnings)
            for paper in page.papers:
                if delivered >= max_results:
                    return
                delivered += 1
                yield paper
            if page.results == 0 or page.next_cursor == cursor:
                return
            cursor = page.next_cursor

    def _json(self, path: str, params: dict[str, Any], *, what: str, not_found_is_empty: bool = False) -> Any:
        if self.mailto:
            params = {**params, "mailto": self.mailto}
        url = self.base + path
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


def _author_key(value: str) -> str:
    """Path segment for ``/authors/{key}``: a bare A-id or ``orcid:<ORCID>``."""
    orcid = normalize_orcid(value)
    if orcid:
        return f"orcid:{orcid}"
    bare = normalize_openalex_id(value)
    if bare and bare.startswith("A"):
        return bare
    raise InputError(f"{value!r} is neither an OpenAlex author id (A5023888391) nor an ORCID.")
