"""Keeping the index sound: the encoder guard, the consistency check and repair (``paperbot doctor``).

Encoder guard (``EncoderGuard``). Vectors of different encoders must not be mixed: the first
upsert that embeds records the encoder's name in the record store (``ENCODER_META_KEY``);
afterwards searches and embedding upserts with another encoder raise ``ConfigError`` naming
both and the fix (``paperbot doctor --repair`` re-embeds every record with the current
encoder, or PAPERBOT_ENCODER set back to the recorded one). The guard also loads the encoder
lazily and embeds records through the ``embed`` seam (the embedding cache).

Check and repair (``Maintenance``). ``check_consistency`` compares the record store (the source
of truth), Chroma and BM25; ``repair`` makes Chroma and BM25 follow the store. It refuses to
drop the vectors of a store that looks lost (``LOST_STORE_SHARE``) unless forced, re-embeds
everything when the encoder changed (marked as switching until done, so an interrupted run is
neither searched nor mistaken for done), and rebuilds a damaged vector index from the store,
keeping the damaged copy aside. Why each rule: ``docs/index.md`` ("Encoders", "Repair").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from retrieval.config import Settings, unwritable_reason
from retrieval.errors import ConfigError, IndexDamagedError, RepairRefusedError
from retrieval.index.catch_up import MigrationCatchUp, OtherWriters
from retrieval.index.dense import DenseStore, record_metadata
from retrieval.index.encoders.base import Encoder, choice_for_name
from retrieval.index.encoders.loading import describe_encoder_choice, load_encoder
from retrieval.index.lexical import LexicalIndex
from retrieval.records.paper import Paper
from retrieval.storage.records import RecordStore

log = logging.getLogger(__name__)

ENCODE_BATCH = 64  # records per embedding call (upsert, repair)
ENCODER_META_KEY = "encoder_name"  # record-store meta: the encoder that made the vectors
# Indexes written before the encoder name was recorded were all made by the torch encoder.
LEGACY_ENCODER_NAME = "all-MiniLM-L6-v2/torch"
_SWITCHING = "unfinished re-embedding"  # meta value while repair re-embeds: "<_SWITCHING> from X to Y"
LOST_STORE_SHARE = 0.5  # repair refuses to drop vectors when the store holds less of their ids than this
REBUILD_BATCH = 256  # records per embedding call and Chroma upsert while rebuilding a damaged index

EmbedFn = Callable[[Encoder, Sequence[Paper]], np.ndarray]
Progress = Callable[[int, int], None]  # (done, total)


def switching_from(name: str) -> str | None:
    """X of an "unfinished re-embedding from X to Y" marker; None for an encoder name."""
    prefix = f"{_SWITCHING} from "
    return name[len(prefix):].rsplit(" to ", 1)[0] if name.startswith(prefix) else None


def embed_papers(encoder: Encoder, papers: Sequence[Paper]) -> np.ndarray:
    """Default embedding of records: the encoder over ``Paper.embedding_text``.

    This is the seam for an embedding cache keyed by (encoder name, embedding_hash): pass
    ``embed=`` to ``PaperIndex.open`` with a function of the same shape.
    """
    return encoder.encode([paper.embedding_text for paper in papers])


# --- the encoder guard ---------------------------------------------------------------------------


class EncoderGuard:
    """The encoder (loaded on first need), which encoder made the stored vectors, and the refusal to mix them.

    ``factory(settings)`` loads the encoder when none is given; by default ``load_encoder``,
    told the recorded encoder so that ``auto`` keeps the one the index was built with.
    """

    def __init__(self, settings: Settings, store: RecordStore, encoder: Encoder | None = None, *,
                 embed: EmbedFn = embed_papers, factory: Callable[[Settings], Encoder] | None = None) -> None:
        self.settings = settings
        self.store = store
        self._encoder = encoder
        self._embed = embed
        self._factory = factory
        self._lock = threading.Lock()
        self._this_thread = threading.local()  # ``embedding_through``

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    factory = self._factory or self._load
                    self._encoder = factory(self.settings)
        return self._encoder

    def _load(self, settings: Settings) -> Encoder:
        """``load_encoder`` told which encoder made the stored vectors (or is re-embedding them):
        with ``auto`` the index keeps that one, whatever this machine's own choice would be."""
        recorded = self.indexed()
        if recorded is not None and switching_from(recorded) is not None:
            recorded = recorded.rsplit(" to ", 1)[1]
        return load_encoder(settings, indexed=recorded)

    def indexed(self) -> str | None:
        """Name of the encoder that made the stored vectors; None while no vector was written.

        Recorded in the record store's meta on the first upsert that embeds anything. An index
        from before that (records, no name) was made by ``LEGACY_ENCODER_NAME``.
        """
        name = self.store.get_meta(ENCODER_META_KEY)
        if name is None and self.store.count() > 0:
            return LEGACY_ENCODER_NAME
        return name

    def check(self) -> None:
        """Raise ``ConfigError`` when the stored vectors were made by another encoder.

        Mixing two encoders' vectors in one index would rank silently wrong, so searches and
        upserts that embed refuse, and the message says how to fix it (``paperbot doctor
        --repair`` re-embeds every record with the current encoder).
        """
        indexed = self.indexed()
        current = self.encoder.name
        if indexed is None or indexed == current:
            return
        fix = f"Run `paperbot doctor --repair` to re-embed all {self.store.count():,} records with {current!r}"
        if switching_from(indexed) is not None:
            raise ConfigError(f"The vector index is in the middle of an {indexed}.", hint=fix + ".")
        wanted = choice_for_name(indexed)
        keep = f", or set PAPERBOT_ENCODER={wanted} to keep using the index as it is." if wanted else "."
        raise ConfigError(
            f"The vector index was built with the encoder {indexed!r} but the current one is {current!r}; "
            "their vectors must not be mixed.",
            hint=fix + keep,
        )

    def embed(self, papers: Sequence[Paper]) -> np.ndarray:
        """Vectors of ``papers`` (float32, one row each) through the ``embed`` seam."""
        encoder = getattr(self._this_thread, "encoder", None) or self.encoder
        return np.asarray(self._embed(encoder, papers), dtype=np.float32)

    @contextmanager
    def embedding_through(self, encoder: Encoder) -> Iterator[None]:
        """Within the block, this thread's ``embed`` calls use ``encoder``, which must make the
        current encoder's vectors under its name (``encode_ahead.AheadEncoder``). Other threads (a
        Slack search during a sync) keep the encoder itself."""
        if encoder.name != self.encoder.name:
            raise ValueError(f"{encoder.name!r} is not the current encoder {self.encoder.name!r}")
        self._this_thread.encoder = encoder
        try:
            yield
        finally:
            self._this_thread.encoder = None

    def uncached(self, papers: Sequence[Paper]) -> list[Paper]:
        """The papers the ``embed`` seam would have to encode: those its cache lacks (all of them
        when the seam keeps no cache; ``embedding_cache.paper_embedder``'s does)."""
        uncached = getattr(self._embed, "uncached", None)
        return list(papers) if uncached is None else uncached(self.encoder, papers)

    def embed_unless_mixed(self, papers: Sequence[Paper]) -> dict[str, np.ndarray]:
        """Vectors by record id; none while the index's vectors come from another encoder
        (``repair`` re-embeds everything then, these too)."""
        try:
            self.check()
        except ConfigError as exc:
            log.warning("%s %d records stay without a vector until then.", exc, len(papers))
            return {}
        return {paper.id: vector for paper, vector in zip(papers, self.embed(papers), strict=True)}

    def recorded(self) -> str | None:
        """The encoder name as stored (no legacy default, markers included)."""
        return self.store.get_meta(ENCODER_META_KEY)

    def record(self, name: str) -> None:
        """Store ``name`` as the encoder that made the vectors."""
        self.store.set_meta(ENCODER_META_KEY, name)

    def mark_switching(self, origin: str | None) -> None:
        """Mark the index as being re-embedded from ``origin`` to the current encoder."""
        self.record(f"{_SWITCHING} from {origin} to {self.encoder.name}")


