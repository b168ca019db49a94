"""The facade both doors call: ask, search, summarize, collaborators, ingest, fetch, sync,
the roster, follows, stats and checks.

The Slack app and the CLI hold one ``Assistant`` each and never reach past it, so the two
doors always behave the same (``tests/test_architecture.py``: the doors import only this, the
result types, the errors and the settings). It owns the lazily opened index, chat model and
follows store; each operation delegates to the concern that does it (``ingest.fetchers``,
``ingest.roster``, ``alerts.follows``, ``answers``, ``scholars``).

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
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.config import Settings, open_data_dir, with_user_permissions
from retrieval.errors import InputError
from retrieval.records.paper import Paper
from retrieval.results import (
    AmbiguousScholarResult,
    AnswerEvent,
    AnswerResult,
    Citation,
    CollaboratorsResult,
    FetchResult,
    Final,
    IndexStats,
    IngestReport,
    Scholar,
    ScholarSummaryResult,
    SearchFilters,
    SearchHit,
    SearchResult,
    SyncEvent,
    SyncReport,
)

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from retrieval.alerts.channels import ChannelFollows
    from retrieval.answers.question_shape import QuestionShape
    from retrieval.index.maintenance import ConsistencyReport
    from retrieval.index.paper_index import PaperIndex
    from retrieval.ingest.fetchers import ProgressBars
    from retrieval.ingest.pipeline import Progress
    from retrieval.storage.locks import Activity

_UNSET = object()
log = logging.getLogger(__name__)


def _with_notice(result: AnswerResult, *notices: str | None) -> AnswerResult:
    """Append notices (a capped question, the filter that emptied the result) to the answer's."""
    parts = [result.notice, *notices]
    combined = " ".join(part for part in parts if part)
    return result.model_copy(update={"notice": combined or None})


def _digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _listing_abstention(question: str) -> AnswerResult:
    """A listing with nothing to list; ``Assistant._finish`` adds the filter that emptied it."""
    from retrieval.answers.extractive import abstention

    return abstention(question, "extractive")


