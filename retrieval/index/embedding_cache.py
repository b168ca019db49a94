"""Embeddings cached by (encoder name, text hash): re-indexing never recomputes a vector.

One SQLite file (``settings.cache_dir / "embeddings.sqlite3"`` by convention) holds a row per
vector: the encoder's ``name`` (vectors of different encoders never mix), the hash of the
embedded text (``Paper.embedding_hash``) and the float32 vector as little-endian bytes. WAL mode
lets several processes read while one writes. The file is only a cache: when it is unreadable
it is moved aside (kept for inspection) and a new one is started. On a full disk, where a WAL
file cannot even be opened, it is read from a snapshot (``sqlite_files.open_snapshot``) and
every write raises ``DiskFullError`` until a normal open works again. In a read-only data dir
(``sqlite_files.unwritable``: a snapshot, a backup) the file is not touched at all: the cache
starts empty in memory, for this process only, and its writes never fail.

    cache = EmbeddingCache(settings.cache_dir / "embeddings.sqlite3")
    vectors = encode_with_cache(encoder, [(p.embedding_text, p.embedding_hash) for p in papers], cache)
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Self

import numpy as np

from retrieval.errors import DiskFullError, StorageError
from retrieval.index.encoders.base import Encoder
from retrieval.records.paper import Paper
from retrieval.storage.sqlite import (
    disk_is_full,
    open_snapshot,
    report_read_only,
    rollback,
    unwritable,
    use_write_ahead_log,
)

log = logging.getLogger(__name__)

ENCODE_CHUNK = 256  # misses encoded (and stored) per encoder call
BUSY_TIMEOUT = 30.0  # seconds a connection waits for another one's write lock (and a new file's WAL switch)
_SQL_VARIABLES = 500  # hashes per SELECT ... IN (...)
_VECTOR = np.dtype("<f4")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    encoder TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (encoder, text_hash)
) WITHOUT ROWID
"""

Progress = Callable[[int, int], None]


