"""Each BM25 document's term counts, saved with a build so that the next build tokenises only what changed.

A BM25 build needs, per document, how often each term occurs in it (its length follows); the
scores come from those counts and the corpus-wide document frequencies. Tokenising is about
half of a rebuild (50,000 SciFact-like records: 3.4 of 6.7 s), yet an ingest of a few records
into a large index changes the tokens of those few only. So every build also saves its counts
(``counts.npz`` beside bm25s' arrays: every (term, document, count) the build scored, each
document's key of the text they were counted in, and the vocabulary), and the next build reuses the
counts of every document whose key it finds there.

A key is a hash of the text BM25 reads (``document_key``), not the record's content hash: the
tokens are a function of that text and of how it is tokenised, nothing else. The latter is the
caller's ``recipe`` (the title's weight, the tokenizer's version), saved with the counts: counts
of another recipe are never read. Anything wrong with the file makes the next build tokenise
everything, as before the file existed.

The score matrix of reused and fresh counts is computed by the same operations as from tokens
(``score_matrix``), so a document's scores do not depend on where its counts came from; only
the numbering of the terms differs (tests/index/test_term_counts.py).
"""

from __future__ import annotations

import hashlib
import logging
import math
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

COUNTS_FILE = "counts.npz"
COUNTS_FORMAT = 1  # of the file's arrays; another value is not read
_KEY_BYTES = 16
_BLOCK = 1 << 16  # (term, document) entries scored at once by ``score_matrix``

# What bm25s' ``tfc`` and ``idf * tfc`` compute in: its float64 scalar (the document's length
# factor) against float32 arrays (term counts, idf) gives float64 under NumPy 2's promotion,
# float32 under NumPy 1's value-based casting (pyproject allows both).
SCORE_DTYPE = np.result_type(np.float64(1.0), np.ones(1, dtype=np.float32))


def document_key(title: str, abstract: str | None, author_names: Sequence[str], venue: str | None) -> bytes:
    """16 bytes naming the text BM25 reads of one record (``lexical.document_tokens``' inputs)."""
    fields = [title, abstract or "", venue or "", *author_names]  # a missing and an empty field read alike
    text = "".join(f"{len(field)}:{field}" for field in fields)  # length-prefixed: no two lists join alike
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=_KEY_BYTES).digest()


@dataclass(frozen=True)
class TermPairs:
    """One entry per (term, document) with the term's count there, sorted by term then document."""

    terms: np.ndarray  # int64 from tokens, int32 from reused counts
    docs: np.ndarray  # likewise
    counts: np.ndarray  # int64 from tokens, uint32 from reused counts
    lengths: np.ndarray  # int64, per document: its number of tokens


