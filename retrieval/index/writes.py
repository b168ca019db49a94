"""The write path: ``upsert`` final records and ``delete`` them, in an order a crash cannot betray.

``upsert`` receives final (already merged) records. Unchanged records (same ``content_hash``)
cost nothing; only records whose ``embedding_hash`` changed are embedded again (a record whose
text did not change keeps its vector and its Chroma metadata, which is that hash); a record whose
id changed (``replaces``) keeps its old vector when its text did not change. Write order:
Chroma first, then the store in one transaction, then deleting the vectors of replaced ids. A
failure part-way therefore leaves at worst vectors without records (ignored by search, removed
by ``repair``), never records that look indexed but are not. The BM25 index is rebuilt lazily
on the first search after a change (``lexical``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from retrieval.errors import ConfigError
from retrieval.index.catch_up import MigrationCatchUp, OtherWriters
from retrieval.index.dense import DenseStore, record_metadata
from retrieval.index.encoders.encode_ahead import ahead_of, take_spare
from retrieval.index.maintenance import ENCODE_BATCH, EncoderGuard
from retrieval.records.paper import Paper
from retrieval.storage.records import RecordStore


@dataclass(frozen=True)
class AheadRule:
    """How many texts an ingest must encode before a child process encodes them ahead (``encode_ahead``).

    The overlap saves about 0.45 ms a record (the pipeline's work beside the encoder, half of it
    hidden); the child costs about 0.5 s once (making its sessions while this process encodes,
    closing it), plus about 0.6 s of start-up when it is started here rather than in advance by
    ``paperbot ingest`` (``worker_process.start_encoding_process``). Measured on SciFact
    abstracts and real publication lists (docs/encoders.md, "Encoding ahead in a child process").
    """

    started_in_advance: int = 1000
    started_here: int = 4000


AHEAD_RULE = AheadRule()


@dataclass
class UpsertReport:
    """What ``upsert`` did, by record id."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # old ids removed because the record's id changed
    embedded: int = 0  # vectors computed by the encoder
    reused: int = 0  # vectors copied from a replaced id with the same text


