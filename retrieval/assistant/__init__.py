"""The facade both doors call: ask, search, summarize, collaborators, ingest, fetch, sync,
the roster, follows, stats and checks.

The Slack app and the CLI hold one ``Assistant`` each and never reach past it, so the two
doors always behave the same (``tests/test_architecture.py``: the doors import only this, the
result types, the errors and the settings). It owns the lazily opened index, chat model and
follows store; each operation delegates to the concern that does it (``ingest.fetchers``,
``storage.roster``, ``alerts.channels``, ``answers``, ``scholars``). Two of them are sub-facades
made on first use: ``answering`` (``retrieval.answers.service``: ``ask`` and ``stream_ask``
parse the question once and hand it over) and ``follows`` (``retrieval.alerts.channels``).

Creating one makes the data dir private (``config.open_data_dir``: 0700, files 0600). Every
write path here (``ingest_files``, ``ingest_papers``, ``sync``, ``repair``) holds the data dir's
writer lock (``retrieval.storage.locks``) from before it first touches the index until it is
done, so two processes never merge into the same records at once; the readers never take it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.answers.chat_model import FROM_SETTINGS, ChatModelChoice, FromSettings
from retrieval.config import Settings, open_data_dir, with_user_permissions
from retrieval.errors import InputError, NotInstalledError, PaperbotError
from retrieval.records.paper import Paper
from retrieval.results import (
    AmbiguousScholarResult,
    AnswerEvent,
    AnswerResult,
    Citation,
    CollaboratorsResult,
    FetchResult,
    IndexStats,
    IngestReport,
    KeptAfterRemoval,
    ModelProbe,
    Readiness,
    RemovalReport,
    Scholar,
    ScholarSummaryResult,
    SearchFilters,
    SearchResult,
    SyncEvent,
    SyncReport,
)

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from retrieval.alerts.channels import ChannelFollows
    from retrieval.answers.service import AnsweringService
    from retrieval.index.maintenance import ConsistencyReport
    from retrieval.index.paper_index import PaperIndex
    from retrieval.ingest.fetchers import ProgressBars
    from retrieval.ingest.pipeline import Progress
    from retrieval.storage.database import SchemaStatus
    from retrieval.storage.locks import Activity

log = logging.getLogger(__name__)


def _digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class Assistant:
    """One installation's paperbot: settings, index and (optional) chat model."""

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
        self.settings = settings
        self._index = index
        self._chat_model = chat_model
        self._notice = notice or log.warning
        self._follows: ChannelFollows | None = None
        self._follows_lock = threading.Lock()  # Slack listener threads make it once
        # The index and the answering service are made once, whichever thread asks first (the Slack
        # workers and the start-up warm-up at the same moment: two indexes would open Chroma twice
        # at once, and chromadb's shared in-process system breaks, failing those searches).
        self._index_lock = threading.RLock()
        self._answering: AnsweringService | None = None
        open_data_dir(settings, notice=self._notice)

    def close(self) -> None:
        """Close the follows store if it was opened (it reopens on next use)."""
        if self._follows is not None:
            self._follows.close()

    # --- shared parts ------------------------------------------------------------------------

    @contextmanager
    def _writing(self, activity: Activity) -> Iterator[None]:
        """The writer lock of the data dir, for one write path (``retrieval.storage.locks``).

        The embedded vector index is closed before the lock is released, so that everything it
        holds in memory is on disk when the next writer opens it (this process reopens it on
        its next search).
        """
        from retrieval.storage.locks import hold_writer_lock

        with hold_writer_lock(self.settings, activity, notice=self._notice):
            try:
                yield
            finally:
                if self._index is not None:
                    self._index.dense.refresh()

    @property
    def index(self) -> PaperIndex:
        """The index, opened on first use (once, whichever thread asks first)."""
        if self._index is not None:
            return self._index
        with self._index_lock:
            if self._index is None:
                from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path, paper_embedder
                from retrieval.index.paper_index import PaperIndex
                from retrieval.storage.roster import names_of

                # vectors cached by (encoder, text hash): re-indexing and repairs never re-encode;
                # author filters follow the roster's aliases ("by Lenny Guo" finds Luanzheng Guo too)
                cache = EmbeddingCache(default_cache_path(self.settings.cache_dir))
                self._index = PaperIndex.open(self.settings, embed=paper_embedder(cache),
                                              roster_names=lambda name: names_of(self.settings, name))
            return self._index

    @property
    def chat_model(self) -> BaseChatModel | None:
        """The chat model in use, or None (extractive answers); built on first use when chosen ``FROM_SETTINGS``."""
        if isinstance(self._chat_model, FromSettings):
            from retrieval.answers.chat_model import resolve_chat_model  # imports no LLM stack when none is configured

            self._chat_model = resolve_chat_model(self._chat_model, self.settings)
        return self._chat_model

    @property
    def answering(self) -> AnsweringService:
        """Questions answered over this index (``retrieval.answers.service``): what ``ask`` and
        ``stream_ask`` delegate to."""
        if self._answering is not None:
            return self._answering
        with self._index_lock:
            if self._answering is None:
                from retrieval.answers.service import AnsweringService

                self._answering = AnsweringService(self.index, self.settings, self.chat_model)
            return self._answering

    # --- the three jobs ----------------------------------------------------------------------

    def search(
        self, query: str, *, k: int = 10, offset: int = 0, filters: SearchFilters | None = None
    ) -> SearchResult:
        """Ranked records for ``query`` (filter phrases read out of it, merged under ``filters``)."""
        from retrieval.answers.question import parse_question

        parsed = parse_question(query, self.index.parse_question, filters=filters)
        outcome = self.index.retrieve(parsed.search_text, k + offset, parsed.search_filters)
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

    @property
    def relevance_threshold(self) -> float:
        """The threshold in force for records with an abstract (``retrieval.answers.evidence.resolve_policy``)."""
        from retrieval.answers.evidence import resolve_min_relevance

        return resolve_min_relevance(self.settings)

    def summarize(self, name: str, *, since: int | None = None) -> ScholarSummaryResult | AmbiguousScholarResult:
        from retrieval.scholars.summary import summarize_scholar
        from retrieval.storage.roster import Roster

        if not name.strip():
            raise InputError("The scholar's name is empty.", hint='Try: paperbot summarize "Zhao Zhang"')
        return summarize_scholar(
            self.index, self.settings, name.strip(), since=since, chat_model=self.chat_model,
            roster=Roster.load(self.settings),
        )

    @staticmethod
    def pictures_missing() -> NotInstalledError | None:
        """What the scholar pictures lack: the error naming the extra to install when matplotlib
        (the optional extra ``plots``) is not installed, else None."""
        from retrieval.scholars.plot_support import plots_missing

        return plots_missing()

    def render_scholar_plots(self, summary: ScholarSummaryResult, out_dir: Path) -> list[Path]:
        """Draw the summary's co-author network and timeline into ``out_dir``; ``NotInstalledError``
        without the optional extra ``plots``."""
        if (missing := self.pictures_missing()) is not None:
            raise missing
        from retrieval.scholars.plots import render_plots

        outside = not Path(out_dir).absolute().is_relative_to(self.settings.data_dir.absolute())
        made = [folder for folder in (Path(out_dir), *Path(out_dir).parents) if not folder.exists()]
        paths = render_plots(summary, out_dir)
        if outside:  # the user's own directory: their umask, not the data dir's
            with_user_permissions([*made, *paths])
        return paths

    def collaborators(
        self, topic: str, *, for_name: str | None = None, new_only: bool = False, limit: int = 10
    ) -> CollaboratorsResult:
        from retrieval.scholars.collaborators import find_collaborators

        if not topic.strip():
            raise InputError("The topic is empty.", hint='Try: paperbot collaborators "optical interconnects"')
        if self.index.count() == 0:  # say so, and how to fill it, rather than "nothing matches"
            return CollaboratorsResult(topic=topic.strip(), scholars=[], notice=self.index.explain_empty(None))
        return find_collaborators(self.index, self.settings, topic.strip(), for_name=for_name, new_only=new_only, limit=limit)

    def is_known_scholar(self, name: str) -> bool:
        """On the roster (name, alias or id), or an author of some indexed paper."""
        from retrieval.storage.roster import Roster

        if Roster.load(self.settings).find(name) is not None:
            return True
        return bool(self.index.knows_author(name))

    # --- the roster, syncs and fetches --------------------------------------------------------

    def scholars(self) -> list[Scholar]:
        """The roster, sorted by name."""
        from retrieval.storage.roster import Roster

        return Roster.load(self.settings).list()

    def add_scholar(self, name: str, *, orcid: str | None = None, openalex_id: str | None = None,
                    arxiv_name: str | None = None, aliases: Sequence[str] = ()) -> Scholar:
        """Put a scholar on the roster (``Roster.add``: a name or id already there is an ``InputError``)."""
        from retrieval.storage.roster import Roster

        return Roster.load(self.settings).add(name, orcid=orcid, openalex_id=openalex_id, arxiv_name=arxiv_name,
                                              aliases=aliases)

    def remove_scholar(self, name: str) -> Scholar:
        """Take the scholar known by ``name`` (any name, alias or id) off the roster; papers stay indexed."""
        from retrieval.storage.roster import Roster

        return Roster.load(self.settings).remove(name)

    def sync(self, *, progress: Callable[[SyncEvent], None] | None = None) -> SyncReport:
        """Fetch new works of every roster scholar from all sources into the index."""
        from retrieval.ingest.sync import sync_roster

        with self._writing("sync"):
            return sync_roster(self.settings, self.index, progress=progress)

    def fetch(self, source: str, *, author: str | None = None, query: str | None = None, ids: Sequence[str] = (),
              orcid: str | None = None, dois: Sequence[str] = (), since: date | None = None,
              max_results: int | None = None, bars: ProgressBars | None = None) -> FetchResult:
        """Fetch works from arXiv, OpenAlex or Crossref, selected one way, and index what arrived
        (``retrieval.ingest.fetchers``; a source failing part-way keeps what it delivered)."""
        from retrieval.ingest.fetchers import DEFAULT_MAX_RESULTS, FetchRequest, fetch_and_index
        from retrieval.storage.locks import refuse_read_only

        refuse_read_only(self.settings, "ingest")  # before any time is spent on the network
        request = FetchRequest(source, author=author, query=query, ids=tuple(ids), orcid=orcid, dois=tuple(dois),
                               since=since, max_results=max_results or DEFAULT_MAX_RESULTS)
        return fetch_and_index(self.settings, request, self.ingest_papers, bars)

    # --- follows (the Slack door's alerts) ------------------------------------------------------

    @property
    def follows(self) -> ChannelFollows:
        """Follow, unfollow, list and the alerts queue (``retrieval.alerts.channels``)."""
        with self._follows_lock:
            if self._follows is None:
                from retrieval.alerts.channels import ChannelFollows

                self._follows = ChannelFollows(self.settings, papers=self.papers, is_known_scholar=self.is_known_scholar)
            return self._follows

    # --- checks ------------------------------------------------------------------------------

    def database_status(self) -> SchemaStatus:
        """The database's backend, place and schema revision, read without changing anything (``paperbot doctor``)."""
        from retrieval.storage.database import schema_status

        return schema_status(self.settings)

    def upgrade_database(self, notice: Callable[[str], None] | None = None) -> tuple[SchemaStatus, SchemaStatus]:
        """Bring the database to this code's schema now (``paperbot db upgrade``); before and after."""
        from retrieval.storage.migrate import upgrade_database

        return upgrade_database(self.settings, notice=notice)

    def readiness(self) -> Readiness:
        """Whether this process can answer now (the HTTP door's ``/readyz``): the vector index
        answers, and the database does (its schema revision read; one behind this code's is
        upgraded on next use). Cheap (one count of the vectors, one schema read); every failure
        is a check's message, never an exception."""
        checks: dict[str, str] = {}
        try:  # first: opening the index creates (or upgrades) the database's schema on first use
            checks["vector_index"] = f"ok: {self.index.dense.count():,} vectors"
        except PaperbotError as error:
            checks["vector_index"] = str(error)
        try:  # a schema behind this code's is upgraded on next use (under the database's lock): still ready
            checks["database"] = "ok: " + self.database_status().describe().splitlines()[0].removeprefix("Database: ")
        except PaperbotError as error:
            checks["database"] = str(error)
        return Readiness(ready=all(value.startswith("ok: ") for value in checks.values()), checks=checks)

    def check_consistency(self) -> ConsistencyReport:
        """Whether the record store, the vectors and BM25 agree (``paperbot doctor``)."""
        return self.index.check_consistency()

    def probe_model(self) -> ModelProbe:
        """How fast the chat model answers and whether the settings fit it (``paperbot doctor``;
        ``retrieval.answers.model_probe``): the model given, or a probe-sized one built from the
        settings; not configured when there is none."""
        from retrieval.answers import model_probe  # the LLM stack only when a model is measured

        if self._chat_model is None:
            return ModelProbe(configured=False)
        given = None if isinstance(self._chat_model, FromSettings) else self._chat_model
        return model_probe.probe_model(self.settings, given)

    def repair(self, *, progress: Callable[[int, int], None] | None = None,
               force: bool = False) -> ConsistencyReport:
        """Make the record store, the vectors and BM25 agree again (``PaperIndex.repair``; ``force``
        drops vectors even when the record store looks lost)."""
        with self._writing("repair"):
            return self.index.repair(progress=progress, force=force)

    # --- records -----------------------------------------------------------------------------

    def papers(self, ids: Sequence[str]) -> list[Paper]:
        found = self.index.get_many(list(ids))
        return [found[i] for i in ids if i in found]

    def to_bibtex(self, papers: Sequence[Paper]) -> str:
        from retrieval.sources.files.bibtex_writer import to_bibtex

        return to_bibtex(papers)

    def export(self, fmt: str = "jsonl") -> Iterator[str]:
        """Every indexed record with its provenance: JSON lines, or one BibTeX text."""
        papers = self.index.iter_papers()
        if fmt == "bibtex":
            yield self.to_bibtex(list(papers))
            return
        for paper in papers:
            yield paper.model_dump_json(exclude_none=True) + "\n"

    def count(self) -> int:
        """How many records are indexed."""
        return self.index.count()

    def ingested_before(self, path: Path, marker: str) -> bool:
        """Whether this very file (by content) was indexed and recorded under ``marker`` (``mark_ingested``)."""
        return self.index.store.get_meta(marker) == _digest(path)

    def mark_ingested(self, path: Path, marker: str) -> None:
        """Record that ``path`` as it is now was indexed (`paperbot demo` indexes its sample once)."""
        self.index.store.set_meta(marker, _digest(path))

    def holds_marked_file(self, marker: str) -> bool:
        """Whether some version of a file was recorded under ``marker`` here; opens nothing but
        the record store, and creates none when the data dir has no index yet."""
        if self._index is not None:
            return self._index.store.get_meta(marker) is not None
        if self.settings.database_url is None and not self.settings.database_path.exists():
            return False
        from retrieval.storage.records import RecordStore

        store = RecordStore.open(self.settings)  # the record store alone: no vector index opened
        try:
            return store.get_meta(marker) is not None
        finally:
            store.close()

    def forget_marked_file(self, marker: str) -> None:
        """Drop the ``mark_ingested`` record of ``marker`` (its records were taken out)."""
        self.index.store.delete_meta(marker)

    def ingest_files(
        self, paths: Sequence[Path], *, progress: Progress | None = None, fmt: str | None = None
    ) -> IngestReport:
        """Index the files (each in ``fmt``, else its detected format); see ``retrieval.ingest.pipeline``."""
        from retrieval.ingest.pipeline import ingest_papers, read_files

        papers, report = read_files(paths, fmt=fmt)
        if papers:  # nothing read: the index (and its vector store) is not even opened
            with self._writing("ingest"):
                report.extend(ingest_papers(self.index, papers, progress=progress))
        return report

    def ingest_papers(self, papers: Sequence[Paper], *, progress: Progress | None = None) -> IngestReport:
        """Merge fetched records (``paperbot ingest arxiv|openalex|crossref``) into the index."""
        from retrieval.ingest.pipeline import ingest_papers

        with self._writing("ingest"):
            return ingest_papers(self.index, papers, progress=progress)

    def remove_sources(
        self, paths: Sequence[Path], *, label: str | None = None, fmt: str | None = None, dry_run: bool = False
    ) -> RemovalReport:
        """Take the records the files were ingested into back out of the index.

        Each file is read again and matched with what it became (``retrieval.ingest.removal``):
        records only its entries describe are deleted; records other sources describe too are
        kept without the files' provenance and the fields only they supplied, and listed. ``dry_run``: report the same without changing anything.
        ``label`` names the source in the report (default: the paths).
        """
        from retrieval.ingest.pipeline import read_files
        from retrieval.ingest.removal import plan_removal

        entries, read = read_files(paths, fmt=fmt)
        report = RemovalReport(source=label or ", ".join(str(path) for path in paths), dry_run=dry_run,
                               files=read.files, skipped=read.skipped)
        if not entries:
            return report
        if dry_run:
            plan = plan_removal(self.index, entries)
        else:
            with self._writing("remove"):  # planned under the lock: no writer changes it in between
                plan = plan_removal(self.index, entries)
                if plan.remove:
                    self.index.delete(plan.remove)
                if plan.kept:
                    self.index.upsert([kept.record for kept in plan.kept],
                                      replaces={kept.record.id: kept.id for kept in plan.kept})
        report.removed = plan.remove
        report.kept = [KeptAfterRemoval(k.record.id, k.title, k.other_sources, k.fields_removed) for k in plan.kept]
        report.not_indexed = plan.not_indexed
        return report

    def stats(self) -> IndexStats:
        from retrieval.index.stats import index_stats

        return index_stats(self.index, len(self.scholars()))

    def papers_per_scholar(self) -> dict[str, int]:
        """Per roster scholar, the indexed papers one of whose authors could be them (`paperbot stats`)."""
        from retrieval.index.stats import papers_per_scholar

        scholars = self.scholars()
        return papers_per_scholar(self.index.iter_papers() if scholars else iter(()), scholars)
