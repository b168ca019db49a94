"""The read path: hybrid search, listings by filter, and why a result is empty.

Each retriever returns up to ``fetch_k`` (50) candidates *with the filters applied inside it*:
one definition of what a filter allows, the BM25 snapshot's per-record fields (a bm25s weight
mask; for Chroma, the ids that mask allows). For every candidate all signals are exact: the
cosine similarity to the query vector (vectors of lexical-only candidates are fetched from
Chroma), the BM25 score scaled by the best BM25 score of the query, and the query-term
coverage (``lexical``). They are fused as the weighted mean
``score = (0.7 * cosine + 0.3 * trust * bm25 / best_bm25 + 0.2 * coverage) / 1.2``
(``fusion.FusionConfig``), where ``trust`` is 1 by default and, with ``lexical_trust_power`` set,
the best coverage any record reaches to that power (``fusion.lexical_trust``), then near-duplicates are dropped (same normalised title, or cosine
> 0.97 between records: the better-ranked one stays) and the list is cut to ``k``. A hit counts
as relevant from ``relevance_threshold``. Why this fusion and this threshold (the measurements,
the alternatives tried): ``docs/index.md``.

Acronyms (``FusionConfig.acronym_bridging``, on by default): before the signals are read, the
titles and abstracts of the candidates both retrievers found are scanned for acronym
definitions (``acronyms``); when the query writes an acronym or a long form they define, BM25
and coverage are scored again with the concept matched in either writing
(``LexicalSnapshot.score_groups``), and its lexical candidates taken from that scoring.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from retrieval.config import Settings
from retrieval.errors import InputError
from retrieval.index.acronyms import agreed, defined_in, term_groups
from retrieval.index.catch_up import MigrationCatchUp, OtherWriters
from retrieval.index.dense import DenseStore
from retrieval.index.filters import FilterResolver, ResolvedFilters, prepare_query
from retrieval.index.fusion import (
    CALIBRATED_MIN_RELEVANCE,
    FusionConfig,
    drop_near_duplicates,
    fused_score,
    lexical_trust,
    scaled_lexical,
)
from retrieval.index.lexical import LexicalIndex, LexicalScores, LexicalSnapshot, top_positions
from retrieval.index.maintenance import EncoderGuard
from retrieval.records.paper import Paper, title_key
from retrieval.results import SearchFilters, SearchHit
from retrieval.storage.records import RecordStore, RecordText
from retrieval.text import bm25_tokens

log = logging.getLogger(__name__)

MAX_K = 200
Mode = Literal["hybrid", "dense", "lexical"]


def relevance_threshold(settings: Settings) -> float:
    """The fused score a hit needs to be relevant: PAPERBOT_MIN_RELEVANCE, else the calibrated one.

    The same rule as ``answers.evidence.resolve_policy`` without a caller's own threshold (a
    test keeps the two doors equal).
    """
    return settings.min_relevance if settings.min_relevance is not None else CALIBRATED_MIN_RELEVANCE


@dataclass
class SearchOutcome:
    """A search with everything the doors may want to tell the user."""

    query: str  # the text actually searched (capped, whitespace-normalised)
    hits: list[SearchHit]
    filters: SearchFilters | None = None
    notices: list[str] = field(default_factory=list)  # e.g. "Query capped at 2,000 characters ..."
    empty_reason: str | None = None  # set when hits is empty because of the filters / an empty index
    # the query's embedding the dense retriever compared with the stored vectors (unit length);
    # None when the search did not encode the query (lexical mode, or nothing could match)
    query_vector: np.ndarray | None = None

    @property
    def notice(self) -> str | None:
        """Notices and the empty reason as one line (``SearchResult.notice``)."""
        parts = [*self.notices, *([self.empty_reason] if self.empty_reason else [])]
        return " ".join(parts) or None


@dataclass
class _Candidate:
    paper_id: str
    dense: float | None
    lexical_raw: float
    coverage: float
    vector: np.ndarray | None


class Searcher:
    """Searches one index: both retrievers, fusion, near-duplicate removal (module docstring)."""

    def __init__(self, store: RecordStore, dense: DenseStore, lexical: LexicalIndex, *, encoders: EncoderGuard,
                 resolver: FilterResolver, fusion: FusionConfig, migration: MigrationCatchUp,
                 other_writers: OtherWriters) -> None:
        self.store = store
        self.dense = dense
        self.lexical = lexical
        self.encoders = encoders
        self.resolver = resolver
        self.fusion = fusion
        self.migration = migration
        self.other_writers = other_writers

    def run(self, query: str, k: int, filters: SearchFilters | None, mode: Mode) -> SearchOutcome:
        """Search with ``mode``'s retrievers plus notices (query capped) and, when empty, the reason why."""
        self.migration.run()
        prepared = prepare_query(query)
        if not 1 <= k <= MAX_K:
            raise InputError(f"The number of results must be between 1 and {MAX_K} (got {k}).",
                             hint="Use e.g. --k 10.")
        outcome = SearchOutcome(query=prepared.text, hits=[], filters=filters,
                                notices=[prepared.notice] if prepared.notice else [])
        resolved = self.resolver.resolve(filters)
        if resolved.matches_nothing():
            outcome.empty_reason = self.explain_empty(filters)
            return outcome
        candidates, outcome.query_vector, best_coverage = self._candidates(
            prepared.text, resolved, max(self.fusion.fetch_k, k), mode)
        outcome.hits = self._hits(candidates, k, mode, lexical_trust(best_coverage, self.fusion))
        if not outcome.hits:
            outcome.empty_reason = self.explain_empty(filters)
            if outcome.empty_reason is None and mode != "lexical" and self.dense.count() == 0:
                outcome.empty_reason = ("The vector index is empty although papers are recorded: "
                                        "run `paperbot doctor --repair` to rebuild it.")
        return outcome

    def matching_papers(self, filters: SearchFilters) -> list[Paper]:
        """Every indexed record matching ``filters`` (same name rules as search), newest first.

        The evidence of a listing question ("papers by Zhao Zhang since 2025"): all records, not
        the top-k by similarity. Empty filters match nothing here (a listing of the whole index
        is never what a question asks for).
        """
        if filters.is_empty():
            return []
        resolved = self.resolver.resolve(filters)
        if resolved.matches_nothing():
            return []
        papers = self.store.list_matching(since=resolved.since, until=resolved.until,
                                          author_keys=resolved.author_keys, venue_keys=resolved.venue_keys)
        # the store orders by year; full dates (when known) order within a year
        return sorted(papers, key=lambda paper: paper.published or "", reverse=True)

    def explain_empty(self, filters: SearchFilters | None) -> str | None:
        """Why nothing can match: an empty index, or the first filter that rules everything out.

        Returns None when the filters do match indexed records.
        """
        if self.store.count() == 0:
            return "No paper is indexed yet: add some with `paperbot ingest` (or try `paperbot demo`)."
        if filters is None or filters.is_empty():
            return None
        resolved = self.resolver.resolve(filters)
        oldest, newest = self.store.year_range()
        since, until = filters.since, filters.until
        if since is not None and until is not None and since > until:
            return f"The year range {since}-{until} is empty."
        if since is not None and self.store.count_matching(since=since) == 0:
            newest_note = f" (the newest is from {newest})" if newest else ""
            if until == since:
                return f"No indexed paper is from {since}{newest_note}."
            return f"No indexed paper is from {since} or later{newest_note}."
        if until is not None and self.store.count_matching(until=until) == 0:
            oldest_note = f" (the oldest is from {oldest})" if oldest else ""
            return f"No indexed paper is from {until} or earlier{oldest_note}."
        if since is not None and until is not None and self.store.count_matching(since=since, until=until) == 0:
            if since == until:
                return f"No indexed paper is from {since}."
            return f"No indexed paper is from {since}-{until}."
        if resolved.author_keys is not None and not resolved.author_keys:
            return f"No indexed paper is by {' or '.join(filters.authors)}."
        if resolved.venue_keys is not None and not resolved.venue_keys:
            return f"No indexed paper appeared in a venue matching {filters.venue!r}."
        count = self.store.count_matching(since=since, until=until, author_keys=resolved.author_keys,
                                          venue_keys=resolved.venue_keys)
        if count == 0:
            return f"No indexed paper matches all of: {filters.describe()}."
        return None

    def _candidates(self, text: str, filters: ResolvedFilters, fetch: int,
                    mode: Mode) -> tuple[list[_Candidate], np.ndarray | None, float]:
        """Candidates from both retrievers (filters applied inside each) with all their raw
        signals, the query's vector (None when ``mode`` does not encode the query) and the best
        query-term coverage of any record the filters allow (0 without a lexical side, or when the
        fusion does not weigh BM25 by it). With ``acronym_bridging``, BM25 is scored again when
        the candidates define an acronym the query writes either way (``_bridged``)."""
        lexical_scores = None
        snapshot = None
        filtered = not filters.is_empty()
        allowed = None
        if mode in ("hybrid", "lexical") or filtered:  # a filter is applied through the snapshot's fields
            snapshot = self.lexical.current()
            allowed = snapshot.mask(filters)
        lexical_side = snapshot if mode in ("hybrid", "lexical") else None
        if lexical_side is not None:
            lexical_scores = lexical_side.score_all(text, allowed)
        query_vector = None
        dense_hits: list[tuple[str, float, np.ndarray]] = []
        if mode in ("hybrid", "dense"):
            self.encoders.check()
            # after the BM25 snapshot: every record it holds was stored, hence its vector written
            # (vectors go first), by the generation read here, so a reload makes all of them visible
            self.other_writers.see()
            query_vector = np.asarray(self.encoders.encoder.encode([text])[0], dtype=np.float32)
            within = snapshot.allowed_ids(allowed) if snapshot is not None and filtered else None
            dense_hits = self.dense.query(query_vector, fetch, within)
            if snapshot is not None and filtered and within is None:
                # the filter allows every record of the snapshot: none written since may slip in
                dense_hits = [hit for hit in dense_hits if snapshot.position(hit[0]) is not None]
        lexical_ids: list[str] = []
        if lexical_side is not None and lexical_scores is not None:
            lexical_ids = [lexical_side.ids[i] for i in top_positions(lexical_scores.bm25, fetch)]
        if lexical_side is not None and self.fusion.acronym_bridging:
            texts = self.store.texts([*(item for item, _, _ in dense_hits), *lexical_ids]).values()
            bridged = self._bridged(text, lexical_side, allowed, texts)
            if bridged is not None:
                lexical_scores = bridged
                lexical_ids = [lexical_side.ids[i] for i in top_positions(bridged.bm25, fetch)]
        best_coverage = 0.0
        if self.fusion.lexical_trust_power and lexical_scores is not None and lexical_scores.coverage.size:
            best_coverage = float(lexical_scores.coverage.max())  # read only when it weighs

        def lexical_signals(paper_id: str) -> tuple[float, float]:
            """(raw BM25, coverage) of one record; 0 for records the BM25 index does not hold yet."""
            position = snapshot.position(paper_id) if snapshot is not None else None
            if lexical_scores is None or position is None:
                return 0.0, 0.0
            return float(lexical_scores.bm25[position]), float(lexical_scores.coverage[position])

        candidates = {item: _Candidate(item, cosine, *lexical_signals(item), vector)
                      for item, cosine, vector in dense_hits}
        missing = [item for item in lexical_ids if item not in candidates]
        stored = self.dense.vectors(missing) if missing and query_vector is not None else {}
        for item in missing:
            vector = stored.get(item)
            cosine = float(vector @ query_vector) if vector is not None and query_vector is not None else None
            candidates[item] = _Candidate(item, cosine, *lexical_signals(item), vector)
        return list(candidates.values()), query_vector, best_coverage

    @staticmethod
    def _bridged(text: str, snapshot: LexicalSnapshot, allowed: np.ndarray | None,
                 found: Iterable[RecordText]) -> LexicalScores | None:
        """The query's BM25 scores with each acronym or long form it writes matched in its other
        writing too, as the records ``found`` by the first search define them
        (``acronyms``); None when they define none the query writes."""
        meanings = agreed(defined_in(part for record in found for part in (record.title, record.abstract)))
        groups = term_groups(bm25_tokens(text), meanings) if meanings else None
        if groups is None:
            return None
        log.debug("search %r: acronyms read both ways: %s", text,
                  [(group.own, group.others) for group in groups if group.others])
        return snapshot.score_groups(groups, allowed)

    def _hits(self, candidates: list[_Candidate], k: int, mode: Mode, trust: float) -> list[SearchHit]:
        best_lexical = max((c.lexical_raw for c in candidates), default=0.0)
        scored: list[tuple[float, _Candidate, float]] = []
        for candidate in candidates:
            lexical = scaled_lexical(candidate.lexical_raw, best_lexical)
            if mode == "dense":
                score = candidate.dense if candidate.dense is not None else 0.0
            elif mode == "lexical":
                score = lexical
            else:
                score = fused_score(candidate.dense, lexical, self.fusion, candidate.coverage, trust)
            scored.append((score, candidate, lexical))
        scored.sort(key=lambda row: (-row[0], -(row[1].dense or 0.0), row[1].paper_id))
        # Records are read in slices: enough for k after near-duplicates are dropped, usually one.
        papers: dict[str, Paper] = {}
        kept: list[str] = []
        step = max(2 * k, 20)
        for start in range(0, len(scored), step):
            papers.update(self.store.get_many([row[1].paper_id for row in scored[: start + step]
                                               if row[1].paper_id not in papers]))
            ranked = [row for row in scored[: start + step] if row[1].paper_id in papers]
            kept = drop_near_duplicates(
                [row[1].paper_id for row in ranked],
                {row[1].paper_id: title_key(papers[row[1].paper_id].title) for row in ranked},
                {row[1].paper_id: row[1].vector for row in ranked if row[1].vector is not None},
                self.fusion.duplicate_cosine,
                limit=k,
            )
            if len(kept) >= k:
                break
        orphans = sum(1 for row in scored if row[1].paper_id not in papers)
        if orphans and len(kept) < k:
            log.warning("%d search candidates have no stored record; run `paperbot doctor`.", orphans)
        by_id = {row[1].paper_id: row for row in scored}
        hits = []
        for paper_id in kept:
            score, candidate, lexical = by_id[paper_id]
            hits.append(SearchHit(
                paper=papers[paper_id],
                score=round(float(score), 6),
                dense_score=None if candidate.dense is None else round(float(candidate.dense), 6),
                lexical_score=round(float(lexical), 6) if mode != "dense" else None,
            ))
        return hits