# --- consistency -----------------------------------------------------------------------------


@dataclass
class ConsistencyReport:
    """How the store, Chroma and the BM25 index agree (``paperbot doctor``)."""

    records: int
    vectors: int
    missing_vectors: list[str] = field(default_factory=list)  # stored records without a vector
    stale_vectors: list[str] = field(default_factory=list)  # vectors of an older text
    orphan_vectors: list[str] = field(default_factory=list)  # vectors whose record is gone
    orphan_side_rows: int = 0  # author-name and title rows of the record store whose record is gone
    lexical_current: bool = True  # False is not an error: the next search rebuilds it (repair does now)
    repaired: bool = False
    indexed_encoder: str | None = None  # the encoder that made the stored vectors (None: no vector yet)
    current_encoder: str | None = None  # the encoder these settings load
    damaged: str | None = None  # why the embedded vector index cannot be read (its files are damaged)
    damaged_copy: str | None = None  # where repair moved the damaged vector index (kept for inspection)
    encoder_choice: str | None = None  # which encoder is used and why (auto: the choice measured on this CPU)
    read_only: str | None = None  # why the data dir cannot be written ("a read-only file system"); None: writable

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
        return not (self.missing_vectors or self.stale_vectors or self.orphan_vectors or self.orphan_side_rows
                    or self.encoder_changed or self.damaged)

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
                    f"from the {self.records} records of the record store (the damaged copy is kept aside)"
                    f"{self._read_only_note()}.")
        if self.store_looks_lost and not self.repaired:
            lines.append(f"the record store holds {self.records} records but the vector index has "
                         f"{self.vectors} vectors: it may have been lost (restore records.sqlite3 from a backup or "
                         "re-ingest; `--repair` refuses to drop those vectors without `--force`)")
        if self.encoder_changed:
            previous = self.indexed_encoder or ""
            made_by = f"an {previous}" if switching_from(previous) else f"the vectors were made by {previous!r}"
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
        if self.orphan_side_rows:
            lines.append(f"{self.orphan_side_rows} author-name or title rows without a record ({verb})")
        if not self.lexical_current:
            lines.append("BM25 index rebuilt" if self.repaired else
                         "BM25 index built in memory by each search (it cannot be saved)" if self.read_only else
                         "BM25 index to be rebuilt at the next search")
        if self.ok:
            lines.insert(0, f"Index consistent: {self.records} records, {self.vectors} vectors")
        return "; ".join(lines) + self._read_only_note() + "."

    def _read_only_note(self) -> str:
        """"; the data dir is read-only (...)", and where a repair can be run; "" for a writable one."""
        if not self.read_only:
            return ""
        repair = "" if self.ok else ": `--repair` needs a writable copy of it (point PAPERBOT_DATA_DIR at the copy)"
        return f"; the data dir is read-only ({self.read_only}), checked as it is{repair}"


