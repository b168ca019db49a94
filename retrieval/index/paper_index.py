"""``PaperIndex``: the one object the rest of paperbot uses to reach the index.

It opens the record store (the source of truth), the dense index (Chroma, ``dense``) and the
BM25 index (``lexical``), composes the parts that do the work, and hands each call to one of them:

* ``search.Searcher``: hybrid search, listings by filter, why a result is empty;
* ``writes.IndexWriter``: ``upsert`` and ``delete``;
* ``filters.FilterResolver``: names typed in filters -> the indexed values they select;
* ``maintenance``: the encoder guard (``EncoderGuard``), ``check_consistency`` and ``repair``;
* ``catch_up``: following a record-store migration and other processes' writes.

The parts share the same store, Chroma and BM25 objects; none of them knows ``PaperIndex``.
How it all works and why (measurements, rejected alternatives, the commands that reproduce
them): ``docs/index.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from retrieval.config import Settings
from retrieval.index.background import Background, BackgroundCache
from retrieval.index.catch_up import MigrationCatchUp, OtherWriters
from retrieval.index.dense import DenseStore
from retrieval.index.encoders.base import Encoder
from retrieval.index.filters import FilterResolver, ResolvedFilters, RosterNames
from retrieval.index.fusion import FusionConfig
from retrieval.index.lexical import LexicalIndex
from retrieval.index.maintenance import ConsistencyReport, EmbedFn, EncoderGuard, Maintenance, Progress, embed_papers
from retrieval.index.search import Searcher, SearchOutcome, relevance_threshold
from retrieval.index.writes import IndexWriter, UpsertReport
from retrieval.records.paper import Paper
from retrieval.results import SearchFilters, SearchHit
from retrieval.storage.records import RecordStore

if TYPE_CHECKING:
    import numpy as np


class PaperIndex:
    """Facade over ``RecordStore`` + Chroma + BM25. Thread-safe for concurrent searches."""

    def __init__(
        self,
        settings: Settings,
        store: RecordStore,
        dense: DenseStore,
        lexical: LexicalIndex,
        encoder: Encoder | None = None,
        *,
        fusion: FusionConfig | None = None,
        embed: EmbedFn = embed_papers,
        encoder_factory: Callable[[Settings], Encoder] | None = None,
        roster_names: RosterNames | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.dense = dense
        self.lexical = lexical
        self.relevance_threshold: float = relevance_threshold(settings)
        self.encoders = EncoderGuard(settings, store, encoder, embed=embed, factory=encoder_factory)
        self.other_writers = OtherWriters(settings, store, dense)
        self.migration = MigrationCatchUp(store, dense, lexical, self.encoders.embed_unless_mixed)
        self.resolver = FilterResolver(store, roster_names)
        self.searcher = Searcher(store, dense, lexical, encoders=self.encoders, resolver=self.resolver,
                                 fusion=fusion or FusionConfig(), migration=self.migration, other_writers=self.other_writers)
        self.writer = IndexWriter(store, dense, encoders=self.encoders, migration=self.migration,
                                  other_writers=self.other_writers)
        self._backgrounds = BackgroundCache(settings.data_dir)
        self.maintenance = Maintenance(settings, store, dense, lexical, encoders=self.encoders,
                                       migration=self.migration, other_writers=self.other_writers)

    @classmethod
    def open(
        cls,
        settings: Settings,
        encoder: Encoder | None = None,
        *,
        fusion: FusionConfig | None = None,
        embed: EmbedFn = embed_papers,
        encoder_factory: Callable[[Settings], Encoder] | None = None,
        roster_names: RosterNames | None = None,
    ) -> PaperIndex:
        """Open (creating when needed) the index of ``settings.data_dir``.

        Nothing heavy happens here: Chroma is connected and the encoder loaded on first need,
        so ``count``/``iter_papers`` work without torch and without a running server.
        ``roster_names`` lets author filters follow roster aliases (the assistant passes
        ``storage.roster.names_of``); without it a name stands for itself.
        """
        store = RecordStore.open(settings)
        return cls(settings, store, DenseStore(settings), LexicalIndex(settings.lexical_dir, store), encoder,
                   fusion=fusion, embed=embed, encoder_factory=encoder_factory, roster_names=roster_names)

    def close(self) -> None:
        self.dense.close()
        self.store.close()

    def warm_up(self) -> None:
        """Do now what the first search would do lazily: load the encoder, reach Chroma, load BM25.

        For long-running doors (the Slack bot) and for the end of an ingest, so that the first
        question is answered at normal speed. Raises ``IndexUnavailableError`` when Chroma is down.
        """
        _ = self.encoders.encoder
        self.dense.ping()
        self.migration.run()
        self.lexical.current()

    @property
    def fusion(self) -> FusionConfig:
        """How the searches fuse dense and lexical scores (given at ``open``; read-only, so that
        what is reported is what the searches use)."""
        return self.searcher.fusion

    # --- the encoder ---------------------------------------------------------------------------

    @property
    def encoder(self) -> Encoder:
        """The current encoder, loaded on first use (``EncoderGuard``)."""
        return self.encoders.encoder

    def indexed_encoder(self) -> str | None:
        """Name of the encoder that made the stored vectors; None while no vector was written."""
        return self.encoders.indexed()

    def check_encoder(self) -> None:
        """Raise ``ConfigError`` when the stored vectors were made by another encoder."""
        self.encoders.check()

    # --- stored vectors (what the scholar code reads; nothing is encoded) -----------------------

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (``DenseStore.vectors``: missing ids are absent)."""
        return self.dense.vectors(ids)

    def nearest_many(self, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        """Each row's ``n`` nearest stored records as ``(id, cosine)`` (``DenseStore.nearest_many``)."""
        return self.dense.nearest_many(vectors, n)

    # --- records -------------------------------------------------------------------------------

    def get(self, paper_id: str) -> Paper | None:
        return self.store.get(paper_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Paper]:
        return self.store.get_many(ids)

    def find_matches(self, paper: Paper) -> list[Paper]:
        return self.store.find_matches(paper)

    def find_matches_many(self, papers: Sequence[Paper]) -> list[list[Paper]]:
        """``find_matches`` of each paper, read for the whole batch at once (``RecordStore.find_matches_many``)."""
        return self.store.find_matches_many(papers)

    def iter_papers(self) -> Iterator[Paper]:
        return self.store.iter_papers()

    def count(self) -> int:
        return self.store.count()

    # --- writes (writes.py) --------------------------------------------------------------------

    def upsert(
        self,
        papers: Sequence[Paper],
        *,
        replaces: Mapping[str, str] | None = None,
        progress: Progress | None = None,
    ) -> UpsertReport:
        """Index final records; ``replaces`` maps a new id to the old id it supersedes (``IndexWriter.upsert``)."""
        return self.writer.upsert(papers, replaces=replaces, progress=progress)

    def delete(self, ids: Sequence[str]) -> int:
        """Remove records (store first, then vectors); returns how many records existed."""
        return self.writer.delete(ids)

    def encoding_ahead(self, papers: Sequence[Paper]) -> AbstractContextManager[None]:
        """Within the block, upserts of ``papers`` on this thread take vectors a child process
        encoded ahead, when that pays (``IndexWriter.encoding_ahead``)."""
        return self.writer.encoding_ahead(papers)

    # --- filters (filters.py) ------------------------------------------------------------------

    def author_keys_for(self, name: str) -> set[str]:
        """Indexed author keys of every written name compatible with ``name`` or a roster alias of it."""
        return self.resolver.author_keys_for(name)

    def knows_author(self, name: str) -> bool:
        return self.resolver.knows_author(name)

    def knows_venue(self, name: str) -> bool:
        """True when ``name`` is an indexed venue, or an acronym that is a whole word of one."""
        return self.resolver.knows_venue(name)

    def parse_question(self, question: str) -> tuple[str, SearchFilters]:
        """``extract_filters`` with this index's authors and venues as the known names."""
        return self.resolver.parse_question(question)

    def resolve_filters(self, filters: SearchFilters | None) -> ResolvedFilters:
        """Expand author names and the venue substring to the indexed values they match."""
        return self.resolver.resolve(filters)

    def evidence_background(self) -> Background:
        """What this index's best record gives questions it was not built for
        (``retrieval.index.background``): measured once per change of state, kept in the data dir."""
        return self._backgrounds.of(self)

    def term_rarity(self, term: str) -> float:
        """How rare a stemmed word is in the index (its BM25 IDF; ``math.inf`` when no record
        has it): the evidence policy requires the question's rarest known word in the evidence
        (``retrieval.answers.evidence``, rule 4)."""
        return self.lexical.current().idf(term)

    # --- search (search.py) --------------------------------------------------------------------

    def search(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]:
        """Hybrid search: the ranked list users see (see ``retrieve`` for notices)."""
        return self.retrieve(query, k, filters).hits

    def retrieve(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> SearchOutcome:
        """Hybrid search plus notices (query capped) and, when empty, the reason why."""
        return self.searcher.run(query, k, filters, mode="hybrid")

    def dense_search(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]:
        """Dense retrieval only (score = cosine similarity); for benchmarks."""
        return self.searcher.run(query, k, filters, mode="dense").hits

    def lexical_search(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]:
        """BM25 only (score = BM25 scaled by the query's best); for benchmarks."""
        return self.searcher.run(query, k, filters, mode="lexical").hits

    def is_relevant(self, hit: SearchHit) -> bool:
        """True when the hit's score reaches the calibrated relevance threshold."""
        return hit.score >= self.relevance_threshold

    def matching_papers(self, filters: SearchFilters) -> list[Paper]:
        """Every indexed record matching ``filters``, newest first (the evidence of a listing question)."""
        return self.searcher.matching_papers(filters)

    def explain_empty(self, filters: SearchFilters | None) -> str | None:
        """Why nothing can match: an empty index, or the first filter that rules everything out."""
        return self.searcher.explain_empty(filters)

    # --- maintenance (maintenance.py) ----------------------------------------------------------

    def check_consistency(self) -> ConsistencyReport:
        """Compare store, Chroma and the BM25 index (``paperbot doctor``)."""
        return self.maintenance.check_consistency()

    def repair(self, progress: Progress | None = None, *, force: bool = False) -> ConsistencyReport:
        """Fix what ``check_consistency`` finds (``Maintenance.repair``; ``force`` drops the vectors
        of a record store that looks lost)."""
        return self.maintenance.repair(progress, force=force)
