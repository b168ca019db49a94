"""How Chroma and BM25 keep following the record store they are derived from.

Two things change the store behind an open index's back, and each has a small class here:

* ``OtherWriters``: another process wrote (``paperbot ingest`` while ``paperbot serve`` runs).
  The store's generation counter tells; the embedded vector index, which holds its data in
  memory, is then reloaded (``DenseStore.refresh``). Our own writes are noted and need no
  reload. A Chroma server is shared live: nothing to do.
* ``MigrationCatchUp``: a record-store migration changed records (cleaned author names, ids
  re-keyed) and left the vector moves it could not do itself (``RecordStore.vector_moves``).
  On the first use of the index each vector moves to its record's new id with fresh metadata,
  reusing the stored vector whenever the text is unchanged; only records whose text a merge
  changed are embedded; vectors of ids that no longer exist are removed and BM25 is rebuilt.
  Every step is idempotent and moves are forgotten batch by batch after their vectors are
  written, so an interrupted catch-up simply runs again. A read-only data dir cannot be caught
  up: it is read as it is (records whose vector has not moved yet are found by words only),
  with one warning.

Details and the reasoning: ``docs/index.md`` ("Migrations", "Other processes").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from retrieval.config import Settings
from retrieval.index.dense import DenseStore, record_metadata
from retrieval.index.lexical import LexicalIndex
from retrieval.records.paper import Paper
from retrieval.storage.records import RecordStore

log = logging.getLogger(__name__)

# Vectors for records that no stored vector matches; may leave some out (none while the stored
# vectors come from another encoder: ``EncoderGuard.embed_unless_mixed``).
EmbedMissing = Callable[[Sequence[Paper]], dict[str, np.ndarray]]


class OtherWriters:
    """Which store generation the embedded vector index is known to hold, and the reload when it is behind."""

    def __init__(self, settings: Settings, store: RecordStore, dense: DenseStore) -> None:
        self.settings = settings
        self.store = store
        self.dense = dense
        self._seen: int | None = None  # store generation the embedded vector index is known to hold
        self._lock = threading.Lock()

    def see(self) -> None:
        """Reload the embedded vector index when another process changed the index since we last looked."""
        if self.settings.chroma_url:
            return
        with self._lock:
            generation = self.store.generation()
            if self._seen is not None and generation != self._seen:
                log.info("The index was changed by another process: reloading the embedded vector index.")
                self.dense.refresh()
            self._seen = generation

    @contextmanager
    def own_write(self) -> Iterator[None]:
        """Around one store write of ours: afterwards the view stays current unless another process wrote too.

        When the write raises, nothing is noted (the next ``see`` decides).
        """
        before = self._seen
        yield
        if self.settings.chroma_url:
            return
        with self._lock:
            after = self.store.generation()
            if self._seen == before and before is not None and after == before + 1:
                self._seen = after

    def forget(self) -> None:
        """The vector index was replaced: the next ``see`` only records the generation."""
        self._seen = None


class MigrationCatchUp:
    """Brings Chroma and BM25 up to a store migration that changed records, once per open index."""

    def __init__(self, store: RecordStore, dense: DenseStore, lexical: LexicalIndex,
                 embed_missing: EmbedMissing) -> None:
        self.store = store
        self.dense = dense
        self.lexical = lexical
        self.embed_missing = embed_missing
        self._done = False  # True once Chroma and BM25 follow the store's last migration
        self._lock = threading.RLock()

    def run(self) -> None:
        """Catch up when the store says a migration left work for the derived indexes; cheap afterwards."""
        if self._done:
            return
        with self._lock:
            if self._done:
                return
            if self.store.derived_refresh_pending() and self.store.read_only is not None:
                log.warning("The vector index has not caught up with the record store's last migration, and the "
                            "data dir is read-only (%s): some records are found by their words only until it is "
                            "opened writable.", self.store.read_only)
            elif self.store.derived_refresh_pending():
                log.info("Updating the vector and BM25 indexes to the migrated record store.")
                self._apply_vector_moves()
                self.lexical.rebuild()
                self.store.derived_refresh_done()
            self._done = True

    def superseded(self) -> None:
        """Every vector was just made anew from the migrated records (a rebuild): nothing left to move."""
        if self.store.derived_refresh_pending():
            while moves := self.store.vector_moves():
                self.store.vector_moves_done([old for old, _, _ in moves])
            self.store.derived_refresh_done()
        self._done = True

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
                vectors.update(self.embed_missing(to_embed))
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
