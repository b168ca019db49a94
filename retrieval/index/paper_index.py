"""``PaperIndex``: the record store, the dense index (Chroma) and BM25 behind one facade.

Writes. ``upsert`` receives final (already merged) records. Unchanged records (same
``content_hash``) cost nothing; only records whose ``embedding_hash`` changed are embedded
again; a record whose id changed (``replaces``) keeps its old vector when its text did not
change. Write order: Chroma first, then the store in one transaction, then deleting the
vectors of replaced ids. A failure part-way therefore leaves at worst vectors without records
(ignored by search, removed by ``repair``), never records that look indexed but are not. The
BM25 index is rebuilt lazily on the first search after a change (see ``lexical``).

Search. Each retriever returns up to ``fetch_k`` (50) candidates *with the filters applied
inside it* (a Chroma ``where``; a bm25s weight mask). For every candidate all signals are
exact: the cosine similarity to the query vector (vectors of lexical-only candidates are
fetched from Chroma), the BM25 score scaled by the best BM25 score of the query, and the
query-term coverage (the IDF-weighted share of the query's distinct terms the record contains,
see ``lexical``). They are fused as the weighted mean
``score = (0.7 * cosine + 0.3 * bm25 / best_bm25 + 0.2 * coverage) / 1.2``
(``fusion.FusionConfig``), then near-duplicates are dropped (same normalised title, or cosine
> 0.97 between records: the better-ranked one stays) and the list is cut to ``k``.

Fusion choice. SciFact (BEIR split), nDCG@10 on the train / test claims, with the default
encoder (onnx-int8) and each query encoded alone, as ``search`` does (int8 quantises
activations per batch, so batch-encoded queries score differently). "keep" is the share of
answerable train / test claims whose top score passes a threshold calibrated at 5% false
accepts (see below). Chosen on the train claims only; test is reported, never used to choose.

    | variant                                              | train  | test   | keep (thr)           |
    | BM25 only, bm25s defaults k1 1.5 b 0.75             | 0.6980 | 0.6879 |                      |
    | BM25 only, k1 0.9 b 0.4 (the default now)            | 0.6972 | 0.6810 |                      |
    | dense only                                           | 0.6608 | 0.6453 |                      |
    | RRF k=60 / weighted RRF 1:1.3 k=10                   | 0.7145 / 0.7259 | 0.7064 / 0.7186 |   |
    | previous default: 0.7 cos + 0.3 BM25/max             | 0.7415 | 0.7373 | 96.4/95.3% (0.528)   |
    |   z-score per query, 0.5/0.5                         | 0.7371 | 0.7358 | 61.7/61.0%           |
    |   min-max per query, 0.5/0.5                         | 0.7375 | 0.7379 | (top score always 1) |
    |   + RM3 on BM25 (3 docs, 40 terms, 0.85 original)    | 0.7443 | 0.7320 | 96.7/95.3% (0.533)   |
    |   + dense Rocchio PRF (top 2 fused docs, 0.5)        | 0.7439 | 0.7405 | 96.3/96.0% (0.682)   |
    |   BM25 k1 0.9, b 0.4                                 | 0.7423 | 0.7378 | 96.9/96.0% (0.520)   |
    | * BM25 k1 0.9, b 0.4 + 0.2 coverage (default)        | 0.7441 | 0.7384 | 96.7/96.3% (0.506)   |
    |   same + hyphenated compounds as extra tokens        | 0.7427 | 0.7426 | 96.5/96.0% (0.506)   |
    |   BM25 0.9/0.4 + dense PRF (best train nDCG)         | 0.7478 | 0.7381 | 95.3/95.3% (0.679)   |

Also tried, no better on train: BM25F with a separate title field, title x1/x3, bm25s'
other BM25 variants, power transforms of either signal, adding rank terms to the score, a
logistic regression on score and rank features, dense title-only vectors, and candidate depth
100 (identical to 50). The default is the best train nDCG among the variants that need no
extra round trip and do not lower the abstention keep rate.

Measured later against a numpy replica of this fusion that reproduces the real index (the
default scores 0.7412 train / 0.7360 test in both):

    | variant                                                         | train  | test   |
    | dense MaxP: 3-sentence windows (+ title) embedded as well, cosine |        |        |
    |   = 0.5 whole-record + 0.5 best window (dense alone 0.678/0.670) | 0.7459 | 0.7329 |
    |   same, weights refit on train (0.75 cosine, 0.1 coverage, 0.3/0.7) | 0.7528 | 0.7372 |
    | one-character tokens kept ("vitamin D", "T cells")              | 0.7408 | 0.7360 |
    | adjacent-stem bigrams added to BM25                             | 0.7320 | 0.7264 |
    | BM25 weight adapted per query (x (1 + 0.2 z), z = standardised   |        |        |
    |   log of the query's best raw BM25 score), best of 32 on train  | 0.7444 | 0.7394 |

Window vectors lift dense retrieval by 0.02-0.03 on both splits, but what they add is what BM25
already contributes to the hybrid, and they cost four vectors per record; not adopted. The
per-query BM25 weight is the one variant that gains on both splits, +0.003, a tenth of the
noise and still under 0.74 on test; not adopted either (one more tuned parameter, a new
threshold calibration, for no measurable gain). Dense PRF has the best train
nDCG but needs a second Chroma query per search and inflates the top score of every query
(off-topic ones too), so fewer answerable claims pass the calibrated threshold; RM3 needs the
feedback records tokenised at query time and drops on test. All differences between these
variants are within noise: the paired bootstrap 95% interval of a test difference is about
+-0.011. The table was measured while the int8 encoder still ran queries in batches; with
today's one-text-per-run encoder the default gives 0.7412 train / 0.7360 test through the real
index (``bench/retrieval_quality.py``), just under the 0.74 target, whose gap (-0.004) is a
tenth of the test set's own 95% interval (-0.046 to +0.038).

Relevance threshold (``RELEVANCE_THRESHOLD``, an alias of ``evidence.CALIBRATED_MIN_RELEVANCE``;
the threshold in force is decided by ``evidence.resolve_policy`` alone, which also holds the
title-only cut and the rest of the evidence policy). Calibrated by
``bench/calibrate_threshold.py`` through ``PaperIndex.search`` on the fused score of the top
hit: the SciFact train claims against the SciFact corpus (answerable) and 500 of 1,000
off-topic queries (arXiv quant-ph and mixed-physics titles and first abstract sentences from
the shared fixtures) against the same corpus (unanswerable), at a 5% false-accept rate.
Result 0.506, rounded up to 0.51: it keeps 96.5% of the train and 96.0% of the test claims and
lets through 4.4% of the calibration and 5.2% of the held-out off-topic queries. Rerun the
script whenever the fusion changes. The figure transfers only roughly to other corpora:
title-only records (BibTeX without abstracts) are judged against their own calibration
(``bench/calibrate_threshold.py --title-only``, see ``retrieval.answers.evidence``).

Migrations. When the record store migrates records (``store._refresh_records``: cleaned author
names, ids re-keyed under the fold that keeps every script), Chroma and BM25 catch up on the
first use of the index (a search, an upsert, a delete, ``doctor``): ``_catch_up`` moves each
vector to its record's new id and rewrites its metadata (author keys), reusing the stored
vector whenever the text is unchanged, embeds only records whose text a merge changed, removes
the vectors of ids that no longer exist, and rebuilds BM25. Moves are forgotten batch by batch
after their vectors are written and the store's mark is cleared last, so an interrupted catch-up
simply runs again (every step is idempotent). Opening the index stays cheap: nothing here
runs before Chroma is needed anyway.

Encoders. Vectors of different encoders must not be mixed: the first upsert that embeds
records the encoder's name in the record store (``ENCODER_META_KEY``); afterwards searches and
embedding upserts with another encoder raise ``ConfigError`` naming both and the fix
(``paperbot doctor --repair`` re-embeds every record with the current encoder, or
PAPERBOT_ENCODER set back to the recorded one). See ``check_encoder`` and ``repair``.

Repair and the source of truth. ``repair`` makes Chroma and BM25 follow the record store, so
it deletes vectors whose record is gone. When the store holds no record, or fewer than half of
the ids Chroma has vectors for (``LOST_STORE_SHARE``), the store itself was most likely lost
or replaced (a 0-byte ``records.sqlite3`` opens as an empty store): ``repair`` then refuses
with ``RepairRefusedError`` saying so, and only ``force=True`` (``doctor --repair --force``)
drops those vectors. When the embedded Chroma cannot be read because its files are damaged
(``IndexDamagedError``), ``check_consistency`` reports it and ``repair`` rebuilds the dense
index: the damaged directory is moved aside (``chroma.damaged-<UTC time>``, kept), a new
collection is filled with every record of the store, embedded through the embedding cache
(so unchanged texts are not computed again), and BM25 is rebuilt.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from retrieval.answers.evidence import CALIBRATED_MIN_RELEVANCE, resolve_min_relevance
from retrieval.config import Settings
from retrieval.errors import ConfigError, IndexDamagedError, InputError, PaperbotError, RepairRefusedError
from retrieval.index.dense import DenseStore, record_metadata
from retrieval.index.encoders.local import Encoder, choice_for_name, describe_encoder_choice, load_encoder
from retrieval.index.filters import ResolvedFilters, extract_filters, prepare_query
from retrieval.index.fusion import FusionConfig, drop_near_duplicates, fused_score, scaled_lexical
from retrieval.index.lexical import LexicalIndex, top_positions
from retrieval.ingest.roster import names_of
from retrieval.records.names import filing_families, names_compatible
from retrieval.records.paper import Paper, fold, title_key
from retrieval.results import SearchFilters, SearchHit
from retrieval.storage.records import RecordStore

log = logging.getLogger(__name__)

RELEVANCE_THRESHOLD = CALIBRATED_MIN_RELEVANCE  # bench/calibrate_threshold.py, see retrieval.answers.evidence
MAX_K = 200
ENCODE_BATCH = 64
ENCODER_META_KEY = "encoder_name"  # record-store meta: the encoder that made the vectors
# Indexes written before the encoder name was recorded were all made by the torch encoder.
LEGACY_ENCODER_NAME = "all-MiniLM-L6-v2/torch"
_SWITCHING = "unfinished re-embedding"  # meta value while repair re-embeds: "<_SWITCHING> from X to Y"
LOST_STORE_SHARE = 0.5  # repair refuses to drop vectors when the store holds less of their ids than this
REBUILD_BATCH = 256  # records per embedding call and Chroma upsert while rebuilding a damaged index


def _switching_from(name: str) -> str | None:
    """X of an "unfinished re-embedding from X to Y" marker; None for an encoder name."""
    prefix = f"{_SWITCHING} from "
    return name[len(prefix):].rsplit(" to ", 1)[0] if name.startswith(prefix) else None

EmbedFn = Callable[[Encoder, Sequence[Paper]], np.ndarray]
_Mode = Literal["hybrid", "dense", "lexical"]


def embed_papers(encoder: Encoder, papers: Sequence[Paper]) -> np.ndarray:
    """Default embedding of records: the encoder over ``Paper.embedding_text``.

    This is the seam for an embedding cache keyed by (encoder name, embedding_hash): pass
    ``embed=`` to ``PaperIndex.open`` with a function of the same shape.
    """
    return encoder.encode([paper.embedding_text for paper in papers])


@dataclass
class UpsertReport:
    """What ``upsert`` did, by record id."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # old ids removed because the record's id changed
    embedded: int = 0  # vectors computed by the encoder
    reused: int = 0  # vectors copied from a replaced id with the same text


