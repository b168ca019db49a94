"""Works fetched from the scholarly APIs into the index (``Assistant.fetching``): one selection
from one source (``fetch``), or every roster scholar's new works (``sync``).

Both write under the data dir's writer lock: ``sync`` holds it for the whole run
(``Installation.writing("sync")``), ``fetch`` for each batch it indexes (through
``Library.ingest_papers``), never while it waits on the network.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from typing import TYPE_CHECKING

from retrieval.assistant.installation import Installation
from retrieval.assistant.library import Library
from retrieval.results import FetchResult, SyncEvent, SyncReport

if TYPE_CHECKING:
    from retrieval.ingest.fetchers import ProgressBars


class Fetching:
    """Fetch and sync for one installation; fetched records go in through ``library``."""

    def __init__(self, installation: Installation, library: Library) -> None:
        """``library``: the installation's, whose ``ingest_papers`` (under the writer lock) indexes
        what ``fetch`` brings."""
        self._installation = installation
        self._library = library

    def sync(self, *, progress: Callable[[SyncEvent], None] | None = None) -> SyncReport:
        """Fetch new works of every roster scholar from all sources into the index."""
        from retrieval.ingest.sync import sync_roster

        with self._installation.writing("sync"):
            return sync_roster(self._installation.settings, self._installation.index, progress=progress)

    def fetch(self, source: str, *, author: str | None = None, query: str | None = None, ids: Sequence[str] = (),
              orcid: str | None = None, dois: Sequence[str] = (), since: date | None = None,
              max_results: int | None = None, bars: ProgressBars | None = None) -> FetchResult:
        """Fetch works from arXiv, OpenAlex or Crossref, selected one way, and index what arrived
        (``retrieval.ingest.fetchers``; a source failing part-way keeps what it delivered). A
        read-only data dir is refused before any time is spent on the network."""
        from retrieval.ingest.fetchers import DEFAULT_MAX_RESULTS, FetchRequest, fetch_and_index
        from retrieval.storage.locks import refuse_read_only

        refuse_read_only(self._installation.settings, "ingest")  # before any time is spent on the network
        request = FetchRequest(source, author=author, query=query, ids=tuple(ids), orcid=orcid, dois=tuple(dois),
                               since=since, max_results=max_results or DEFAULT_MAX_RESULTS)
        return fetch_and_index(self._installation.settings, request, self._library.ingest_papers, bars)
