"""The facade both doors call: ``Assistant``, and its sub-facades, one job each.

The Slack app and the CLI hold one ``Assistant`` each and never reach past it, so the two
doors always behave the same (``tests/test_architecture.py``: the doors import only this, the
result types, the errors and the settings). ``Assistant`` itself keeps what is top level: the
three questions a person asks (``ask``, ``stream_ask``, ``search``), ``close``, and one property
per sub-facade, each made on first use (once, whichever thread asks first) over the one
``Installation`` (``retrieval.assistant.installation``: the settings, the lazily opened index
and chat model, the writer lock) they share:

========== ==================================== =============================================
property   module (class)                       job
========== ==================================== =============================================
answering  ``retrieval.answers.service``        a parsed question answered (``ask`` delegates)
           (``AnsweringService``)
scholars   ``.scholars`` (``Scholars``)         summaries, their pictures, collaborators
roster     ``.roster`` (``ScholarRoster``)      the scholars kept in sync: list, add, remove
fetching   ``.fetching`` (``Fetching``)         fetch from the APIs, sync the roster's works
library    ``.library`` (``Library``)           ingest files and records, remove sources, marks
records    ``.records`` (``Records``)           records read back: by id, BibTeX, export, stats
upkeep     ``.upkeep`` (``Upkeep``)             database status and upgrade, readiness,
                                                consistency, repair, the model's probe
follows    ``retrieval.alerts.channels``        follow, unfollow, the alerts queue (Slack)
           (``ChannelFollows``)
========== ==================================== =============================================

Creating one makes the data dir private (``config.open_data_dir``: 0700, files 0600). Every
write path (``library.ingest_files``, ``library.ingest_papers``, ``library.remove_sources``,
``fetching.sync``, ``upkeep.repair``; ``fetching.fetch`` indexes through ``library.ingest_papers``)
holds the data dir's writer lock (``retrieval.storage.locks``, through ``Installation.writing``)
from before it first touches the index until it is done, so two processes never merge into the
same records at once; the readers never take it (``tests/assistant/test_structure.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from retrieval.answers.chat_model import FROM_SETTINGS, ChatModelChoice
from retrieval.assistant.installation import Installation
from retrieval.config import Settings
from retrieval.results import AnswerEvent, AnswerResult, Citation, SearchFilters, SearchResult

if TYPE_CHECKING:
    from retrieval.alerts.channels import ChannelFollows
    from retrieval.answers.service import AnsweringService
    from retrieval.assistant.fetching import Fetching
    from retrieval.assistant.library import Library
    from retrieval.assistant.records import Records
    from retrieval.assistant.roster import ScholarRoster
    from retrieval.assistant.scholars import Scholars
    from retrieval.assistant.upkeep import Upkeep
    from retrieval.index.paper_index import PaperIndex


class Assistant:
    """One installation's paperbot: ask and search here, everything else through a sub-facade."""

    def __init__(
        self,
        settings: Settings,
        *,
        index: PaperIndex | None = None,
        chat_model: ChatModelChoice = FROM_SETTINGS,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        """``chat_model``: a model, None for extractive answers, or (the default) the model the
        settings describe, built on first use (``retrieval.answers.chat_model``). ``notice``
        receives one-line messages for the user that are not results: the data dir made
        private, waiting for another writer (default: the log)."""
        self._installation = Installation(settings, index=index, chat_model=chat_model, notice=notice)
        self._answering: AnsweringService | None = None
        self._scholars: Scholars | None = None
        self._roster: ScholarRoster | None = None
        self._fetching: Fetching | None = None
        self._library: Library | None = None
        self._records: Records | None = None
        self._upkeep: Upkeep | None = None
        self._follows: ChannelFollows | None = None
        # Each sub-facade is made once, whichever thread asks first (the Slack listener threads).
        # Held only while one is made, never while the index opens (``Installation`` does that under its own).
        self._made_lock = threading.RLock()

    @property
    def settings(self) -> Settings:
        """The settings this installation runs with."""
        return self._installation.settings

    @property
    def index(self) -> PaperIndex:
        """The index every sub-facade uses, opened on first use (once, whichever thread asks
        first); for the core's own callers (tests, benchmarks): the doors never use it."""
        return self._installation.index

    def close(self) -> None:
        """Close the follows store if it was opened (it reopens on next use)."""
        if self._follows is not None:
            self._follows.close()

    # --- the three questions -----------------------------------------------------------------

    def search(
        self, query: str, *, k: int = 10, offset: int = 0, filters: SearchFilters | None = None
    ) -> SearchResult:
        """Ranked records for ``query`` (filter phrases read out of it, merged under ``filters``)."""
        from retrieval.answers.question import parse_question

        index = self.index
        parsed = parse_question(query, index.parse_question, filters=filters)
        outcome = index.retrieve(parsed.search_text, k + offset, parsed.search_filters)
        hits = outcome.hits[offset:]
        citations = [Citation.from_paper(offset + i + 1, hit.paper, hit.score) for i, hit in enumerate(hits)]
        notices = " ".join(part for part in (parsed.notice, outcome.empty_reason if not hits else None) if part)
        return SearchResult(query=query, results=citations, notice=notices or None)

    def ask(
        self,
        question: str,
        *,
        k: int = 8,
        filters: SearchFilters | None = None,
        history: Sequence[tuple[str, str]] = (),
    ) -> AnswerResult:
        """A cited answer: a listing of the filtered records, a topic answer, or a topic within filters."""
        parsed = self.answering.parse(question, filters=filters, history=history)
        return self.answering.ask(parsed, k=k, history=history)

    def stream_ask(
        self,
        question: str,
        *,
        k: int = 8,
        filters: SearchFilters | None = None,
        history: Sequence[tuple[str, str]] = (),
    ) -> Iterator[AnswerEvent]:
        """A ``Progress`` (the model is reading) and text deltas as the model writes, then
        ``Final`` with the validated result.

        A listing needs no model: it arrives as one ``Final``. A mixed question whose topic
        answer abstains ends with a ``Final`` listing the filtered set (replacing any deltas).
        Bad input (an empty question, ``k`` out of range) raises before iteration.
        """
        parsed = self.answering.parse(question, filters=filters, history=history)
        return self.answering.stream(parsed, k=k, history=history)

    # --- the sub-facades, each made on first use ---------------------------------------------

    @property
    def answering(self) -> AnsweringService:
        """Questions answered over this index (``retrieval.answers.service``): what ``ask`` and
        ``stream_ask`` delegate to."""
        if self._answering is not None:
            return self._answering
        installation = self._installation
        index, chat_model = installation.index, installation.chat_model  # each opened once, by the installation
        with self._made_lock:
            if self._answering is None:
                from retrieval.answers.service import AnsweringService

                self._answering = AnsweringService(index, installation.settings, chat_model)
            return self._answering

    @property
    def scholars(self) -> Scholars:
        """A scholar's summary and pictures, collaborators for a topic (``retrieval.assistant.scholars``)."""
        with self._made_lock:
            if self._scholars is None:
                from retrieval.assistant.scholars import Scholars

                self._scholars = Scholars(self._installation)
            return self._scholars

    @property
    def roster(self) -> ScholarRoster:
        """The scholars kept in sync: list, add, remove, known (``retrieval.assistant.roster``)."""
        with self._made_lock:
            if self._roster is None:
                from retrieval.assistant.roster import ScholarRoster

                self._roster = ScholarRoster(self._installation)
            return self._roster

    @property
    def fetching(self) -> Fetching:
        """Fetch from arXiv, OpenAlex or Crossref; sync the roster's works (``retrieval.assistant.fetching``)."""
        with self._made_lock:
            if self._fetching is None:
                from retrieval.assistant.fetching import Fetching

                self._fetching = Fetching(self._installation, self.library)
            return self._fetching

    @property
    def library(self) -> Library:
        """Ingest files and records, remove sources, the marks of files ingested (``retrieval.assistant.library``)."""
        with self._made_lock:
            if self._library is None:
                from retrieval.assistant.library import Library

                self._library = Library(self._installation)
            return self._library

    @property
    def records(self) -> Records:
        """The indexed records read back: by id, BibTeX, export, count, stats (``retrieval.assistant.records``)."""
        with self._made_lock:
            if self._records is None:
                from retrieval.assistant.records import Records

                self._records = Records(self._installation)
            return self._records

    @property
    def upkeep(self) -> Upkeep:
        """Database status and upgrade, readiness, consistency, repair, the model's probe (``retrieval.assistant.upkeep``)."""
        with self._made_lock:
            if self._upkeep is None:
                from retrieval.assistant.upkeep import Upkeep

                self._upkeep = Upkeep(self._installation)
            return self._upkeep

    @property
    def follows(self) -> ChannelFollows:
        """Follow, unfollow, list and the alerts queue (``retrieval.alerts.channels``)."""
        with self._made_lock:
            if self._follows is None:
                from retrieval.alerts.channels import ChannelFollows

                self._follows = ChannelFollows(self.settings, papers=self.records.papers,
                                               is_known_scholar=self.roster.is_known)
            return self._follows