@dataclass
class ConsistencyReport:
    """How the store, Chroma and the BM25 index agree (``paperbot doctor``)."""

    records: int
    vectors: int
    missing_vectors: list[str] = field(default_factory=list)  # stored records without a vector
    stale_vectors: list[str] = field(default_factory=list)  # vectors of an older text
    orphan_vectors: list[str] = field(default_factory=list)  # vectors whose record is gone
    lexical_current: bool = True  # False is not an error: the next search rebuilds it (repair does now)
    repaired: bool = False
    indexed_encoder: str | None = None  # the encoder that made the stored vectors (None: no vector yet)
    current_encoder: str | None = None  # the encoder these settings load
    damaged: str | None = None  # why the embedded vector index cannot be read (its files are damaged)
    damaged_copy: str | None = None  # where repair moved the damaged vector index (kept for inspection)
    encoder_choice: str | None = None  # which encoder is used and why (auto: the choice measured on this CPU)

    @property
    def encoder_changed(self) -> bool:
        """True when the vectors were made by another encoder than the current one."""
        return self.indexed_encoder is not None and self.indexed_encoder != self.current_encoder

    @property
    def store_looks_lost(self) -> bool:
        """True when the record store holds no record, or fewer than ``LOST_STORE_SHARE`` of the
        ids Chroma has vectors for, while vectors exist: the store was probably lost or replaced."""
        if not self.vectors or not self.orphan_vectors:
            return False
        kept = self.vectors - len(self.orphan_vectors)
        return self.records == 0 or kept < LOST_STORE_SHARE * self.vectors

    @property
    def ok(self) -> bool:
        """True when every record has its current vector, made by the current encoder, and no
        vector lacks a record (and the vector index can be read at all)."""
        return not (self.missing_vectors or self.stale_vectors or self.orphan_vectors or self.encoder_changed
                    or self.damaged)

    def __str__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        """The findings as one line, e.g. for ``paperbot doctor``."""
        verb = "fixed" if self.repaired else "found"
        lines = []
        if self.damaged and self.repaired:
            kept = f"; the damaged copy is kept in {self.damaged_copy}" if self.damaged_copy else ""
            return (f"Vector index rebuilt: it was damaged ({self.damaged}); {self.vectors} vectors made from the "
                    f"{self.records} records of the record store{kept}; BM25 index rebuilt.")
        if self.damaged:
            return (f"The vector index is damaged ({self.damaged}): run `paperbot doctor --repair` to rebuild it "
                    f"from the {self.records} records of the record store (the damaged copy is kept aside).")
        if self.store_looks_lost and not self.repaired:
            lines.append(f"the record store holds {self.records} records but the vector index has "
                         f"{self.vectors} vectors: it may have been lost (restore records.sqlite3 from a backup or "
                         "re-ingest; `--repair` refuses to drop those vectors without `--force`)")
        if self.encoder_changed:
            previous = self.indexed_encoder or ""
            made_by = f"an {previous}" if _switching_from(previous) else f"the vectors were made by {previous!r}"
            if self.repaired:
                lines.append(f"all {self.records} records re-embedded with the encoder {self.current_encoder!r} "
                             f"({made_by})")
            else:
                lines.append(f"{made_by}, not by the current encoder {self.current_encoder!r} (run "
                             f"`paperbot doctor --repair` to re-embed all {self.records} records)")
        if self.missing_vectors:
            lines.append(f"{len(self.missing_vectors)} records without a vector ({verb})")
        if self.stale_vectors:
            lines.append(f"{len(self.stale_vectors)} vectors of an outdated text ({verb})")
        if self.orphan_vectors:
            lines.append(f"{len(self.orphan_vectors)} vectors without a record ({verb})")
        if not self.lexical_current:
            lines.append("BM25 index rebuilt" if self.repaired else "BM25 index to be rebuilt at the next search")
        if self.ok:
            lines.insert(0, f"Index consistent: {self.records} records, {self.vectors} vectors")
        return "; ".join(lines) + "."