class EmbeddingCache:
    """SQLite map (encoder name, text hash) -> float32 vector. Safe to share between threads."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._read_only = False  # a snapshot of a full disk (see the module docstring)
        reason = unwritable(self.path)
        if reason is not None:  # a read-only data dir: an empty cache in memory
            log.debug("The embedding cache %s cannot be written (%s): using one in memory.", self.path, reason)
            self._db = self._open(":memory:")
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            snapshot = open_snapshot(self.path) if disk_is_full(exc, self.path) else None
            if snapshot is not None:
                report_read_only(str(self.path.parent.parent), f"the embedding cache {self.path} is read-only")
                self._db, self._read_only = snapshot, True
                return
            if "not a database" not in str(exc) and "malformed" not in str(exc):
                raise self._storage_error(exc) from exc
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            log.warning("Embedding cache %s is unreadable (%s); moved it to %s and starting a new one.",
                        self.path, exc, aside)
            try:
                self.path.replace(aside)
                for suffix in ("-wal", "-shm"):  # a new file must not pick up the old journal
                    journal = self.path.with_name(self.path.name + suffix)
                    if journal.exists():
                        journal.replace(aside.with_name(aside.name + suffix))
                self._db = self._open()
            except (sqlite3.Error, OSError) as again:
                raise self._storage_error(again) from again
        except OSError as exc:
            raise self._storage_error(exc) from exc

    def _open(self, target: str | None = None) -> sqlite3.Connection:
        """A connection to the cache file (or to ``target``, e.g. ":memory:") with its pragmas and table."""
        db = sqlite3.connect(target or self.path, timeout=BUSY_TIMEOUT, check_same_thread=False, isolation_level=None)
        try:
            use_write_ahead_log(db, BUSY_TIMEOUT)
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _storage_error(self, exc: Exception) -> StorageError:
        if disk_is_full(exc, self.path):
            return DiskFullError(f"write to the embedding cache {self.path}", where=str(self.path.parent.parent))
        return StorageError(
            f"The embedding cache {self.path} cannot be opened or written ({exc}).",
            hint="Check free disk space and the permissions of PAPERBOT_DATA_DIR.",
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def get_many(self, encoder_name: str, hashes: Iterable[str], dimension: int) -> dict[str, np.ndarray]:
        """Cached vectors among ``hashes`` (absent ones, or ones of another length, are left out)."""
        rows = self._rows_of("text_hash, vector", encoder_name, hashes, dimension)
        return {text_hash: np.frombuffer(blob, dtype=_VECTOR).astype(np.float32) for text_hash, blob in rows}

    def held(self, encoder_name: str, hashes: Iterable[str], dimension: int) -> set[str]:
        """The hashes among ``hashes`` whose vector (of ``dimension`` floats) the cache holds."""
        return {text_hash for (text_hash,) in self._rows_of("text_hash", encoder_name, hashes, dimension)}

    def _rows_of(self, columns: str, encoder_name: str, hashes: Iterable[str], dimension: int) -> list[tuple]:
        """``columns`` of the rows of ``encoder_name`` among ``hashes`` whose vector has ``dimension``
        floats, asked in chunks under SQLite's limit on variables."""
        wanted = list(dict.fromkeys(hashes))
        found: list[tuple] = []
        with self._lock:
            try:
                for start in range(0, len(wanted), _SQL_VARIABLES):
                    chunk = wanted[start : start + _SQL_VARIABLES]
                    found += self._db.execute(
                        f"SELECT {columns} FROM embeddings WHERE encoder = ? AND length(vector) = ? AND text_hash IN "
                        f"({','.join('?' * len(chunk))})",
                        [encoder_name, dimension * _VECTOR.itemsize, *chunk],
                    ).fetchall()
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from exc
        return found

    def put_many(self, encoder_name: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors by text hash (one transaction; an existing entry is replaced)."""
        rows = [
            (encoder_name, text_hash, np.ascontiguousarray(vector, dtype=_VECTOR).tobytes())
            for text_hash, vector in vectors.items()
        ]
        with self._lock:
            try:
                self._writable()
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO embeddings (encoder, text_hash, vector) VALUES (?, ?, ?)", rows
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    rollback(self._db)  # a failing ROLLBACK must not hide the error itself
                    raise
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from exc

    def _writable(self) -> None:
        """Leave a full disk's snapshot when the file opens normally again (caller holds the lock)."""
        if self._read_only:
            db = self._open()  # raises while the disk is still full; the snapshot stays in use
            self._db.close()
            self._db, self._read_only = db, False

    def _query(self, sql: str, parameters: Sequence[object] = ()) -> list[tuple]:
        with self._lock:
            try:
                cursor = self._db.execute(sql, parameters)
                return cursor.fetchall() if cursor.description else [(cursor.rowcount,)]
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from exc

    def count(self, encoder_name: str | None = None) -> int:
        """Cached vectors, of one encoder or of all."""
        if encoder_name is None:
            return int(self._query("SELECT COUNT(*) FROM embeddings")[0][0])
        return int(self._query("SELECT COUNT(*) FROM embeddings WHERE encoder = ?", (encoder_name,))[0][0])

    def encoders(self) -> dict[str, int]:
        """Encoder name -> number of cached vectors (e.g. to spot vectors of an old variant)."""
        return {name: int(n) for name, n in self._query("SELECT encoder, COUNT(*) FROM embeddings GROUP BY encoder")}

    def drop_encoder(self, encoder_name: str) -> int:
        """Forget every vector of one encoder; returns how many were removed."""
        return int(self._query("DELETE FROM embeddings WHERE encoder = ?", (encoder_name,))[0][0])


def encode_with_cache(
    encoder: Encoder,
    texts_with_hashes: Sequence[tuple[str, str]],
    cache: EmbeddingCache,
    progress: Progress | None = None,
    *,
    chunk_size: int = ENCODE_CHUNK,
) -> np.ndarray:
    """Vectors for ``(text, text_hash)`` pairs, in order: cached ones read, only misses encoded.

    Misses are encoded ``chunk_size`` at a time and each chunk is stored before the next one
    starts, so an interrupted run keeps what it computed. A hash listed twice is encoded once.
    ``progress(done, total)`` counts pairs: first the hits, then after every encoded chunk.
    Returns a float32 array of shape ``(len(texts_with_hashes), encoder.dimension)``.
    """
    total = len(texts_with_hashes)
    out = np.zeros((total, encoder.dimension), dtype=np.float32)
    if total == 0:
        if progress:
            progress(0, 0)
        return out
    rows_by_hash: dict[str, list[int]] = {}
    text_by_hash: dict[str, str] = {}
    for row, (text, text_hash) in enumerate(texts_with_hashes):
        rows_by_hash.setdefault(text_hash, []).append(row)
        text_by_hash.setdefault(text_hash, text)
    cached = cache.get_many(encoder.name, rows_by_hash, encoder.dimension)
    done = 0
    for text_hash, vector in cached.items():
        rows = rows_by_hash[text_hash]
        out[rows] = vector
        done += len(rows)
    if progress:
        progress(done, total)
    misses = [text_hash for text_hash in rows_by_hash if text_hash not in cached]
    for start in range(0, len(misses), chunk_size):
        chunk = misses[start : start + chunk_size]
        vectors = np.asarray(encoder.encode([text_by_hash[h] for h in chunk]), dtype=np.float32)
        if vectors.shape != (len(chunk), encoder.dimension):
            raise ValueError(f"encoder {encoder.name!r} returned shape {vectors.shape} for {len(chunk)} texts")
        cache.put_many(encoder.name, dict(zip(chunk, vectors, strict=True)))
        # one copy for the chunk (row by row was most of this loop): each vector to every row of its hash
        targets = [row for text_hash in chunk for row in rows_by_hash[text_hash]]
        sources = [index for index, text_hash in enumerate(chunk) for _ in rows_by_hash[text_hash]]
        out[targets] = vectors[sources]
        done += len(targets)
        if progress:
            progress(done, total)
    return out


def paper_embedder(cache: EmbeddingCache, *, chunk_size: int = ENCODE_CHUNK) -> CachedPaperEmbedder:
    """An ``embed(encoder, papers)`` function for ``PaperIndex.open(..., embed=...)``.

    Keys are ``Paper.embedding_hash`` and texts ``Paper.embedding_text``. It also says which
    papers it would have to encode (``uncached``), so that an ingest can have those encoded
    ahead (``encode_ahead``).
    """
    return CachedPaperEmbedder(cache, chunk_size)


class CachedPaperEmbedder:
    """``paper_embedder``'s function: records' vectors through the cache."""

    def __init__(self, cache: EmbeddingCache, chunk_size: int = ENCODE_CHUNK) -> None:
        self.cache = cache
        self.chunk_size = chunk_size

    def __call__(self, encoder: Encoder, papers: Sequence[Paper]) -> np.ndarray:
        pairs = [(paper.embedding_text, paper.embedding_hash) for paper in papers]
        return encode_with_cache(encoder, pairs, self.cache, chunk_size=self.chunk_size)

    def uncached(self, encoder: Encoder, papers: Sequence[Paper]) -> list[Paper]:
        """The papers whose vector by ``encoder`` the cache does not hold."""
        held = self.cache.held(encoder.name, [paper.embedding_hash for paper in papers], encoder.dimension)
        return [paper for paper in papers if paper.embedding_hash not in held]


def default_cache_path(cache_dir: Path) -> Path:
    """The conventional location: ``settings.cache_dir / "embeddings.sqlite3"``."""
    return Path(cache_dir) / "embeddings.sqlite3"