def pairs_of_tokens(corpus: Sequence[Sequence[str]], vocab: dict[str, int]) -> TermPairs:
    """The ``TermPairs`` of tokenised documents, terms numbered by ``vocab``."""
    documents = len(corpus)
    lengths = np.array([len(tokens) for tokens in corpus], dtype=np.int64)
    # one int64 key per token, built in place (100k abstracts are 25M tokens: every copy is 200 MB)
    keys = np.fromiter(map(vocab.__getitem__, chain.from_iterable(corpus)), dtype=np.int64, count=int(lengths.sum()))
    keys *= documents
    keys += np.repeat(np.arange(documents, dtype=np.int32), lengths)
    pairs, counts = np.unique(keys, return_counts=True)
    del keys
    return TermPairs(pairs // documents, pairs % documents, counts.astype(np.int64), lengths)


def score_matrix(pairs: TermPairs, terms: int, k1: float, b: float) -> dict:
    """bm25s' CSC score matrix (``data``, ``indices``, ``indptr``, ``num_docs``) of ``pairs``.

    The Lucene formulas of bm25s, operation for operation (see ``lexical._bm25_index``).
    """
    documents = len(pairs.lengths)
    doc_freqs = np.bincount(pairs.terms, minlength=terms)
    indptr = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(doc_freqs, out=indptr[1:])
    idf = idf_array(doc_freqs, documents)
    length_factor = k1 * ((1 - b) + b * pairs.lengths / pairs.lengths.mean())  # per document, float64
    data = np.empty(len(pairs.counts), dtype=np.float32)
    for start in range(0, len(data), _BLOCK):  # in blocks: the float64 temporaries stay small (and in cache)
        block = slice(start, start + _BLOCK)
        tf = pairs.counts[block].astype(np.float32).astype(SCORE_DTYPE)
        tfc = tf / (length_factor[pairs.docs[block]].astype(SCORE_DTYPE) + tf)
        data[block] = idf[pairs.terms[block]].astype(SCORE_DTYPE) * tfc  # cast to float32 on assignment, as astype
    return {"data": data, "indices": pairs.docs.astype(np.int32), "indptr": indptr, "num_docs": documents}


def idf_array(doc_freqs: np.ndarray, documents: int) -> np.ndarray:
    """float32 Lucene idf of every term, ``math.log`` of each distinct document frequency as bm25s
    computes it (not numpy's ``log``, whose last bit may differ)."""
    distinct = np.unique(doc_freqs)
    values = np.array([math.log(1 + (documents - df + 0.5) / (df + 0.5)) for df in distinct.tolist()],
                      dtype=np.float32)
    return values[np.searchsorted(distinct, doc_freqs)]


@dataclass(frozen=True)
class TermCounts:
    """The term counts of one build's documents (what ``COUNTS_FILE`` holds): the build's
    ``TermPairs`` as they were scored, by term then document, with each document's key."""

    recipe: str  # how a record's text became its tokens (the caller's words); counts of another recipe are not read
    vocab: list[str]  # term id -> token
    keys: np.ndarray  # (documents,) ``S16``: each document's ``document_key``, in index order
    terms: np.ndarray  # int32 term ids
    docs: np.ndarray  # int32 document positions
    counts: np.ndarray  # uint16 (uint32 where a document repeats a term more often)

    @classmethod
    def of(cls, recipe: str, vocab: Sequence[str], keys: Sequence[bytes] | np.ndarray, pairs: TermPairs) -> TermCounts:
        """The counts of a build's ``pairs`` (terms numbered as in ``vocab``), in their order."""
        counts = pairs.counts
        narrow = np.uint16 if len(counts) == 0 or int(counts.max()) <= np.iinfo(np.uint16).max else np.uint32
        return cls(recipe, list(vocab), np.array(keys, dtype=f"S{_KEY_BYTES}"), pairs.terms.astype(np.int32),
                   pairs.docs.astype(np.int32), counts.astype(narrow))

    def rows(self) -> dict[bytes, int]:
        """Document key -> its position (the first, where two documents read the same text)."""
        rows: dict[bytes, int] = {}
        for row, key in enumerate(self.keys.tolist()):
            rows.setdefault(key, row)
        return rows

    def save(self, folder: Path) -> None:
        vocab = "\n".join(self.vocab).encode("utf-8", "surrogatepass")
        with (folder / COUNTS_FILE).open("wb") as handle:
            np.savez(handle, format=np.array([COUNTS_FORMAT, len(self.vocab)], dtype=np.int64),
                     recipe=np.frombuffer(self.recipe.encode("utf-8"), dtype=np.uint8),
                     vocab=np.frombuffer(vocab, dtype=np.uint8), keys=self.keys, terms=self.terms,
                     docs=self.docs, counts=self.counts)

    @classmethod
    def load(cls, folder: Path, recipe: str) -> TermCounts | None:
        """The counts saved in ``folder`` under ``recipe``; None (and a log line when it is not
        merely absent or of another format or recipe) otherwise."""
        path = folder / COUNTS_FILE
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as saved:
                version, size = (int(value) for value in saved["format"])
                if version != COUNTS_FORMAT or saved["recipe"].tobytes().decode("utf-8") != recipe:
                    return None
                vocab = saved["vocab"].tobytes().decode("utf-8", "surrogatepass").split("\n") if size else []
                counts = cls(recipe, vocab, saved["keys"], saved["terms"], saved["docs"], saved["counts"])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            log.info("The term counts in %s are unreadable (%s); the next BM25 build tokenises everything.", path, exc)
            return None
        if not counts._consistent(size):
            log.info("The term counts in %s do not hang together; the next BM25 build tokenises everything.", path)
            return None
        return counts

    def _consistent(self, vocabulary: int) -> bool:
        arrays = (self.terms, self.docs, self.counts)
        if (len(self.vocab) != vocabulary or self.keys.dtype != np.dtype(f"S{_KEY_BYTES}") or self.keys.ndim != 1
                or any(array.ndim != 1 or array.dtype.kind not in "iu" or len(array) != len(self.terms)
                       for array in arrays)):
            return False
        return len(self.terms) == 0 or (
            int(self.terms.min()) >= 0 and int(self.terms.max()) < vocabulary
            and int(self.docs.min()) >= 0 and int(self.docs.max()) < len(self.keys) and int(self.counts.min()) > 0)


def reused_pairs(previous: TermCounts, sources: Sequence[int] | np.ndarray, fresh: Iterable[Sequence[str]]) -> tuple[list[str], TermPairs]:
    """The vocabulary and ``TermPairs`` of documents whose counts come from ``previous`` or are counted now.

    ``sources[d]`` is document ``d``'s position in ``previous`` (each at most once), or -1 for a
    document counted from the next list of ``fresh`` (one per -1, in order). Terms keep their
    numbering from ``previous``, new terms follow, and terms no document holds any more are
    dropped (a build from scratch would not know them), so the vocabulary is exactly the corpus's.
    """
    rows = np.asarray(sources, dtype=np.int64)
    documents = len(rows)
    reused = np.flatnonzero(rows >= 0)
    if len(np.unique(rows[reused])) != len(reused):
        raise ValueError("a document of the previous build is reused twice")
    new_position = np.full(len(previous.keys), -1, dtype=np.int64)
    new_position[rows[reused]] = reused
    moved = new_position[previous.docs]  # a 100k-record corpus has 15M entries: one pass, no per-document slices
    kept = moved >= 0
    old_terms, old_docs, old_counts = previous.terms[kept], moved[kept].astype(np.int32), previous.counts[kept]
    del moved, kept

    vocab = list(previous.vocab)
    numbering = {token: term for term, token in enumerate(vocab)}
    fresh_docs = np.flatnonzero(rows < 0)
    fresh_lists = list(fresh)
    if len(fresh_lists) != len(fresh_docs):
        raise ValueError(f"{len(fresh_docs)} documents to count, {len(fresh_lists)} token lists given")
    for tokens in fresh_lists:
        for token in tokens:
            if token not in numbering:
                numbering[token] = len(vocab)
                vocab.append(token)
    counted = pairs_of_tokens(fresh_lists, numbering) if fresh_lists else None
    new_terms = counted.terms if counted is not None else np.zeros(0, dtype=np.int64)
    new_docs = fresh_docs[counted.docs] if counted is not None else np.zeros(0, dtype=np.int64)
    new_counts = counted.counts if counted is not None else np.zeros(0, dtype=np.int64)

    held = (np.bincount(old_terms, minlength=len(vocab)) + np.bincount(new_terms, minlength=len(vocab))) > 0
    renumbered = (np.cumsum(held) - 1).astype(np.int32)  # terms no document holds any more are dropped
    old_run = (renumbered[old_terms], old_docs, old_counts.astype(np.uint32))
    new_run = (renumbered[new_terms], new_docs.astype(np.int32), new_counts.astype(np.uint32))
    del old_terms, old_docs, old_counts
    if len(reused) < 2 or bool(np.all(rows[reused][1:] > rows[reused][:-1])):
        # the reused documents kept their order (a follower's, or a rebuild of the same ids): the
        # reused entries are still sorted by term then document, the counted ones too
        terms, docs, counts = _merged(old_run, new_run, documents)
    else:
        terms, docs, counts = (np.concatenate([old, new]) for old, new in zip(old_run, new_run, strict=True))
        order = np.argsort(terms.astype(np.int64) * documents + docs, kind="stable")
        terms, docs, counts = terms[order], docs[order], counts[order]
    lengths = np.bincount(docs, weights=counts, minlength=documents).astype(np.int64)
    kept_vocab = [token for token, keep in zip(vocab, held.tolist(), strict=True) if keep]
    return kept_vocab, TermPairs(terms, docs, counts, lengths)


def _merged(old: tuple[np.ndarray, ...], new: tuple[np.ndarray, ...], documents: int) -> tuple[np.ndarray, ...]:
    """Two runs of (terms, docs, counts), each sorted by term then document, as one sorted run: the
    new entries inserted where a sort would put them (one binary search each, no sort)."""
    keys = old[0].astype(np.int64)
    keys *= documents
    keys += old[1]
    at = np.searchsorted(keys, new[0].astype(np.int64) * documents + new[1]) + np.arange(len(new[0]))
    del keys
    size = len(old[0]) + len(new[0])
    from_old = np.ones(size, dtype=bool)
    from_old[at] = False
    merged = []
    for old_values, new_values in zip(old, new, strict=True):
        values = np.empty(size, dtype=old_values.dtype)
        values[from_old] = old_values
        values[at] = new_values
        merged.append(values)
    return tuple(merged)