@dataclass
class SearchOutcome:
    """A search with everything the doors may want to tell the user."""

    query: str  # the text actually searched (capped, whitespace-normalised)
    hits: list[SearchHit]
    filters: SearchFilters | None = None
    notices: list[str] = field(default_factory=list)  # e.g. "Query capped at 2,000 characters ..."
    empty_reason: str | None = None  # set when hits is empty because of the filters / an empty index

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


def is_venue_acronym(name: str) -> bool:
    """One word with three or more capital letters: "ICDE", "INFOCOM", "NeurIPS", "SIGMOD"."""
    word = name.strip()
    return " " not in word and word.isalnum() and sum(ch.isupper() for ch in word) >= 3


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
    ) -> None:
        self.settings = settings
        self.store = store
        self.dense = dense
        self.lexical = lexical
        self.fusion = fusion or FusionConfig()
        self.relevance_threshold: float = resolve_min_relevance(settings)
        self._encoder = encoder
        self._encoder_factory = encoder_factory
        self._embed = embed
        self._encoder_lock = threading.Lock()
        self._venue_cache: tuple[int, frozenset[str]] | None = None
        self._dense_view: int | None = None  # store generation the embedded vector index is known to hold
        self._dense_view_lock = threading.Lock()
        self._caught_up = False  # True once Chroma and BM25 follow the store's last migration
        self._catch_up_lock = threading.RLock()

    @classmethod
    def open(
        cls,
        settings: Settings,
        encoder: Encoder | None = None,
        *,
        fusion: FusionConfig | None = None,
        embed: EmbedFn = embed_papers,
    ) -> PaperIndex:
        """Open (creating when needed) the index of ``settings.data_dir``.

        Nothing heavy happens here: Chroma is connected and the encoder loaded on first need,
        so ``count``/``iter_papers`` work without torch and without a running server.
        """
        store = RecordStore(settings.records_path)
        return cls(settings, store, DenseStore(settings), LexicalIndex(settings.lexical_dir, store), encoder,
                   fusion=fusion, embed=embed)

    def close(self) -> None:
        self.dense.close()
        self.store.close()

    # --- catching up with a record-store migration ---------------------------------------------

    def _catch_up(self) -> None:
        """Bring Chroma and BM25 up to a store migration that changed records (module docstring)."""
        if self._caught_up:
            return
        with self._catch_up_lock:
            if self._caught_up:
                return
            if self.store.derived_refresh_pending():
                log.info("Updating the vector and BM25 indexes to the migrated record store.")
                self._apply_vector_moves()
                self.lexical.rebuild()
                self.store.derived_refresh_done()
            self._caught_up = True

    def _apply_vector_moves(self) -> None:
        """Every ``RecordStore.vector_moves`` entry: the vector under the record's new id."""
        present = self.dense.embedding_hashes()
        while moves := self.store.vector_moves():
            old_ids = list(dict.fromkeys(old for old, _, _ in moves))
            records = self.store.get_many(list(dict.fromkeys(new for _, new, _ in moves)))
            stored = self.dense.vectors(list(dict.fromkeys([*old_ids, *records])))
            vectors: dict[str, np.ndarray] = {}
            for old, new, old_hash in moves:
                paper = records.get(new)
                usable = old in stored and present.get(old) == old_hash  # that vector is still of that text
                if paper is not None and new not in vectors and usable and old_hash == paper.embedding_hash:
                    vectors[new] = stored[old]
            for new, paper in records.items():  # moved by an interrupted run already
                if new not in vectors and new in stored and present.get(new) == paper.embedding_hash:
                    vectors[new] = stored[new]
            to_embed = [paper for paper in records.values() if paper.id not in vectors]
            if to_embed:  # a merge changed the text, or the vector was missing already
                vectors.update(self._embed_for_catch_up(to_embed))
            if vectors:
                ids = list(vectors)
                self.dense.upsert(ids, np.stack([vectors[i] for i in ids]), [record_metadata(records[i]) for i in ids])
                present.update({i: records[i].embedding_hash for i in ids})
            still_stored = self.store.hashes(old_ids)
            gone = [old for old in old_ids if old not in still_stored]
            if gone:
                self.dense.delete(gone)
                for old in gone:
                    present.pop(old, None)
            self.store.vector_moves_done(old_ids)

    def _embed_for_catch_up(self, papers: Sequence[Paper]) -> dict[str, np.ndarray]:
        """Vectors for records whose text no stored vector matches; none while the index's
        vectors come from another encoder (``repair`` re-embeds everything then, these too)."""
        try:
            self.check_encoder()
        except ConfigError as exc:
            log.warning("%s %d records stay without a vector until then.", exc, len(papers))
            return {}
        encoded = np.asarray(self._embed(self.encoder, papers), dtype=np.float32)
        return {paper.id: vector for paper, vector in zip(papers, encoded)}

    # --- other processes ---------------------------------------------------------------------

    def _see_other_writers(self) -> None:
        """Reload the embedded vector index when another process changed the index since we
        last looked (an ingest while ``paperbot serve`` runs): ``DenseStore.refresh``.

        The record store's generation counter tells; our own writes are noted by
        ``_note_own_write`` and need no reload. A Chroma server is shared live: nothing to do.
        """
        if self.settings.chroma_url:
            return
        with self._dense_view_lock:
            generation = self.store.generation()
            if self._dense_view is not None and generation != self._dense_view:
                log.info("The index was changed by another process: reloading the embedded vector index.")
                self.dense.refresh()
            self._dense_view = generation

    def _note_own_write(self, before: int | None) -> None:
        """After one store write of ours: the view stays current unless another process wrote too."""
        if self.settings.chroma_url:
            return
        with self._dense_view_lock:
            after = self.store.generation()
            if self._dense_view == before and before is not None and after == before + 1:
                self._dense_view = after

    def warm_up(self) -> None:
        """Do now what the first search would do lazily: load the encoder, reach Chroma, load BM25.

        For long-running doors (the Slack bot) and for the end of an ingest, so that the first
        question is answered at normal speed. Raises ``IndexUnavailableError`` when Chroma is down.
        """
        _ = self.encoder
        self.dense.ping()
        self._catch_up()
        self.lexical.current()

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            with self._encoder_lock:
                if self._encoder is None:
                    factory = self._encoder_factory or self._load_encoder
                    self._encoder = factory(self.settings)
        return self._encoder

    def _load_encoder(self, settings: Settings) -> Encoder:
        """``load_encoder`` told which encoder made the stored vectors (or is re-embedding them):
        with ``auto`` the index keeps that one, whatever this machine's own choice would be."""
        recorded = self.indexed_encoder()
        if recorded is not None and _switching_from(recorded) is not None:
            recorded = recorded.rsplit(" to ", 1)[1]
        return load_encoder(settings, indexed=recorded)

    # --- which encoder made the vectors ---------------------------------------------------------

    def indexed_encoder(self) -> str | None:
        """Name of the encoder that made the stored vectors; None while no vector was written.

        Recorded in the record store's meta on the first upsert that embeds anything. An index
        from before that (records, no name) was made by ``LEGACY_ENCODER_NAME``.
        """
        name = self.store.get_meta(ENCODER_META_KEY)
        if name is None and self.store.count() > 0:
            return LEGACY_ENCODER_NAME
        return name

    def check_encoder(self) -> None:
        """Raise ``ConfigError`` when the stored vectors were made by another encoder.

        Mixing two encoders' vectors in one index would rank silently wrong, so searches and
        upserts that embed refuse, and the message says how to fix it (``paperbot doctor
        --repair`` re-embeds every record with the current encoder).
        """
        indexed = self.indexed_encoder()
        current = self.encoder.name
        if indexed is None or indexed == current:
            return
        fix = f"Run `paperbot doctor --repair` to re-embed all {self.store.count():,} records with {current!r}"
        if _switching_from(indexed) is not None:
            raise ConfigError(f"The vector index is in the middle of an {indexed}.", hint=fix + ".")
        wanted = choice_for_name(indexed)
        keep = f", or set PAPERBOT_ENCODER={wanted} to keep using the index as it is." if wanted else "."
        raise ConfigError(
            f"The vector index was built with the encoder {indexed!r} but the current one is {current!r}; "
            "their vectors must not be mixed.",
            hint=fix + keep,
        )

    # --- records -----------------------------------------------------------------------------

    def get(self, paper_id: str) -> Paper | None:
        return self.store.get(paper_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Paper]:
        return self.store.get_many(ids)

    def find_matches(self, paper: Paper) -> list[Paper]:
        return self.store.find_matches(paper)

    def iter_papers(self) -> Iterator[Paper]:
        return self.store.iter_papers()

    def count(self) -> int:
        return self.store.count()

    # --- writes ------------------------------------------------------------------------------

    def upsert(
        self,
        papers: Sequence[Paper],
        *,
        replaces: Mapping[str, str] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> UpsertReport:
        """Index final records. ``replaces`` maps a new id to the old id it supersedes.

        ``progress(done, total)`` counts records of this call; unchanged ones are done at once.
        A record listed twice is indexed once (the last version wins).
        """
        self._catch_up()
        self._see_other_writers()
        latest: dict[str, Paper] = {}
        for paper in papers:
            latest[paper.id] = paper
        swaps = {new: old for new, old in (replaces or {}).items() if old != new}
        strangers = sorted(set(swaps) - set(latest))
        if strangers:
            raise ValueError(f"replaces names ids that are not being upserted: {strangers[:3]}")
        existing = self.store.hashes([*latest, *swaps.values()])
        report = UpsertReport()
        needs_vector: list[Paper] = []
        metadata_only: list[Paper] = []
        for paper_id, paper in latest.items():
            stored = existing.get(paper_id)
            if stored is None:
                report.added.append(paper_id)
                needs_vector.append(paper)
            elif stored[0] == paper.content_hash:
                report.unchanged.append(paper_id)
            else:
                report.updated.append(paper_id)
                (metadata_only if stored[1] == paper.embedding_hash else needs_vector).append(paper)
        old_ids = [old for old in dict.fromkeys(swaps.values()) if old not in latest]
        total = len(latest)
        done = len(report.unchanged) + len(metadata_only)
        if progress:
            progress(done, total)

        vectors = self._reusable_vectors(needs_vector, swaps, existing)
        report.reused = len(vectors)
        to_encode = [paper for paper in needs_vector if paper.id not in vectors]
        if to_encode:
            self.check_encoder()
        done += report.reused
        for start in range(0, len(to_encode), ENCODE_BATCH):
            batch = to_encode[start : start + ENCODE_BATCH]
            encoded = np.asarray(self._embed(self.encoder, batch), dtype=np.float32)
            vectors.update({paper.id: vector for paper, vector in zip(batch, encoded)})
            report.embedded += len(batch)
            done += len(batch)
            if progress:
                progress(done, total)

        if needs_vector:
            self.dense.upsert([p.id for p in needs_vector], np.stack([vectors[p.id] for p in needs_vector]),
                              [record_metadata(p) for p in needs_vector])
        if to_encode and self.store.get_meta(ENCODER_META_KEY) is None:
            self.store.set_meta(ENCODER_META_KEY, self.encoder.name)  # the first vectors of this index
        if metadata_only:
            self.dense.update_metadata([p.id for p in metadata_only], [record_metadata(p) for p in metadata_only])
        changed = [latest[paper_id] for paper_id in (*report.added, *report.updated)]
        view = self._dense_view
        self.store.write(put=changed, delete=old_ids)
        self._note_own_write(view)
        if old_ids:
            self.dense.delete(old_ids)
        report.replaced = old_ids
        if progress:
            progress(total, total)
        return report

    def _reusable_vectors(
        self, papers: Sequence[Paper], swaps: Mapping[str, str], existing: Mapping[str, tuple[str, str]]
    ) -> dict[str, np.ndarray]:
        """Vectors of replaced ids whose text equals the new record's (no need to re-embed)."""
        sources = {
            paper.id: swaps[paper.id]
            for paper in papers
            if paper.id in swaps and existing.get(swaps[paper.id], ("", ""))[1] == paper.embedding_hash
        }
        if not sources:
            return {}
        stored = self.dense.vectors(list(sources.values()))
        return {new: stored[old] for new, old in sources.items() if old in stored}

    def delete(self, ids: Sequence[str]) -> int:
        """Remove records (store first, then vectors); returns how many records existed."""
        unique = list(dict.fromkeys(ids))
        self._catch_up()
        self._see_other_writers()
        view = self._dense_view
        removed = self.store.delete_many(unique)
        self._note_own_write(view)
        if unique:
            self.dense.delete(unique)
        return removed

    # --- filters -----------------------------------------------------------------------------

    def _venue_keys(self) -> frozenset[str]:
        generation = self.store.generation()
        cached = self._venue_cache
        if cached is None or cached[0] != generation:
            cached = (generation, frozenset(self.store.venue_keys()))
            self._venue_cache = cached
        return cached[1]

    def author_keys_for(self, name: str) -> set[str]:
        """Indexed author keys of every written name compatible with ``name`` or a roster alias of it.

        "Z. Zhang" -> {"zhao zhang", "z zhang"}; "Zhao Zhang" also finds "Zhang Zhao" written
        family-first; "Di Wang" finds Di Wang but not Wei Wang (``names.names_compatible``). A
        roster scholar's name, alias or id stands for all their names (``roster.names_of``).
        """
        if not name.strip():
            return set()
        found: set[str] = set()
        for written_as in self._roster_names(name):
            filed = self.store.author_names_filed_under(filing_families(written_as))
            found.update(key for written, key in filed if names_compatible(written_as, written))
        return found

    def _roster_names(self, name: str) -> list[str]:
        """``roster.names_of``; a damaged roster is logged and ignored here: search still works."""
        try:
            return names_of(self.settings, name)
        except PaperbotError as exc:
            log.warning("%s Author filters ignore the roster until it is fixed.", exc.user_message)
            return [name]

    def knows_author(self, name: str) -> bool:
        return bool(self.author_keys_for(name))

    def term_rarity(self, term: str) -> float:
        """How rare a stemmed word is in the index (its BM25 IDF; ``math.inf`` when no record
        has it): the evidence policy requires the question's rarest known word in the evidence
        (``retrieval.answers.evidence``, rule 4)."""
        return self.lexical.current().idf(term)

    def knows_venue(self, name: str) -> bool:
        """True when ``name`` is exactly an indexed venue (after folding), or an acronym written
        as one ("ICDE", "NeurIPS": one word with three or more capitals) that is a whole word of
        an indexed venue ("2023 IEEE 39th International Conference on Data Engineering (ICDE)").
        Conservative on purpose: "in Vision" never becomes a venue filter."""
        key = fold(name)
        if not key:
            return False
        venues = self._venue_keys()
        if key in venues:
            return True
        if not is_venue_acronym(name):
            return False
        return any(key in venue.split() for venue in venues)

    def parse_question(self, question: str) -> tuple[str, SearchFilters]:
        """``extract_filters`` with this index's authors and venues as the known names."""
        return extract_filters(question, self.knows_author, self.knows_venue)

    def resolve_filters(self, filters: SearchFilters | None) -> ResolvedFilters:
        """Expand author names and the venue substring to the indexed values they match."""
        if filters is None or filters.is_empty():
            return ResolvedFilters()
        author_keys = None
        if filters.authors:
            author_keys = frozenset(key for name in filters.authors for key in self.author_keys_for(name))
        venue_keys = None
        needle = fold(filters.venue or "")
        if needle:
            venue_keys = frozenset(venue for venue in self._venue_keys() if needle in venue)
        return ResolvedFilters(filters.since, filters.until, author_keys, venue_keys)

    def matching_papers(self, filters: SearchFilters) -> list[Paper]:
        """Every indexed record matching ``filters`` (same name rules as search), newest first.

        The evidence of a listing question ("papers by Zhao Zhang since 2025"): all records, not
        the top-k by similarity. Empty filters match nothing here (a listing of the whole index
        is never what a question asks for).
        """
        if filters.is_empty():
            return []
        resolved = self.resolve_filters(filters)
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
        resolved = self.resolve_filters(filters)
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

    # --- search ------------------------------------------------------------------------------

    def search(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]:
        """Hybrid search: the ranked list users see (see ``retrieve`` for notices)."""
        return self.retrieve(query, k, filters).hits

    def retrieve(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> SearchOutcome:
        """Hybrid search plus notices (query capped) and, when empty, the reason why."""
        return self._run(query, k, filters, mode="hybrid")

    def dense_search(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]:
        """Dense retrieval only (score = cosine similarity); for benchmarks."""
        return self._run(query, k, filters, mode="dense").hits

    def lexical_search(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]:
        """BM25 only (score = BM25 scaled by the query's best); for benchmarks."""
        return self._run(query, k, filters, mode="lexical").hits

    def is_relevant(self, hit: SearchHit) -> bool:
        """True when the hit's score reaches the calibrated relevance threshold."""
        return hit.score >= self.relevance_threshold

    def _run(self, query: str, k: int, filters: SearchFilters | None, mode: _Mode) -> SearchOutcome:
        self._catch_up()
        prepared = prepare_query(query)
        if not 1 <= k <= MAX_K:
            raise InputError(f"The number of results must be between 1 and {MAX_K} (got {k}).",
                             hint="Use e.g. --k 10.")
        outcome = SearchOutcome(query=prepared.text, hits=[], filters=filters,
                                notices=[prepared.notice] if prepared.notice else [])
        resolved = self.resolve_filters(filters)
        if resolved.matches_nothing():
            outcome.empty_reason = self.explain_empty(filters)
            return outcome
        candidates = self._candidates(prepared.text, resolved, max(self.fusion.fetch_k, k), mode)
        outcome.hits = self._hits(candidates, k, mode)
        if not outcome.hits:
            outcome.empty_reason = self.explain_empty(filters)
            if outcome.empty_reason is None and mode != "lexical" and self.dense.count() == 0:
                outcome.empty_reason = ("The vector index is empty although papers are recorded: "
                                        "run `paperbot doctor --repair` to rebuild it.")
        return outcome

    def _candidates(self, text: str, filters: ResolvedFilters, fetch: int, mode: _Mode) -> list[_Candidate]:
        """Candidates from both retrievers (filters applied inside each) with all their raw signals."""
        lexical_scores = None
        snapshot = None
        lexical_ids: list[str] = []
        if mode in ("hybrid", "lexical"):
            snapshot = self.lexical.current()
            lexical_scores = snapshot.score_all(text, snapshot.mask(filters))
            if lexical_scores is not None:
                lexical_ids = [snapshot.ids[i] for i in top_positions(lexical_scores.bm25, fetch)]
        query_vector = None
        dense_hits: list[tuple[str, float, np.ndarray]] = []
        if mode in ("hybrid", "dense"):
            self.check_encoder()
            # after the BM25 snapshot: every record it holds was stored, hence its vector written
            # (vectors go first), by the generation read here, so a reload makes all of them visible
            self._see_other_writers()
            query_vector = np.asarray(self.encoder.encode([text])[0], dtype=np.float32)
            dense_hits = self.dense.query(query_vector, fetch, filters)

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
        return list(candidates.values())

    def _hits(self, candidates: list[_Candidate], k: int, mode: _Mode) -> list[SearchHit]:
        best_lexical = max((c.lexical_raw for c in candidates), default=0.0)
        scored: list[tuple[float, _Candidate, float]] = []
        for candidate in candidates:
            lexical = scaled_lexical(candidate.lexical_raw, best_lexical)
            if mode == "dense":
                score = candidate.dense if candidate.dense is not None else 0.0
            elif mode == "lexical":
                score = lexical
            else:
                score = fused_score(candidate.dense, lexical, self.fusion, candidate.coverage)
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

    # --- consistency -------------------------------------------------------------------------

    def check_consistency(self) -> ConsistencyReport:
        """Compare store, Chroma and the BM25 index (after finishing a store migration's catch-up).

        A vector index whose files are damaged is a finding (``damaged``), not an error.
        """
        try:
            self._catch_up()
            self._see_other_writers()
            expected = self.store.all_embedding_hashes()
            present = self.dense.embedding_hashes()
        except IndexDamagedError as exc:
            log.info("%s", exc.user_message)
            return ConsistencyReport(
                records=self.store.count(), vectors=0, lexical_current=self.lexical.is_current(),
                damaged=exc.detail or exc.user_message, current_encoder=self.encoder.name,
                encoder_choice=describe_encoder_choice(self.settings, self.encoder.name),
            )
        return ConsistencyReport(
            records=len(expected),
            vectors=len(present),
            missing_vectors=sorted(set(expected) - set(present)),
            stale_vectors=sorted(i for i in set(expected) & set(present) if present[i] != expected[i]),
            orphan_vectors=sorted(set(present) - set(expected)),
            lexical_current=self.lexical.is_current(),
            indexed_encoder=self.indexed_encoder() if expected or present else None,
            current_encoder=self.encoder.name,
            encoder_choice=describe_encoder_choice(self.settings, self.encoder.name),
        )

    def repair(self, progress: Callable[[int, int], None] | None = None, *, force: bool = False) -> ConsistencyReport:
        """Fix what ``check_consistency`` finds: embed missing/stale records, drop orphans, rebuild BM25.

        When the vectors were made by another encoder, every record is embedded again with the
        current one (``progress(done, total)`` follows it). Until that finishes the index is
        marked as switching, so an interrupted run is neither searched nor mistaken for done:
        running ``repair`` again completes it.

        A damaged vector index is rebuilt from the record store (``_rebuild_dense``). Vectors are
        never dropped because the store looks lost (``store_looks_lost``) unless ``force``:
        ``RepairRefusedError`` says why and what to do instead.
        """
        report = self.check_consistency()
        if report.damaged:
            return self._rebuild_dense(report, progress, force=force)
        if report.store_looks_lost and not force:
            raise self._refusal(report)
        if report.encoder_changed:
            origin = _switching_from(report.indexed_encoder or "") or report.indexed_encoder
            self.store.set_meta(ENCODER_META_KEY, f"{_SWITCHING} from {origin} to {report.current_encoder}")
            redo_ids = sorted(self.store.ids())
            log.warning("Re-embedding all %d records with %s (the vectors were made by %s).",
                        len(redo_ids), report.current_encoder, report.indexed_encoder)
        else:
            redo_ids = [*report.missing_vectors, *report.stale_vectors]
        total = len(redo_ids)
        if progress:
            progress(0, total)
        for start in range(0, total, ENCODE_BATCH):
            batch = list(self.store.get_many(redo_ids[start : start + ENCODE_BATCH]).values())
            if batch:
                vectors = np.asarray(self._embed(self.encoder, batch), dtype=np.float32)
                self.dense.upsert([p.id for p in batch], vectors, [record_metadata(p) for p in batch])
            if progress:
                progress(min(start + ENCODE_BATCH, total), total)
        if report.orphan_vectors:
            self.dense.delete(report.orphan_vectors)
        if report.records and self.store.get_meta(ENCODER_META_KEY) != self.encoder.name:
            self.store.set_meta(ENCODER_META_KEY, self.encoder.name)  # every vector is now the current encoder's
        if not report.lexical_current:
            self.lexical.rebuild()
        return replace(report, repaired=True)

    def _refusal(self, report: ConsistencyReport) -> RepairRefusedError:
        """Why ``repair`` will not drop the vectors of a record store that looks lost, and what to do."""
        where = f"the record store {self.store.path}"
        if report.records == 0:
            found = f"{where} is empty but the vector index holds {report.vectors} vectors"
        else:
            kept = report.vectors - len(report.orphan_vectors)
            found = (f"{where} holds the records of only {kept} of the {report.vectors} vectors "
                     f"(and {report.records} records in all)")
        doomed = ("every one of them" if len(report.orphan_vectors) == report.vectors
                  else f"{len(report.orphan_vectors)} of them")
        return RepairRefusedError(
            f"Refusing to repair: {found}, and repairing would delete {doomed}. "
            "The record store is the source of truth, and an empty one (or one that lost most of its records) "
            "usually means the file was lost or replaced.",
            hint="Restore records.sqlite3 from a backup, or re-ingest your sources with `paperbot ingest`; "
                 "run `paperbot doctor --repair --force` to drop the vectors anyway.",
        )

    def _rebuild_dense(
        self, report: ConsistencyReport, progress: Callable[[int, int], None] | None, *, force: bool
    ) -> ConsistencyReport:
        """A new vector index from every record of the store, the damaged one moved aside (kept).

        Vectors come through ``self._embed`` (the embedding cache: unchanged texts are not
        computed again); ``progress(done, total)`` counts records. BM25 is rebuilt and a pending
        migration catch-up is marked done (every vector is made anew from the migrated records).
        Interrupted, it leaves a new index missing some vectors: ``repair`` again fills them in.
        """
        total = self.store.count()
        if total == 0 and not force:
            raise RepairRefusedError(
                f"Refusing to rebuild the damaged vector index: the record store {self.store.path} is empty, so "
                "the new index would be empty too. The record store is the source of truth, and an empty one "
                "usually means the file was lost.",
                hint="Restore records.sqlite3 from a backup, or re-ingest your sources with `paperbot ingest`; "
                     "run `paperbot doctor --repair --force` to rebuild an empty index anyway (the damaged one "
                     "is kept aside).",
            )
        current = self.encoder.name
        recorded = self.store.get_meta(ENCODER_META_KEY)
        if total and recorded != current:
            origin = _switching_from(recorded or "") or recorded or LEGACY_ENCODER_NAME
            self.store.set_meta(ENCODER_META_KEY, f"{_SWITCHING} from {origin} to {current}")
        aside = self.dense.move_aside()
        log.info("Rebuilding the vector index from the %d records of the record store.", total)
        if progress:
            progress(0, total)
        done = 0
        batch: list[Paper] = []

        def flush() -> None:
            nonlocal done
            vectors = np.asarray(self._embed(self.encoder, batch), dtype=np.float32)
            self.dense.upsert([p.id for p in batch], vectors, [record_metadata(p) for p in batch])
            done += len(batch)
            batch.clear()
            if progress:
                progress(done, total)

        for paper in self.store.iter_papers():
            batch.append(paper)
            if len(batch) >= REBUILD_BATCH:
                flush()
        if batch:
            flush()
        if total:
            self.store.set_meta(ENCODER_META_KEY, current)
        if self.store.derived_refresh_pending():  # the vectors were just made from the migrated records
            while moves := self.store.vector_moves():
                self.store.vector_moves_done([old for old, _, _ in moves])
            self.store.derived_refresh_done()
        self._caught_up = True
        self._dense_view = None
        self.lexical.rebuild()
        return replace(report, repaired=True, vectors=self.dense.count(), lexical_current=True,
                       damaged_copy=str(aside) if aside else None, indexed_encoder=current if total else None)

