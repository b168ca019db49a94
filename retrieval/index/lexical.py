"""BM25 (``bm25s``) over each record's title (counted twice), abstract, author names and venue.

BM25 uses ``k1 = 0.9, b = 0.4`` (Anserini's defaults; on the SciFact train claims they beat
bm25s' own 1.5 / 0.75 inside the hybrid, see the ``index`` module docstring). Besides the BM25
score of every document, ``score_all`` returns each document's query-term coverage: the
IDF-weighted share of the query's distinct terms it contains (Lucene's old "coord" factor),
which the fusion adds as a small third signal.

The index is derived from the record store and persisted under ``settings.lexical_dir``::

    lexical/manifest.json         {"format", "tokenizer", "bm25", "generation", "feed", "digest", "build",
                                   "documents"}
    lexical/<build>/              bm25s arrays + docs.json (ids in index order, year, venue, authors)
                                  + counts.npz (each document's term counts)

``counts.npz`` in a build folder holds each document's term counts, keyed by a hash of its text,
so that the next build tokenises only the records whose text changed (``term_counts``).

Following the store. ``LexicalIndex.current()`` compares the store's write ``generation`` first
(one cheap query per search). When it moved, the index reads the store's change feed
(``RecordStore.changes_since``: only the records changed or removed after the generation it
holds) and applies it to the snapshot in memory (``_followed``): the documents of those records
are taken out, the changed ones put back in id order, the term counts of every other document
(kept in memory with the snapshot) reused, the changed texts tokenised, and the score matrix
derived from the counts again. The result equals a build from the store at the new generation,
bit for bit (tests/index/test_lexical_follow.py). Many replicas, each with its own data dir and
index, follow one shared store so, none of them re-reading the records nobody changed.

The build on disk is saved again after ``save_after`` followed changes (5% of the documents,
at least 1,000) and by a repair (``checkpoint``), so a process that starts loads it (``manifest.generation``, ``manifest.feed``:
the id of the store's feed, so that the generations of another database are never read as its
own) and follows the feed from there. The index rebuilds from every record (reusing the term
counts of texts it already counted) when it cannot follow: no snapshot or manifest of this feed,
no term counts, more changes than ``follow_limit`` (half the documents, at least 1,000), or a
store without a feed (a records file of the schema before the database, read as it is). Then
``manifest.digest`` (the store's digest of its (id, content_hash) set when the build was made)
decides as before: a build whose digest equals the store's is loaded, anything else (files
missing or unreadable, another tokenizer or BM25 parameters) rebuilt. Rebuilding is lazy (first
search after a change). A read-only data dir still works: the index then just lives in memory
(saving it is not even tried, ``config.unwritable_reason``).

Filters are applied as a ``weight_mask`` inside bm25s scoring (0 for excluded documents),
never by cutting a ranked list afterwards.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from retrieval.config import unwritable_reason
from retrieval.gc_pause import older_objects_frozen
from retrieval.index.acronyms import TermGroup
from retrieval.index.bm25_library import bm25s
from retrieval.index.bm25s_adapter import holding_scores, lucene_scoring, score_columns, vocabulary
from retrieval.index.filters import ResolvedFilters
from retrieval.index.lexical_follow import merged_sources, rearranged
from retrieval.index.term_counts import TermCounts, TermPairs, document_key, pairs_of_tokens, reused_pairs
from retrieval.records.names import author_key
from retrieval.records.paper import Paper
from retrieval.storage.records import RecordChanges, RecordStore, RecordText
from retrieval.text import bm25_tokens, folded

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
TOKENIZER_VERSION = 1  # of retrieval.text.bm25_tokens: bump it when the tokens change
TITLE_WEIGHT = 2  # the title is repeated this many times in the indexed text
BM25_K1 = 0.9  # term-frequency saturation
BM25_B = 0.4  # document-length normalisation
_BM25_PARAMETERS = {"k1": BM25_K1, "b": BM25_B, "method": "lucene"}
FOLLOW_FRACTION, FOLLOW_AT_LEAST = 0.5, 1000  # changed records read from the feed at most (``follow_limit``)
SAVE_FRACTION, SAVE_AT_LEAST = 0.05, 1000  # changes followed before the build on disk is saved again (``save_after``)
# How ``document_tokens`` makes a record's tokens, saved with its term counts: a change to any of
# it must not let a build reuse counts of the old tokens (``term_counts``)
_TOKEN_RECIPE = f"title x{TITLE_WEIGHT}, abstract, author names, venue; bm25_tokens v{TOKENIZER_VERSION}"


def document_text(paper: Paper) -> str:
    """What BM25 sees for one record: title (weighted by repetition), abstract, authors, venue."""
    return "\n".join(_document_parts(paper.title, paper.abstract, paper.author_names, paper.venue))


def _document_parts(title: str, abstract: str | None, author_names: Sequence[str], venue: str | None) -> list[str]:
    parts = [title] * TITLE_WEIGHT
    if abstract:
        parts.append(abstract)
    parts.extend(author_names)
    if venue:
        parts.append(venue)
    return parts


# Characters that may make ``bm25_tokens`` take its CJK path (bigrams listed after all words,
# so a text's tokens are no longer its lines' tokens one after the other): Hangul jamo (NFC
# joins them into syllables) and everything from the CJK radicals on. Below U+2E80 nothing
# else decomposes into those scripts (tests/index/test_lexical_build_equivalence.py checks
# every code point).
_MAY_BE_CJK = re.compile("[\u1100-\u11ff\u2e80-\U0010ffff]")


def document_tokens(title: str, abstract: str | None, author_names: Sequence[str], venue: str | None) -> list[str]:
    """``bm25_tokens(document_text(...))``, exactly, with less work for a BM25 build.

    Outside the CJK path ``bm25_tokens`` treats each line on its own (a line break ends a word
    and every fold), so a document's tokens are its parts' tokens in order: the title is
    tokenised once for its ``TITLE_WEIGHT`` copies, and author names and venues, which repeat
    across records, come from a cache. A document with a character that may be CJK is
    tokenised whole, as before.
    """
    text = "\n".join(_document_parts(title, abstract, author_names, venue))
    if not text.isascii() and _MAY_BE_CJK.search(text):  # isascii is O(1), most records are ASCII
        return bm25_tokens(text)
    tokens = bm25_tokens(title) * TITLE_WEIGHT
    if abstract:
        tokens += bm25_tokens(abstract)
    for name in author_names:
        tokens += _short_tokens(name)
    if venue:
        tokens += _short_tokens(venue)
    return tokens


@lru_cache(maxsize=32768)
def _short_tokens(text: str) -> tuple[str, ...]:
    """``bm25_tokens`` of an author name or venue, cached (a tuple: callers cannot change it)."""
    return tuple(bm25_tokens(text))


# The BM25 matrix -------------------------------------------------------------------------


def _bm25_index(corpus: list[list[str]]) -> bm25s.BM25:
    """``bm25s.BM25(**_BM25_PARAMETERS).index(corpus)``, the same arrays and vocabulary, in numpy.

    bm25s computes the scores one document at a time (a ``Counter`` and a few small numpy
    operations each), most of a build's BM25 time; here every (document, term) pair is scored
    at once with the same float operations (``term_counts.score_matrix``). The vocabulary is
    numbered in the order of the same set bm25s builds (filled document by document), and
    ``idf`` and ``tfc`` follow its Lucene formulas operation for operation, including numpy's
    promotion of the float64 length factor against float32 term counts: the arrays are equal
    byte for byte (tests/index/test_bm25_build_equivalence.py compares them with bm25s' own). A
    corpus without a single token goes to bm25s, which fails on it as it always did.
    """
    return _indexed(corpus)[0]


def _indexed(corpus: list[list[str]]) -> tuple[bm25s.BM25, TermPairs | None, list[str]]:
    """``_bm25_index`` with the term pairs it scored and its vocabulary in term order (what
    ``TermCounts`` keeps); no pairs when bm25s indexed the corpus itself."""
    retriever = bm25s.BM25(**_BM25_PARAMETERS)
    unique: set[str] = set()
    for tokens in corpus:
        unique.update(tokens)
    if not unique or not lucene_scoring(retriever):
        retriever.index(corpus, show_progress=False)
        return retriever, None, []
    vocab = list(unique)
    numbering = {token: i for i, token in enumerate(vocab)}
    pairs = pairs_of_tokens(corpus, numbering)
    return holding_scores(retriever, numbering, pairs), pairs, vocab


def _retriever_and_counts(previous: TermCounts | None, sources: Sequence[int] | np.ndarray, fresh: list[list[str]],
                          keys: Sequence[bytes] | np.ndarray) -> tuple[bm25s.BM25, TermCounts | None]:
    """The retriever of a build's documents and the counts to save with it.

    A document's counts are reused from ``previous`` where ``sources`` gives its position there,
    else counted from the next list of ``fresh``; without ``previous``, ``fresh`` holds every
    document's tokens (``LexicalIndex._build``)."""
    if previous is not None and len(fresh) < len(sources):
        vocab, pairs = reused_pairs(previous, sources, fresh)
        if vocab:
            numbering = {token: i for i, token in enumerate(vocab)}
            return (holding_scores(bm25s.BM25(**_BM25_PARAMETERS), numbering, pairs),
                    TermCounts.of(_TOKEN_RECIPE, vocab, keys, pairs))
        fresh = [[] for _ in sources]  # no document holds a token: what a build from scratch is given
    built, scored, terms = _indexed(fresh)
    return built, (TermCounts.of(_TOKEN_RECIPE, terms, keys, scored) if scored is not None else None)


# Snapshot: one immutable build -------------------------------------------------------------


@dataclass(frozen=True)
class LexicalScores:
    """Per-document arrays of one query, in index order (``LexicalSnapshot.ids``)."""

    bm25: np.ndarray  # raw BM25 score (float32)
    coverage: np.ndarray  # IDF-weighted share of the distinct query terms present, 0..1 (float32)


@dataclass
class LexicalSnapshot:
    """One build of the BM25 index with the per-document fields filters need."""

    ids: list[str]
    years: np.ndarray  # int32, -1 when unknown
    venues: list[str | None]
    authors: list[list[str]]
    digest: str | None  # the store's digest of the records it holds; None when it followed the change feed
    generation: int
    retriever: bm25s.BM25 | None  # None for an empty store
    feed: str | None = None  # the store's change feed it can follow (``RecordStore.changes_since``)
    counts: TermCounts | None = field(default=None, repr=False)  # its documents' term counts, by position
    _author_postings: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _venue_postings: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _positions: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._positions = {paper_id: n for n, paper_id in enumerate(self.ids)}
        author_docs: dict[str, list[int]] = {}
        venue_docs: dict[str, list[int]] = {}
        for position, keys in enumerate(self.authors):
            for key in keys:
                author_docs.setdefault(key, []).append(position)
        for position, venue in enumerate(self.venues):
            if venue:
                venue_docs.setdefault(venue, []).append(position)
        self._author_postings = {k: np.asarray(v, dtype=np.int64) for k, v in author_docs.items()}
        self._venue_postings = {k: np.asarray(v, dtype=np.int64) for k, v in venue_docs.items()}

    def __len__(self) -> int:
        return len(self.ids)

    def mask(self, filters: ResolvedFilters | None) -> np.ndarray | None:
        """float32 weights (1 = allowed, 0 = excluded) for bm25s, or None when nothing is filtered."""
        if filters is None or filters.is_empty():
            return None
        allowed = np.ones(len(self.ids), dtype=bool)
        if filters.since is not None:
            allowed &= self.years >= filters.since
        if filters.until is not None:
            allowed &= (self.years >= 0) & (self.years <= filters.until)
        for keys, postings in ((filters.author_keys, self._author_postings), (filters.venue_keys, self._venue_postings)):
            if keys is None:
                continue
            chosen = np.zeros(len(self.ids), dtype=bool)
            for key in keys:
                if key in postings:
                    chosen[postings[key]] = True
            allowed &= chosen
        return allowed.astype(np.float32)

    def allowed_ids(self, allowed: np.ndarray | None) -> list[str] | None:
        """The ids of the records a ``mask`` allows, for the dense retriever; None = every one.

        One filter semantics for both retrievers: the dense side gets ``mask``'s answer as ids
        (the caller passes the mask it gave BM25, so it is computed once). A mask that allows
        every record yields None (an unrestricted query is the faster one).
        """
        if allowed is None:
            return None
        positions = np.flatnonzero(allowed)
        if positions.size == len(self.ids):
            return None
        return [self.ids[i] for i in positions]

    def idf(self, token: str) -> float:
        """``ln(1 + (N - df + 0.5) / (df + 0.5))`` of one tokenised term; ``math.inf`` for a
        term no record holds."""
        df = 0
        if self.retriever is not None and token in vocabulary(self.retriever):
            indptr = score_columns(self.retriever)[2]
            term = vocabulary(self.retriever)[token]
            df = int(indptr[term + 1]) - int(indptr[term])
        if df == 0:
            return math.inf
        return float(np.log1p((len(self.ids) - df + 0.5) / (df + 0.5)))

    def position(self, paper_id: str) -> int | None:
        """Index position of a record (for looking up its entry in ``score_all``)."""
        return self._positions.get(paper_id)

    def score_all(self, query: str, allowed_mask: np.ndarray | None = None) -> LexicalScores | None:
        """BM25 score and query-term coverage of every document (0 when excluded or sharing no
        term); None when no query term is indexed.

        Reads bm25s' precomputed per-(term, document) scores directly (``bm25s_adapter.score_columns``:
        a CSC matrix whose column ``t`` lists the documents containing term ``t``), summing them
        like ``BM25.get_scores`` (a repeated query term counts again) and accumulating, from
        the same postings, each document's coverage: the IDF-weighted share of the distinct
        query terms it contains, ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``.
        """
        if self.retriever is None:
            return None
        vocab = vocabulary(self.retriever)
        tokens = [token for token in bm25_tokens(query) if token in vocab]
        if not tokens:
            return None
        scores, present, total_idf = self._writing(tokens)
        coverage = present / total_idf if total_idf > 0 else present
        if allowed_mask is not None:
            scores *= allowed_mask
            coverage *= allowed_mask
        return LexicalScores(scores, coverage)

    def score_groups(self, groups: Sequence[TermGroup], allowed_mask: np.ndarray | None = None) -> LexicalScores | None:
        """``score_all`` for a query whose concepts may be written in more than one way
        (``acronyms.term_groups``): per group, each document counts the better of the group's
        writings, never their sum, so a record saying "LLMs" and one saying "large language
        models" match the concept alike, and one saying both no more.

        BM25: per group the higher of the writings' summed term scores. Coverage: a group weighs
        the IDF of the query's own writing (of the best other writing when none of the query's
        tokens is indexed, counted once however often the query repeats it), and a document
        holds the larger share of it any writing gives (the IDF-weighted share of that writing's
        terms it contains). A group of one writing scores as in ``score_all``. None when no
        token of any writing is indexed.
        """
        if self.retriever is None:
            return None
        documents = len(self.ids)
        scores = np.zeros(documents, dtype=np.float32)
        present = np.zeros(documents, dtype=np.float32)
        total_idf = 0.0
        counted: set[tuple[str, ...]] = set()
        for group in groups:
            own = self._writing(group.own)
            others = [writing for writing in map(self._writing, group.others) if writing[2] > 0]
            if own[2] == 0 and not others:
                continue
            weight = own[2] if own[2] > 0 else max(writing[2] for writing in others)
            best_scores, best_present = own[0], own[1]  # both zero when no token of the query's writing is indexed
            for other_scores, other_present, other_weight in others:
                best_scores = np.maximum(best_scores, other_scores)
                best_present = np.maximum(best_present, other_present * np.float32(weight / other_weight))
            scores += best_scores
            if group.own not in counted:
                counted.add(group.own)
                present += best_present
                total_idf += weight
        if total_idf == 0:
            return None
        coverage = present / total_idf
        if allowed_mask is not None:
            scores *= allowed_mask
            coverage *= allowed_mask
        return LexicalScores(scores, coverage)

    def _writing(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray, float]:
        """One writing of a concept: each document's summed BM25 term scores, the IDF of its
        distinct terms it holds, and the IDF of all of them (indexed terms only)."""
        vocab = vocabulary(self.retriever)
        data, indices, indptr = score_columns(self.retriever)
        documents = len(self.ids)
        scores = np.zeros(documents, dtype=np.float32)
        present = np.zeros(documents, dtype=np.float32)
        weight = 0.0
        seen: set[int] = set()
        for token in tokens:
            term = vocab.get(token)
            if term is None:
                continue
            start, end = int(indptr[term]), int(indptr[term + 1])
            postings = indices[start:end]
            scores[postings] += data[start:end]
            if term not in seen:
                seen.add(term)
                idf = float(np.log1p((documents - (end - start) + 0.5) / ((end - start) + 0.5)))
                present[postings] += idf
                weight += idf
        return scores, present, weight

    def search(self, query: str, k: int, allowed_mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Up to ``k`` (id, raw BM25 score) pairs, best first; only documents sharing a term."""
        scored = self.score_all(query, allowed_mask)
        if scored is None or k <= 0:
            return []
        return [(self.ids[i], float(scored.bm25[i])) for i in top_positions(scored.bm25, k)]


def top_positions(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest positive scores, best first (stable for ties)."""
    candidates = np.flatnonzero(scores > 0)
    if candidates.size > k:
        candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
    return candidates[np.argsort(-scores[candidates], kind="stable")]


# The persisted, self-refreshing index ------------------------------------------------------


class LexicalIndex:
    """BM25 index kept in step with a ``RecordStore``; see the module docstring."""

    def __init__(self, directory: Path, store: RecordStore) -> None:
        self.directory = Path(directory)
        self.store = store
        self._lock = threading.Lock()
        self._snapshot: LexicalSnapshot | None = None
        self._unsaved = 0  # changes followed since the build on disk was saved

    @property
    def manifest_path(self) -> Path:
        return self.directory / "manifest.json"

    def current(self) -> LexicalSnapshot:
        """The snapshot matching the store now: cached, followed from the change feed, loaded from
        disk, or rebuilt."""
        generation = self.store.generation()
        snapshot = self._snapshot
        if snapshot is not None and snapshot.generation == generation:
            return snapshot
        with self._lock:
            snapshot = self._snapshot
            if snapshot is not None and snapshot.generation == generation:
                return snapshot
            followed = self._follow(snapshot if snapshot is not None else self._load_to_follow(generation))
            if followed is not None:
                self._snapshot = followed
                return followed
            digest = self.store.digest()
            if snapshot is not None and snapshot.digest == digest and self._on_disk_digest() == digest:
                snapshot.generation = generation
                return snapshot
            loaded = self._load(digest, generation)
            self._snapshot = loaded if loaded is not None else self._build(digest, generation)
            return self._snapshot

    def checkpoint(self) -> LexicalSnapshot:
        """The snapshot matching the store now (``current``), saved on disk unless the saved build
        already is that snapshot, so that the persisted index equals the store and the next process
        follows nothing. A repair ends with this; nothing is written in a read-only data dir."""
        snapshot = self.current()
        with self._lock:
            manifest = self._read_manifest()
            saved = (manifest is not None and self._build_dir() is not None and self._unsaved == 0
                     and manifest.get("generation") == snapshot.generation and manifest.get("feed") == snapshot.feed)
            if not saved:
                if snapshot.digest is None and self.store.generation() == snapshot.generation:
                    snapshot.digest = self.store.digest()  # a followed snapshot has none of its own
                self._save(snapshot, snapshot.counts)
        return snapshot

    def is_current(self) -> bool:
        """True when the persisted index matches the store, or follows it from the change feed
        without a rebuild (nothing is rebuilt here)."""
        manifest = self._read_manifest()
        if manifest is None or self._build_dir() is None:
            return False
        feed, saved = manifest.get("feed"), manifest.get("generation")
        if feed is not None and feed == self.store.feed() and isinstance(saved, int) and saved <= self.store.generation():
            return self.store.changes_since(saved, limit=follow_limit(int(manifest.get("documents") or 0))) is not None
        return manifest.get("digest") == self.store.digest()

    def rebuild(self, *, from_scratch: bool = False) -> LexicalSnapshot:
        """Rebuild from the store now, whatever the manifest says.

        ``from_scratch``: tokenise every record instead of reusing the last build's term counts
        (a repair trusts nothing derived)."""
        with self._lock:
            self._snapshot = self._build(self.store.digest(), self.store.generation(), reuse=not from_scratch)
            return self._snapshot

    # --- following the store's change feed ---------------------------------------------------

    def _follow(self, snapshot: LexicalSnapshot | None) -> LexicalSnapshot | None:
        """``snapshot`` brought up to the store's generation from its change feed; None when it
        cannot be (no snapshot or feed, another feed, no term counts, too far behind)."""
        if snapshot is None or snapshot.feed is None or (snapshot.counts is None and len(snapshot) > 0):
            return None
        changes = self.store.changes_since(snapshot.generation, limit=follow_limit(len(snapshot)))
        if changes is None or changes.feed != snapshot.feed or changes.generation < snapshot.generation:
            return None  # the last: a store restored from a backup older than the snapshot
        followed = _followed(snapshot, changes)
        if followed is not snapshot:
            self._unsaved += len(changes)
            if self._unsaved > save_after(len(followed)):
                self._save(followed, followed.counts)
        return followed

    def _load_to_follow(self, generation: int) -> LexicalSnapshot | None:
        """The build on disk with its term counts when it was made from this store's feed at a
        generation not after ``generation``; None otherwise (the digest decides then)."""
        manifest = self._read_manifest()
        path = self._build_dir()
        saved = manifest.get("generation") if manifest else None
        if (manifest is None or path is None or manifest.get("feed") is None or not isinstance(saved, int)
                or saved > generation or manifest["feed"] != self.store.feed()):
            return None
        snapshot = self._read_build(path, digest=manifest.get("digest"), generation=saved)
        if snapshot is None:
            return None
        snapshot.feed = manifest["feed"]
        snapshot.counts = TermCounts.load(path, _TOKEN_RECIPE)
        self._unsaved = 0
        return snapshot

    # --- persistence -------------------------------------------------------------------------

    def _read_manifest(self) -> dict | None:
        try:
            manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if (not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION
                or manifest.get("tokenizer") != TOKENIZER_VERSION or manifest.get("bm25") != _BM25_PARAMETERS):
            return None
        return manifest

    def _on_disk_digest(self) -> str | None:
        manifest = self._read_manifest()
        return manifest.get("digest") if manifest else None

    def _build_dir(self) -> Path | None:
        manifest = self._read_manifest()
        if not manifest:
            return None
        path = self.directory / str(manifest.get("build", ""))
        return path if manifest.get("build") and (path / "docs.json").is_file() else None

    def _load(self, digest: str, generation: int) -> LexicalSnapshot | None:
        manifest = self._read_manifest()
        path = self._build_dir()
        if not manifest or manifest.get("digest") != digest or path is None:
            return None
        snapshot = self._read_build(path, digest=digest, generation=generation)
        feed = self.store.feed() if snapshot is not None else None
        if snapshot is not None and feed is not None:
            # equal digests: it holds what the store held at ``generation`` (read first) or later
            snapshot.feed = feed
            snapshot.counts = TermCounts.load(path, _TOKEN_RECIPE)
            self._unsaved = 0
        return snapshot

    def _read_build(self, path: Path, *, digest: str | None, generation: int) -> LexicalSnapshot | None:
        try:
            docs = json.loads((path / "docs.json").read_text(encoding="utf-8"))
            retriever = None
            if docs["ids"]:
                retriever = bm25s.BM25.load(str(path), show_progress=False)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("Lexical index at %s is unreadable (%s); rebuilding it.", path, exc)
            return None
        return LexicalSnapshot(
            ids=docs["ids"], years=np.asarray(docs["years"], dtype=np.int32), venues=docs["venues"],
            authors=docs["authors"], digest=digest, generation=generation, retriever=retriever,
        )

    @older_objects_frozen()
    def _build(self, digest: str, generation: int, *, reuse: bool = True) -> LexicalSnapshot:
        """A build from the store's records: the term counts of a record whose text the last build
        counted are reused from it (``term_counts``; unless not ``reuse``), the others' texts are
        tokenised."""
        feed = self.store.feed()
        previous = self._previous_counts() if reuse and lucene_scoring(bm25s.BM25(**_BM25_PARAMETERS)) else None
        known = previous.rows() if previous is not None else {}
        ids: list[str] = []
        years: list[int] = []
        venues: list[str | None] = []
        authors: list[list[str]] = []
        keys: list[bytes] = []
        sources: list[int] = []  # the row of each document's counts in ``previous``, or -1
        fresh: list[list[str]] = []  # the tokens of the documents counted now, in order
        for record in self.store.iter_texts():  # not iter_papers: the Paper models cost more than the rest
            ids.append(record.id)
            year, venue, names, key = _fields(record)
            years.append(year)
            venues.append(venue)
            authors.append(names)
            keys.append(key)
            row = known.pop(key, -1)  # a text two records share is reused once, counted again for the other
            sources.append(row)
            if row < 0:
                fresh.append(document_tokens(record.title, record.abstract, record.author_names, record.venue))
        retriever, counts = _retriever_and_counts(previous, sources, fresh, keys) if ids else (None, None)
        snapshot = LexicalSnapshot(
            ids=ids, years=np.asarray(years, dtype=np.int32), venues=venues, authors=authors,
            digest=digest, generation=generation, retriever=retriever, feed=feed, counts=counts,
        )
        self._save(snapshot, counts)
        return snapshot

    def _previous_counts(self) -> TermCounts | None:
        """The term counts saved with the current build, when it is of this tokenizer (``_read_manifest``)."""
        path = self._build_dir()
        return TermCounts.load(path, _TOKEN_RECIPE) if path is not None else None

    def _save(self, snapshot: LexicalSnapshot, counts: TermCounts | None = None) -> None:
        """Write the build (and its term counts) to a fresh directory, then switch the manifest to it atomically.

        Nothing is written where the data dir cannot be written (a read-only snapshot): the build stays in memory.
        """
        reason = unwritable_reason(self.directory)
        if reason is not None:
            log.debug("The lexical index stays in memory: %s cannot be written (%s).", self.directory, reason)
            return
        build = f"build-{snapshot.generation}-{uuid.uuid4().hex[:8]}"
        staging = self.directory / f"tmp-{build}"
        try:
            staging.mkdir(parents=True, exist_ok=False)
            if snapshot.retriever is not None:
                snapshot.retriever.save(str(staging), show_progress=False)
            if counts is not None:
                counts.save(staging)
            docs = {"ids": snapshot.ids, "years": snapshot.years.tolist(), "venues": snapshot.venues,
                    "authors": snapshot.authors}
            (staging / "docs.json").write_text(json.dumps(docs, ensure_ascii=False), encoding="utf-8")
            os.replace(staging, self.directory / build)
            manifest = {"format": FORMAT_VERSION, "tokenizer": TOKENIZER_VERSION, "bm25": _BM25_PARAMETERS,
                        "generation": snapshot.generation, "feed": snapshot.feed,
                        "digest": snapshot.digest, "build": build, "documents": len(snapshot.ids)}
            temporary = self.directory / f"manifest.{uuid.uuid4().hex[:8]}.tmp"
            temporary.write_text(json.dumps(manifest), encoding="utf-8")
            os.replace(temporary, self.manifest_path)
        except OSError as exc:
            log.warning("Could not save the lexical index under %s (%s); keeping it in memory.", self.directory, exc)
            shutil.rmtree(staging, ignore_errors=True)
            return
        self._unsaved = 0
        self._remove_old_builds(keep=build)

    def _remove_old_builds(self, keep: str) -> None:
        for path in self.directory.glob("build-*"):
            if path.name != keep and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)


def follow_limit(documents: int) -> int:
    """How many changed records an index of ``documents`` reads from the change feed at most;
    beyond, it rebuilds (reading every record, reusing the term counts of unchanged texts)."""
    return max(FOLLOW_AT_LEAST, int(documents * FOLLOW_FRACTION))


def save_after(documents: int) -> int:
    """How many followed changes an index of ``documents`` keeps in memory only before it saves
    its build again (a process starting later reads the changes since the saved build)."""
    return max(SAVE_AT_LEAST, int(documents * SAVE_FRACTION))


def _fields(record: RecordText) -> tuple[int, str | None, list[str], bytes]:
    """(year or -1, folded venue, author keys, ``document_key``) of one record: what a snapshot keeps of it."""
    return (record.year if record.year is not None else -1, folded(record.venue) if record.venue else None,
            [key for key in map(author_key, record.author_names) if key],
            document_key(record.title, record.abstract, record.author_names, record.venue))


@older_objects_frozen()
def _followed(snapshot: LexicalSnapshot, changes: RecordChanges) -> LexicalSnapshot:
    """``snapshot`` with ``changes`` applied, equal to a build from the store at ``changes.generation``.

    The documents of changed and removed records are taken out and the changed ones put back in
    id order (``lexical_follow``); the term counts of the unchanged documents, and of a changed
    record whose text BM25 reads is the same, are reused as they are, the others' texts are
    tokenised, and the score matrix is derived from the counts (``_retriever_and_counts``). The
    snapshot itself when nothing it holds changed (its generation moves on).
    """
    records = changes.records
    fields = [_fields(record) for record in records]
    positions = [snapshot.position(record.id) for record in records]
    if not changes.removed and all(
            position is not None and snapshot.counts is not None and snapshot.counts.keys[position] == key
            and (int(snapshot.years[position]), snapshot.venues[position], snapshot.authors[position]) == (year, venue, names)
            for position, (year, venue, names, key) in zip(positions, fields, strict=True)):
        snapshot.generation = changes.generation
        return snapshot
    gone = [position for paper_id in changes.removed if (position := snapshot.position(paper_id)) is not None]
    gone += [position for position in positions if position is not None]
    sources, added_at = merged_sources(snapshot.ids, gone, [record.id for record in records])
    ids = rearranged(snapshot.ids, sources, [record.id for record in records])
    venues = rearranged(snapshot.venues, sources, [venue for _, venue, _, _ in fields])
    authors = rearranged(snapshot.authors, sources, [names for _, _, names, _ in fields])
    years = np.empty(len(ids), dtype=np.int32)
    kept = sources >= 0
    years[kept] = snapshot.years[sources[kept]]
    years[added_at] = [year for year, _, _, _ in fields]
    counted = sources.copy()  # where each document's term counts come from
    fresh: list[list[str]] = []
    old_keys = snapshot.counts.keys if snapshot.counts is not None else np.zeros(0, dtype="S16")
    keys = np.empty(len(ids), dtype=old_keys.dtype if len(old_keys) else "S16")
    keys[kept] = old_keys[sources[kept]]
    for record, position, at, (_, _, _, key) in zip(records, positions, added_at.tolist(), fields, strict=True):
        keys[at] = key
        if position is not None and old_keys[position] == key:
            counted[at] = position  # the same text: its counts are still right
        else:
            fresh.append(document_tokens(record.title, record.abstract, record.author_names, record.venue))
    retriever, counts = _retriever_and_counts(snapshot.counts, counted, fresh, keys) if ids else (None, None)
    return LexicalSnapshot(ids=ids, years=years, venues=venues, authors=authors, digest=None,
                           generation=changes.generation, retriever=retriever, feed=snapshot.feed, counts=counts)