class Maintenance:
    """``check_consistency`` and ``repair`` over one index's parts (see the module docstring)."""

    def __init__(self, settings: Settings, store: RecordStore, dense: DenseStore, lexical: LexicalIndex, *,
                 encoders: EncoderGuard, migration: MigrationCatchUp, other_writers: OtherWriters) -> None:
        self.settings = settings
        self.store = store
        self.dense = dense
        self.lexical = lexical
        self.encoders = encoders
        self.migration = migration
        self.other_writers = other_writers

    def check_consistency(self) -> ConsistencyReport:
        """Compare store, Chroma and the BM25 index (after finishing a store migration's catch-up).

        A vector index whose files are damaged is a finding (``damaged``), not an error.
        """
        try:
            self.migration.run()
            self.other_writers.see()
            expected = self.store.all_embedding_hashes()
            present = self.dense.embedding_hashes()
        except IndexDamagedError as exc:
            log.info("%s", exc.user_message)
            current = self.encoders.encoder.name
            return ConsistencyReport(
                records=self.store.count(), vectors=0, lexical_current=self.lexical.is_current(),
                damaged=exc.detail or exc.user_message, current_encoder=current,
                encoder_choice=describe_encoder_choice(self.settings, current),
                read_only=unwritable_reason(self.settings.data_dir),
            )
        current = self.encoders.encoder.name
        return ConsistencyReport(
            records=len(expected),
            vectors=len(present),
            missing_vectors=sorted(set(expected) - set(present)),
            stale_vectors=sorted(i for i in set(expected) & set(present) if present[i] != expected[i]),
            orphan_vectors=sorted(set(present) - set(expected)),
            orphan_side_rows=self.store.side_rows_without_record(),
            lexical_current=self.lexical.is_current(),
            indexed_encoder=self.encoders.indexed() if expected or present else None,
            current_encoder=current,
            encoder_choice=describe_encoder_choice(self.settings, current),
            read_only=unwritable_reason(self.settings.data_dir),
        )

    def repair(self, progress: Progress | None = None, *, force: bool = False) -> ConsistencyReport:
        """Fix what ``check_consistency`` finds: embed missing/stale records, drop orphans (vectors
        and the record store's side rows without a record), rebuild BM25
        (or, when it can follow the store, save the build it followed to: ``LexicalIndex.checkpoint``).

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
            self.encoders.mark_switching(switching_from(report.indexed_encoder or "") or report.indexed_encoder)
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
                self.dense.upsert([p.id for p in batch], self.encoders.embed(batch), [record_metadata(p) for p in batch])
            if progress:
                progress(min(start + ENCODE_BATCH, total), total)
        if report.orphan_vectors:
            self.dense.delete(report.orphan_vectors)
        if report.orphan_side_rows:
            self.store.drop_side_rows_without_record()
        current = self.encoders.encoder.name
        if report.records and self.encoders.recorded() != current:
            self.encoders.record(current)  # every vector is now the current encoder's
        if not report.lexical_current:
            self.lexical.rebuild(from_scratch=True)  # a repair trusts nothing derived
        else:
            self.lexical.checkpoint()  # the changes it followed saved: the index on disk equals the store
        return replace(report, repaired=True)

    def _refusal(self, report: ConsistencyReport) -> RepairRefusedError:
        """Why ``repair`` will not drop the vectors of a record store that looks lost, and what to do."""
        where = f"the record store {self.store.where}"
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

    def _rebuild_dense(self, report: ConsistencyReport, progress: Progress | None, *, force: bool) -> ConsistencyReport:
        """A new vector index from every record of the store, the damaged one moved aside (kept).

        Vectors come through the ``embed`` seam (the embedding cache: unchanged texts are not
        computed again); ``progress(done, total)`` counts records. BM25 is rebuilt and a pending
        migration catch-up is marked done (every vector is made anew from the migrated records).
        Interrupted, it leaves a new index missing some vectors: ``repair`` again fills them in.
        """
        total = self.store.count()
        if total == 0 and not force:
            raise RepairRefusedError(
                f"Refusing to rebuild the damaged vector index: the record store {self.store.where} is empty, so "
                "the new index would be empty too. The record store is the source of truth, and an empty one "
                "usually means the file was lost.",
                hint="Restore records.sqlite3 from a backup, or re-ingest your sources with `paperbot ingest`; "
                     "run `paperbot doctor --repair --force` to rebuild an empty index anyway (the damaged one "
                     "is kept aside).",
            )
        current = self.encoders.encoder.name
        recorded = self.encoders.recorded()
        if total and recorded != current:
            self.encoders.mark_switching(switching_from(recorded or "") or recorded or LEGACY_ENCODER_NAME)
        aside = self.dense.move_aside()
        log.info("Rebuilding the vector index from the %d records of the record store.", total)
        if progress:
            progress(0, total)
        done = 0
        batch: list[Paper] = []

        def flush() -> None:
            nonlocal done
            self.dense.upsert([p.id for p in batch], self.encoders.embed(batch), [record_metadata(p) for p in batch])
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
            self.encoders.record(current)
        self.migration.superseded()  # the vectors were just made from the migrated records
        self.other_writers.forget()
        self.lexical.rebuild(from_scratch=True)  # a repair trusts nothing derived
        return replace(report, repaired=True, vectors=self.dense.count(), lexical_current=True,
                       damaged_copy=str(aside) if aside else None, indexed_encoder=current if total else None)