class Assistant:
    """One installation's paperbot: settings, index and (optional) chat model."""

    def __init__(
        self,
        settings: Settings,
        *,
        index: PaperIndex | None = None,
        chat_model: BaseChatModel | object | None = _UNSET,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        """``notice`` receives one-line messages for the user that are not results: the data dir
        made private, waiting for another writer (default: the log)."""
        self.settings = settings
        self._index = index
        self._chat_model = chat_model
        self._notice = notice or log.warning
        self._follows: ChannelFollows | None = None
        self._follows_lock = threading.Lock()  # Slack listener threads make it once
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
        if self._chat_model is _UNSET:
            from retrieval.answers.chain import configured_chat_model  # imports no LLM stack when none is configured

            self._chat_model = configured_chat_model(self.settings)
        return self._chat_model  # type: ignore[return-value]

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None) -> list[SearchHit]:
        """Hybrid search on the question with its filter phrases ("since 2024") taken out."""
        cleaned, _ = self.index.parse_question(query)
        return self.index.search(cleaned or query, k=k, filters=filters)

    def _prepare(self, text: str, filters: SearchFilters | None) -> tuple[str, SearchFilters, str | None]:
        """Validate and cap a question; read filters ("since 2024", "by Zhao Zhang") out of it.

        Returns the question to use, the merged filters and a notice (e.g. the cap) or None.
        """
        from retrieval.index.filters import merge_filters, prepare_query

        prepared = prepare_query(text)
        _, parsed = self.index.parse_question(prepared.text)
        return prepared.text, merge_filters(filters, parsed), prepared.notice

    # --- the three jobs ----------------------------------------------------------------------

    def search(
        self, query: str, *, k: int = 10, offset: int = 0, filters: SearchFilters | None = None
    ) -> SearchResult:
        question, merged, notice = self._prepare(query, filters)
        cleaned, _ = self.index.parse_question(question)
        outcome = self.index.retrieve(cleaned or question, k + offset, None if merged.is_empty() else merged)
        hits = outcome.hits[offset:]
        citations = [Citation.from_paper(offset + i + 1, hit.paper, hit.score) for i, hit in enumerate(hits)]
        notices = " ".join(part for part in (notice, outcome.empty_reason if not hits else None) if part)
        return SearchResult(query=query, results=citations, notice=notices or None)

    def _rarity(self, filters: SearchFilters) -> Callable[[str], float] | None:
        """``PaperIndex.term_rarity``, with the words of the filters' names left out: "papers by
        Aditya Grover on diffusion" must find diffusion in the records, not "Grover". None for
        an index too small for word frequencies to say which word is specific
        (``evidence.RARITY_MIN_RECORDS``)."""
        from retrieval.answers.evidence import RARITY_MIN_RECORDS
        from retrieval.text import content_terms

        if self.index.count() < RARITY_MIN_RECORDS:
            return None
        named = content_terms(" ".join([*filters.authors, filters.venue or ""]))
        rarity = self.index.term_rarity
        return lambda term: 0.0 if term in named else rarity(term)

    def _answer_inputs(
        self, question: str, k: int, filters: SearchFilters | None, history: Sequence[tuple[str, str]]
    ) -> tuple[dict[str, object], SearchFilters, str | None]:
        """Everything ``answer_question``/``stream_answer`` take, plus the filters and a notice."""
        text, merged, notice = self._prepare(question, filters)
        inputs: dict[str, object] = {
            "question": text,
            "retriever": self._retrieve,
            "settings": self.settings,
            "k": k,
            "filters": None if merged.is_empty() else merged,
            "history": history,
            "chat_model": self.chat_model,
            "min_relevance": None,  # the chain resolves it from settings (retrieval.answers.evidence.resolve_policy)
            "rarity": self._rarity(merged),
        }
        return inputs, merged, notice

    def _shape(self, question: str, merged: SearchFilters, history: Sequence[tuple[str, str]]) -> QuestionShape:
        """Listing, topic or mixed (``retrieval.answers.question_shape``).

        In a thread, a question stating only years ("and since 2024?") leans on what came
        before: it is answered as a topic within the years, not as a listing of the whole index.
        """
        from retrieval.answers.question_shape import QuestionShape, question_shape

        cleaned, _ = self.index.parse_question(question)
        shape = question_shape(question, cleaned, merged)
        if shape.kind == "listing" and history and not (merged.authors or merged.venue):
            return QuestionShape("mixed", merged, cleaned)
        return shape

    def _listing(self, question: str, merged: SearchFilters, *, notice: str | None = None) -> AnswerResult | None:
        """All records matching the filters as a cited listing; None when none matches."""
        from retrieval.answers.listing import LISTING_NOTICE, listing_answer

        papers = self.index.matching_papers(merged)
        if not papers:
            return None
        return listing_answer(question, papers, merged, notice=" ".join(p for p in (notice, LISTING_NOTICE) if p))

    def _finish(self, result: AnswerResult, filters: SearchFilters, notice: str | None,
                shape: QuestionShape | None = None) -> AnswerResult:
        """Add the question's notice, kind and filters and, for an abstention, the filter that emptied the result."""
        from retrieval.answers.question_shape import applied_filters

        empty_reason = None
        if result.abstained:
            empty_reason = self.index.explain_empty(None if filters.is_empty() else filters)
        if shape is not None:
            result = result.model_copy(update={"kind": shape.kind, "filters": applied_filters(filters)})
        return _with_notice(result, notice, empty_reason)

    def _by_shape(self, inputs: dict[str, object], merged: SearchFilters, shape: QuestionShape,
                  result: AnswerResult) -> AnswerResult:
        """A mixed question whose topic answer abstained lists its filtered set instead, when there is one."""
        from retrieval.answers.listing import NO_TOPIC_NOTICE

        if shape.kind != "mixed" or not result.abstained:
            return result
        return self._listing(str(inputs["question"]), merged, notice=NO_TOPIC_NOTICE) or result

    def ask(
        self,
        question: str,
        *,
        k: int = 8,
        filters: SearchFilters | None = None,
        history: Sequence[tuple[str, str]] = (),
    ) -> AnswerResult:
        """A cited answer: a listing of the filtered records, a topic answer, or a topic within filters."""
        from retrieval.answers.chain import answer_question

        inputs, merged, notice = self._answer_inputs(question, k, filters, history)
        shape = self._shape(str(inputs["question"]), merged, history)
        if shape.kind == "listing":
            listed = self._listing(str(inputs["question"]), merged)
            result = listed or _listing_abstention(str(inputs["question"]))
        else:
            result = self._by_shape(inputs, merged, shape, answer_question(**inputs))  # type: ignore[arg-type]
        return self._finish(result, merged, notice, shape)

    def stream_ask(
        self,
        question: str,
        *,
        k: int = 8,
        filters: SearchFilters | None = None,
        history: Sequence[tuple[str, str]] = (),
    ) -> Iterator[AnswerEvent]:
        """Text deltas as the model writes, then ``Final`` with the validated result.

        A listing needs no model: it arrives as one ``Final``. A mixed question whose topic
        answer abstains ends with a ``Final`` listing the filtered set (replacing any deltas).
        """
        from retrieval.answers.chain import stream_answer

        inputs, merged, notice = self._answer_inputs(question, k, filters, history)
        text = str(inputs["question"])
        shape = self._shape(text, merged, history)
        if shape.kind == "listing":
            listed = self._listing(text, merged) or _listing_abstention(text)
            return iter([Final(self._finish(listed, merged, notice, shape), query=text)])
        events = stream_answer(**inputs)  # type: ignore[arg-type]

        def finished() -> Iterator[AnswerEvent]:
            for event in events:
                if isinstance(event, Final):
                    result = self._by_shape(inputs, merged, shape, event.result)
                    event = replace(event, result=self._finish(result, merged, notice, shape))
                yield event

        return finished()

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

    def render_scholar_plots(self, summary: ScholarSummaryResult, out_dir: Path) -> list[Path]:
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

    def check_consistency(self) -> ConsistencyReport:
        """Whether the record store, the vectors and BM25 agree (``paperbot doctor``)."""
        return self.index.check_consistency()

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

    @staticmethod
    def file_formats() -> tuple[str, ...]:
        """The file formats ``ingest_files`` reads (``fmt``), in the order detection tries them."""
        from retrieval.sources.files.detect import FORMATS

        return FORMATS

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

    def stats(self) -> IndexStats:
        from retrieval.index.stats import index_stats

        return index_stats(self.index, len(self.scholars()))

    def papers_per_scholar(self) -> dict[str, int]:
        """Per roster scholar, the indexed papers one of whose authors could be them (`paperbot stats`)."""
        from retrieval.index.stats import papers_per_scholar

        scholars = self.scholars()
        return papers_per_scholar(self.index.iter_papers() if scholars else iter(()), scholars)