class IndexWriter:
    """Writes records to the store and their vectors to Chroma (see the module docstring)."""

    def __init__(self, store: RecordStore, dense: DenseStore, *, encoders: EncoderGuard,
                 migration: MigrationCatchUp, other_writers: OtherWriters) -> None:
        self.store = store
        self.dense = dense
        self.encoders = encoders
        self.migration = migration
        self.other_writers = other_writers

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
        self.migration.run()
        self.other_writers.see()
        latest: dict[str, Paper] = {}
        for paper in papers:
            latest[paper.id] = paper
        swaps = {new: old for new, old in (replaces or {}).items() if old != new}
        strangers = sorted(set(swaps) - set(latest))
        if strangers:
            raise ValueError(f"replaces names ids that are not being upserted: {strangers[:3]}")
        existing = self.store.hashes([*latest, *swaps.values()])
        report = UpsertReport()
        # by id, taken once from ``latest``: ``Paper.id`` is computed anew on every access
        needs_vector: dict[str, Paper] = {}
        kept_vectors = 0  # updated records whose text, hence vector and Chroma metadata, did not change
        for paper_id, paper in latest.items():
            stored = existing.get(paper_id)
            if stored is None:
                report.added.append(paper_id)
                needs_vector[paper_id] = paper
            elif stored[0] == paper.content_hash:
                report.unchanged.append(paper_id)
            else:
                report.updated.append(paper_id)
                if stored[1] == paper.embedding_hash:
                    kept_vectors += 1
                else:
                    needs_vector[paper_id] = paper
        old_ids = [old for old in dict.fromkeys(swaps.values()) if old not in latest]
        total = len(latest)
        done = len(report.unchanged) + kept_vectors
        if progress:
            progress(done, total)

        vectors = self._reusable_vectors(needs_vector, swaps, existing)
        report.reused = len(vectors)
        to_encode = [paper_id for paper_id in needs_vector if paper_id not in vectors]
        if to_encode:
            self.encoders.check()
        done += report.reused
        for start in range(0, len(to_encode), ENCODE_BATCH):
            batch = to_encode[start : start + ENCODE_BATCH]
            embedded = self.encoders.embed([needs_vector[paper_id] for paper_id in batch])
            vectors.update(zip(batch, embedded, strict=True))
            report.embedded += len(batch)
            done += len(batch)
            if progress:
                progress(done, total)

        if needs_vector:
            self.dense.upsert(list(needs_vector), np.stack([vectors[paper_id] for paper_id in needs_vector]),
                              [record_metadata(paper) for paper in needs_vector.values()])
        if to_encode and self.encoders.recorded() is None:
            self.encoders.record(self.encoders.encoder.name)  # the first vectors of this index
        changed = [latest[paper_id] for paper_id in (*report.added, *report.updated)]
        with self.other_writers.own_write():
            self.store.write(put=changed, delete=old_ids)
        if old_ids:
            self.dense.delete(old_ids)
        report.replaced = old_ids
        if progress:
            progress(total, total)
        return report

    def texts_to_encode(self, papers: Sequence[Paper]) -> list[str]:
        """The distinct texts an upsert of ``papers`` would encode, in their order: those of records
        that are new or whose text changed, and whose vector the embedding cache lacks."""
        ids = [paper.id for paper in papers]  # ``Paper.id`` is computed anew on every access
        stored = self.store.hashes(ids)
        fresh = [paper for paper_id, paper in zip(ids, papers, strict=True)
                 if stored.get(paper_id, ("", ""))[1] != paper.embedding_hash]
        if not fresh:
            return []
        return list(dict.fromkeys(paper.embedding_text for paper in self.encoders.uncached(fresh)))

    @contextmanager
    def encoding_ahead(self, papers: Sequence[Paper], rule: AheadRule | None = None) -> Iterator[None]:
        """Within the block, this thread's upserts take their vectors from a child process that
        encodes ``papers``' texts ahead (``encode_ahead``), when enough texts need encoding for
        that to pay (``rule``, by default ``AHEAD_RULE``) and ``PAPERBOT_ENCODE_AHEAD`` allows it:
        a child started in advance (``worker_process.start_encoding_process``) is used or closed
        here. Otherwise, or when the index's vectors are another encoder's (the upsert then
        refuses as always), the block runs as it would without."""
        rule = rule or AHEAD_RULE
        spare = take_spare()
        texts: list[str] = []
        try:
            texts = self._worth_encoding_ahead(papers, rule.started_here if spare is None else rule.started_in_advance)
        finally:
            if not texts and spare is not None:  # not needed, or working out the texts failed
                spare.close()
        if not texts:
            yield
            return
        with ahead_of(self.encoders.encoder, texts, spare) as encoder, self.encoders.embedding_through(encoder):
            yield

    def _worth_encoding_ahead(self, papers: Sequence[Paper], needed: int) -> list[str]:
        """``texts_to_encode(papers)`` when encoding ahead is allowed and there are at least
        ``needed`` of them; else none."""
        if not self.encoders.settings.encode_ahead or len(papers) < needed:  # or PAPERBOT_ENCODE_AHEAD=false
            return []
        try:
            self.encoders.check()
        except ConfigError:
            return []
        texts = self.texts_to_encode(papers)
        return texts if len(texts) >= max(1, needed) else []

    def _reusable_vectors(
        self, papers: Mapping[str, Paper], swaps: Mapping[str, str], existing: Mapping[str, tuple[str, str]]
    ) -> dict[str, np.ndarray]:
        """Vectors of replaced ids whose text equals the new record's (no need to re-embed).

        ``papers``: the records by id.
        """
        sources = {
            paper_id: swaps[paper_id]
            for paper_id, paper in papers.items()
            if paper_id in swaps and existing.get(swaps[paper_id], ("", ""))[1] == paper.embedding_hash
        }
        if not sources:
            return {}
        stored = self.dense.vectors(list(sources.values()))
        return {new: stored[old] for new, old in sources.items() if old in stored}

    def delete(self, ids: Sequence[str]) -> int:
        """Remove records (store first, then vectors); returns how many records existed."""
        unique = list(dict.fromkeys(ids))
        self.migration.run()
        self.other_writers.see()
        with self.other_writers.own_write():
            removed = self.store.delete_many(unique)
        if unique:
            self.dense.delete(unique)
        return removed
