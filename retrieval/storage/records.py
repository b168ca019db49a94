"""The record store: every full ``Paper`` record (the source of truth), in the database.

The records are tables of the database (``storage.database``, SQLAlchemy Core; ``storage.schema``
lists them): by default the SQLite file ``records.sqlite3`` of the data dir, or a PostgreSQL
server (``PAPERBOT_DATABASE_URL``). Chroma and the BM25 index are derived from this store and can
be rebuilt from it. Lookup columns (ids, fingerprint, title key, year, hashes) sit next to the
JSON record so that ingest can find the records a new paper must merge with, and the index can
tell added / updated / unchanged records apart without parsing JSON. An ``author_names`` side
table files each written author name of a paper under every family name it may carry
(``names.filing_families``: "Zhang Zhao" under "zhao" and "zhang") with its canonical author key
(``names.author_key``, the value author filters select in Chroma and BM25), so that an author
filter finds every compatible written name (``names.names_compatible``) with one indexed lookup
and maps it to its key. A ``title_variants`` side table lists each paper's
``merge.title_variants`` keys, so that the other version of a paper (a preprint "ChemCrow:
Augmenting ..." of 2023 and its article "Augmenting ..." of 2024, with other ids and another
fingerprint) is found across separate ingests. ``storage.record_rows`` computes these rows.

The schema is the database's (named Alembic revisions, ``0003_records`` for these tables). A
``records.sqlite3`` made before the database is upgraded in place on first open, or imported
when the database is elsewhere (``storage.legacy_records``); records its older migrations had
changed leave their vector moves for ``PaperIndex`` to finish (``vector_moves``, the
``derived_refresh`` mark in ``meta``: ``index.catch_up.MigrationCatchUp``).

Every write is one transaction under the record store's writer lock (SQLite's ``BEGIN
IMMEDIATE``; PostgreSQL's ``pg_advisory_xact_lock(RECORDS)``): a failure rolls back and leaves
the previous data intact. Each write also bumps a ``generation`` counter in the ``meta`` table,
so derived indexes notice changes made by another process with one cheap query, and stamps what
it changed with the new value: ``changes_since`` lists the records changed after a generation
(the change feed, ``storage.record_changes``). Driver failures
become paperbot's typed errors naming the record store (``storage.driver_errors``): a full disk
``DiskFullError``, and the error a caller sees is always the one that happened.

A full disk. The SQLite file is in WAL mode, and SQLite cannot open one without writing (its
``-shm`` index) when not a byte is free. The store then reads a snapshot instead (a ``Database``
with ``snapshot=True``: ``sqlite.open_snapshot``): searches and answers work, every write raises
``DiskFullError``, and each write (and, every few seconds, a read) first tries to reopen the
database normally, so freeing space is enough to make it writable again.

A read-only data dir (a snapshot on a read-only mount, a backup without write permission:
``sqlite.unwritable``). The file is opened with SQLite's ``mode=ro`` (``Database.read_only``):
no pragma, no upgrade, not a byte written. Reads work; every write raises
``DataDirReadOnlyError`` naming the cause, and so does opening a store that still needs an
upgrade (written by an older paperbot) or that does not exist. A ``records.sqlite3`` of the last
schema before the database (``legacy_records.LEGACY_VERSION``) has the same tables and is read
as it is.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    Executable,
    Integer,
    Table,
    Text,
    and_,
    cast,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.engine import URL

from retrieval.config import Settings
from retrieval.errors import DataDirReadOnlyError, DiskFullError, PaperbotError
from retrieval.records.paper import Paper
from retrieval.storage.bulk import insert_rows, one_of
from retrieval.storage.database import RECORDS, Database, database_url, ensure_current
from retrieval.storage.driver_errors import storage_error
from retrieval.storage.legacy_records import DERIVED_REFRESH_KEY, LEGACY_VERSION
from retrieval.storage.record_changes import FEED_KEY, RecordChanges, clear_removals, read_changes, stamp_removals
from retrieval.storage.record_rows import (
    RecordText,
    author_name_rows,
    decode,
    file_entry_keys,
    file_entry_rows,
    paper_row,
    record_text,
    variant_keys,
)
from retrieval.storage.schema import (
    HEAD,
    author_names,
    file_entries,
    meta,
    papers,
    read_as_is,
    title_variants,
    vector_moves,
)
from retrieval.storage.sqlite import report_read_only

__all__ = ["DERIVED_REFRESH_KEY", "MAX_TITLE_CANDIDATES", "REOPEN_EVERY", "RecordChanges", "RecordStore", "RecordText"]

log = logging.getLogger(__name__)

MAX_TITLE_CANDIDATES = 20  # title-variant candidates returned per lookup (generic titles stay bounded)
REOPEN_EVERY = 5.0  # seconds between a read-only snapshot's attempts to reopen the store writable
_CHUNK = 500  # ids per IN (...) query, well under SQLite's variable limit
_SIDE_TABLES = (title_variants, author_names, file_entries)  # a record's side rows, deleted with it (``delete_records``)
_T = TypeVar("_T")


def _chunks(items: Sequence[_T], size: int = _CHUNK) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _put_many(connection: Connection, batch: Iterable[Paper], stamp: str, generation: int) -> None:
    """Insert or replace records with their lookup columns and side-table rows, stamped with the
    write's ``generation`` (``record_changes``).

    A record listed twice is stored once, as its last version. The rows of the ids already
    stored are deleted first (``delete_records``), then each table gets its rows in one go
    (``bulk.insert_rows``).
    """
    latest: dict[str, Paper] = {}
    for paper in batch:
        latest[paper.id] = paper
    if not latest:
        return
    delete_records(connection, list(latest))
    clear_removals(connection, list(latest))
    rows = [paper_row(paper_id, paper, stamp) for paper_id, paper in latest.items()]
    columns = list(rows[0])
    insert_rows(connection, papers, [*columns, "change_seq"], [(*row.values(), generation) for row in rows])
    insert_rows(connection, title_variants, ["paper_id", "key"],
                [(paper_id, key) for paper_id, paper in latest.items() for key in variant_keys(paper.title)])
    insert_rows(connection, author_names, ["paper_id", "family", "name", "author_key"],
                [row for paper_id, paper in latest.items() for row in author_name_rows(paper, paper_id)])
    insert_rows(connection, file_entries, ["paper_id", "source", "source_id", "file"],
                [row for paper_id, paper in latest.items() for row in file_entry_rows(paper, paper_id)])


def delete_records(connection: Connection, ids: Sequence[str]) -> list[str]:
    """Delete the records ``ids`` with their side rows (``title_variants``, ``author_names``,
    ``file_entries``: no foreign key deletes them, revision 0009_side_rows_unchecked), on ``connection``'s
    transaction; returns the ids that were stored.

    Every deletion of records goes through here, so that no side row outlives its record.
    """
    backend = connection.dialect.name
    removed: list[str] = []
    for chunk in _chunks(ids):
        for side in _SIDE_TABLES:
            connection.execute(delete(side).where(one_of(side.c.paper_id, chunk, backend)))
        removed += connection.execute(delete(papers).where(one_of(papers.c.id, chunk, backend))
                                      .returning(papers.c.id)).scalars().all()
    return removed


def _recordless(side: Table) -> ColumnElement[bool]:
    """``side``'s rows whose ``paper_id`` names no stored record."""
    return ~exists().where(papers.c.id == side.c.paper_id)


def _set_meta(connection: Connection, key: str, value: str) -> None:
    if not connection.execute(update(meta).where(meta.c.key == key).values(value=value)).rowcount:
        connection.execute(insert(meta).values(key=key, value=value))


def _bump_generation(connection: Connection) -> int:
    """Add one to the store's generation; returns the new value (the write's change sequence).

    Called under the record store's writer lock, which orders the generations as the commits
    (``record_changes``)."""
    bumped = connection.execute(update(meta).where(meta.c.key == "generation")
                                .values(value=cast(cast(meta.c.value, Integer) + 1, Text))
                                .returning(meta.c.value)).scalar()
    if bumped is None:
        connection.execute(insert(meta).values(key="generation", value="1"))
        return 1
    return int(bumped)


_STRONG = ("id", "fingerprint", "doi", "arxiv_id", "openalex_id")  # the strong matches of ``find_matches``


def _strong_values(paper: Paper) -> dict[str, str]:
    """``paper``'s values of the strong-match columns that can match: its id and fingerprint, and
    its DOI, arXiv and OpenAlex ids unless missing or empty."""
    values = {"id": paper.id, "fingerprint": paper.fingerprint}
    for name in _STRONG[2:]:  # the ids a record may lack (none, or empty, matches nothing)
        if value := getattr(paper, name):
            values[name] = value
    return values


def _strong_ids(rows: dict[str, Any], batch: Sequence[dict[str, str]]) -> list[set[str]]:
    """For each paper's ``_strong_values`` in ``batch``, the ids of the ``papers`` ``rows`` (by id)
    sharing its id, fingerprint, DOI, arXiv id or OpenAlex id: one dict lookup per key, not a
    scan per paper."""
    holding: dict[tuple[str, str], set[str]] = {}
    for paper_id, row in rows.items():
        for name in _STRONG:
            if (value := getattr(row, name)) is not None:
                holding.setdefault((name, value), set()).add(paper_id)
    found = []
    for values in batch:
        ids: set[str] = set()
        for name, value in values.items():
            ids |= holding.get((name, value), set())
        found.append(ids)
    return found


FileEntry = tuple[str, str, str]  # (file, source, key) of a provenance entry read from a file (``file_entry_keys``)


def _made_by(connection: Connection, entries: Iterable[FileEntry]) -> dict[FileEntry, set[str]]:
    """The ids of the stored records each of ``entries`` made (``file_entries``): one query per
    file, source and chunk of keys (an ingest's batch comes from a few files), each a range of the
    table's (file, source, key) index."""
    keys_of: dict[tuple[str, str], set[str]] = {}
    for file, source, key in entries:
        keys_of.setdefault((file, source), set()).add(key)
    made: dict[FileEntry, set[str]] = {}
    backend = connection.dialect.name
    for (file, source), keys in sorted(keys_of.items()):
        for chunk in _chunks(sorted(keys)):
            statement = (select(file_entries.c.paper_id, file_entries.c.source_id)
                         .where(file_entries.c.file == file, file_entries.c.source == source,
                                one_of(file_entries.c.source_id, chunk, backend)))
            for paper_id, key in connection.execute(statement):
                made.setdefault((file, source, key), set()).add(paper_id)
    return made


def _matching(since: int | None, until: int | None, author_keys: Iterable[str] | None,
              venue_keys: Iterable[str] | None) -> ColumnElement[bool]:
    """The condition of filter restrictions on ``papers``; None = unrestricted."""
    conditions: list[ColumnElement[bool]] = []
    if since is not None:
        conditions.append(papers.c.year >= since)
    if until is not None:
        conditions.append(papers.c.year <= until)
    if author_keys is not None:
        conditions.append(papers.c.id.in_(
            select(author_names.c.paper_id).where(author_names.c.author_key.in_(list(author_keys)))))
    if venue_keys is not None:
        conditions.append(papers.c.venue_key.in_(list(venue_keys)))
    return and_(*conditions) if conditions else true()


class RecordStore:
    """The records of one database, safe to share between threads (each call takes a pooled connection).

    ``RecordStore(path)`` is the store in the SQLite file ``path`` (its directory the data dir);
    ``RecordStore.open(settings)`` the store of an installation (``PAPERBOT_DATABASE_URL``, else
    the data dir's ``records.sqlite3``). Either is upgraded to the code's schema on open.
    """

    def __init__(self, path: Path, *, clock: Callable[[], datetime] = _utc_now) -> None:
        path = Path(path)
        self._open(URL.create("sqlite+pysqlite", database=str(path)), data_dir=path.parent, path=path, clock=clock)

    @classmethod
    def open(cls, settings: Settings, *, clock: Callable[[], datetime] = _utc_now) -> RecordStore:
        """The record store of these settings' database."""
        url = database_url(settings)
        store = cls.__new__(cls)
        path = Path(url.database) if url.get_backend_name() == "sqlite" and url.database else None
        store._open(url, data_dir=settings.data_dir, path=path, clock=clock)
        return store

    def _open(self, url: URL, *, data_dir: Path, path: Path | None, clock: Callable[[], datetime]) -> None:
        self.path = path  # the SQLite file; None on a server
        self.where = str(path) if path is not None else url.render_as_string(hide_password=True)
        self._url, self._data_dir, self._clock = url, data_dir, clock
        self._lock = threading.Lock()  # guards the switch between a snapshot and the database
        self._unwritable: DiskFullError | None = None  # set while reading a snapshot (disk full)
        self._next_reopen = 0.0
        self._db = Database(url, data_dir=data_dir)
        self._read_only = self._db.read_only  # why the data dir cannot be written, or None
        try:
            if self._read_only is not None:
                self._check_readable(self._db)
                return
            if path is not None:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise self._error(exc, "open") from exc
            try:
                ensure_current(self._db)
            except DiskFullError as full:
                if path is None:
                    raise
                self._db.dispose()
                self._db = self._snapshot(full)
        except BaseException:
            self._db.dispose()  # a failed open holds no connection
            raise

    # --- opening: read-only data dirs, full disks --------------------------------------------

    @property
    def read_only(self) -> str | None:
        """Why this store cannot be written (its data dir is read-only: "a read-only file system"), or None."""
        return self._read_only

    def _read_only_error(self, doing: str) -> DataDirReadOnlyError:
        return DataDirReadOnlyError(doing, data_dir=str(self._data_dir), reason=self._read_only or "")

    def _schema(self, database: Database) -> tuple[str | None, int | None]:
        """(Alembic revision, ``PRAGMA user_version`` of a SQLite file) of ``database``."""
        revision = database.revision()
        if revision is not None or database.backend != "sqlite":
            return revision, None
        with database.reading(f"read the record store {self.where}") as connection:
            return None, int(connection.exec_driver_sql("PRAGMA user_version").scalar() or 0)

    def _readable(self, database: Database) -> tuple[bool, str]:
        """Whether ``database`` has this code's record tables as it is, and which schema it has."""
        revision, version = self._schema(database)
        if read_as_is(revision) or (revision is None and version == LEGACY_VERSION):
            return True, revision or str(version)
        return False, revision or str(version or 0)

    def _check_readable(self, database: Database) -> None:
        """Refuse a read-only store that does not exist or needs an upgrade (module docstring)."""
        if self.path is not None and not self.path.exists():
            raise self._read_only_error(f"create the record store {self.where}")
        readable, schema = self._readable(database)
        if not readable:
            raise self._read_only_error(f"bring the record store {self.where} (written by an older paperbot, "
                                        f"schema {schema}) up to schema {HEAD}")

    def _disk_full(self, action: str) -> DiskFullError:
        return DiskFullError(f"{action} the record store {self.where}", where=str(self._data_dir))

    def _snapshot(self, failure: DiskFullError) -> Database:
        """The read-only snapshot of a full disk (module docstring), or the disk-full error."""
        error = self._disk_full("open")
        snapshot = Database(self._url, data_dir=self._data_dir, snapshot=True)
        try:
            readable, _ = self._readable(snapshot)
        except PaperbotError:
            readable = False
        if not readable:  # nothing safe to read, or a store that still needs an upgrade
            snapshot.dispose()
            raise error from failure
        report_read_only(str(self._data_dir), f"the record store {self.where} is read from a read-only snapshot")
        self._unwritable = error
        self._next_reopen = time.monotonic() + REOPEN_EVERY
        return snapshot

    def _current(self, *, now: bool) -> Database:
        """The database to use; leaves the snapshot of a full disk once the database opens normally.

        ``now``: try at once (before a write); otherwise at most every ``REOPEN_EVERY`` seconds.
        """
        with self._lock:
            if self._unwritable is None or (not now and time.monotonic() < self._next_reopen):
                return self._db
            self._next_reopen = time.monotonic() + REOPEN_EVERY
            database = Database(self._url, data_dir=self._data_dir)
            try:
                ensure_current(database)
            except PaperbotError as exc:
                database.dispose()
                log.debug("the record store is still not writable: %s", exc)
                return self._db
            snapshot, self._db, self._unwritable = self._db, database, None
            snapshot.dispose()
            log.info("The record store %s is writable again.", self.where)
            return database

    # --- plumbing ----------------------------------------------------------------------------

    def _error(self, exc: BaseException, action: str) -> PaperbotError:
        """A driver's (or the OS's) failure as the typed error naming the record store."""
        return storage_error(exc, doing=f"{action} the record store {self.where}", where=self.where,
                             path=self.path, data_dir=self._data_dir)

    @contextmanager
    def _writing(self, action: str = "write to") -> Iterator[Connection]:
        """One write transaction under the record store's writer lock; on any failure rolled back,
        and the failure (not a failing rollback) is what the caller sees."""
        if self._read_only is not None:
            raise self._read_only_error(f"{action} the record store {self.where}")
        database = self._current(now=True)
        if self._unwritable is not None:
            raise self._disk_full(action)
        with database.writing(f"{action} the record store {self.where}", lock=RECORDS) as connection:
            yield connection

    def _rows(self, statement: Executable) -> Sequence[Any]:
        database = self._current(now=False)
        with database.reading(f"read the record store {self.where}") as connection:
            return connection.execute(statement).all()

    def close(self) -> None:
        with self._lock:
            self._db.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads -------------------------------------------------------------------------------

    def get(self, paper_id: str) -> Paper | None:
        rows = self._rows(select(papers.c.record).where(papers.c.id == paper_id))
        return decode(rows[0][0]) if rows else None

    def get_many(self, ids: Iterable[str]) -> dict[str, Paper]:
        """Records by id; ids that are not stored are simply absent from the result."""
        return self._by_id(ids, lambda paper_id, year, record: decode(record))

    def texts(self, ids: Iterable[str]) -> dict[str, RecordText]:
        """``get_many`` reduced to what a text index reads (``iter_texts``), without building
        the ``Paper`` models: a search reads its candidates' words this way."""
        return self._by_id(ids, record_text)

    def _by_id(self, ids: Iterable[str], read: Callable[[str, int | None, str], _T]) -> dict[str, _T]:
        """``read(id, year, record JSON)`` of each stored record of ``ids``, in the order asked
        (each id once); ids that are not stored are absent."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, _T] = {}
        for chunk in _chunks(wanted):
            for paper_id, year, record in self._rows(select(papers.c.id, papers.c.year, papers.c.record)
                                                     .where(one_of(papers.c.id, chunk, self._db.backend))):
                found[paper_id] = read(paper_id, year, record)
        return {paper_id: found[paper_id] for paper_id in wanted if paper_id in found}

    def made_from_files(self, files: Sequence[str]) -> list[Paper]:
        """The records with a provenance entry read from one of ``files`` (``Provenance.file``:
        absolute paths), in id order, whatever the files hold now or whether they still exist."""
        return list(self.get_many(sorted({paper_id for paper_id, *_ in self.file_entry_rows(files)})).values())

    def file_entry_rows(self, files: Sequence[str]) -> list[tuple[str, str, str, str]]:
        """The ``file_entries`` rows of ``files`` (absolute paths): (record id, source, key, file),
        read without decoding a record."""
        rows: list[tuple[str, str, str, str]] = []
        backend = self._db.backend
        for chunk in _chunks(sorted(set(files))):
            rows += [tuple(row) for row in self._rows(
                select(file_entries.c.paper_id, file_entries.c.source, file_entries.c.source_id, file_entries.c.file)
                .where(one_of(file_entries.c.file, chunk, backend)))]
        return rows

    def count_made_from_files(self, files: Sequence[str]) -> dict[str, int]:
        """For each of ``files`` (absolute paths), how many records have an entry read from it."""
        counts = dict.fromkeys(files, 0)
        backend = self._db.backend
        for chunk in _chunks(sorted(set(files))):
            counts.update(self._rows(select(file_entries.c.file, func.count(func.distinct(file_entries.c.paper_id)))
                                     .where(one_of(file_entries.c.file, chunk, backend))
                                     .group_by(file_entries.c.file)))
        return counts

    def find_matches(self, paper: Paper) -> list[Paper]:
        """Candidate records of the same paper: the records sharing its id, DOI, arXiv id, OpenAlex
        id or fingerprint, or made by one of its entries read from a file (the same file, source
        and key: ``file_entries``), then those sharing a title-variant key (at most
        ``MAX_TITLE_CANDIDATES``).

        Candidates, not verdicts: a title-variant candidate may be another paper with the same
        title, and an entry of a file may have been given to another paper since, so callers
        confirm each one (``merge.same_paper``, ``ingest.pipeline``). Strong matches come first,
        each group in id order.
        """
        conditions = [papers.c.id == paper.id, papers.c.fingerprint == paper.fingerprint]
        for column, value in ((papers.c.doi, paper.doi), (papers.c.arxiv_id, paper.arxiv_id),
                              (papers.c.openalex_id, paper.openalex_id)):
            if value:
                conditions.append(column == value)
        for file, source, key in file_entry_keys(paper):
            conditions.append(papers.c.id.in_(select(file_entries.c.paper_id).where(
                file_entries.c.file == file, file_entries.c.source == source, file_entries.c.source_id == key)))
        rows = list(self._rows(select(papers.c.id, papers.c.record).where(or_(*conditions)).order_by(papers.c.id)))
        keys = variant_keys(paper.title)
        if keys:
            strong = {paper_id for paper_id, _ in rows}
            similar = self._rows(
                select(papers.c.id, papers.c.record)
                .where(papers.c.id.in_(select(title_variants.c.paper_id).where(title_variants.c.key.in_(keys))))
                .order_by(papers.c.id).limit(MAX_TITLE_CANDIDATES + len(strong)))
            rows += [row for row in similar if row[0] not in strong][:MAX_TITLE_CANDIDATES]
        return [decode(record) for _, record in rows]

    def find_matches_many(self, batch: Sequence[Paper]) -> list[list[Paper]]:
        """``find_matches`` of each paper of ``batch``, in its order, read with a few queries for
        the whole batch instead of two per paper (an ingest's batch: on a server, each query is a
        round trip), on one connection. Each list is what ``find_matches`` gives for that paper,
        in the same order."""
        if not batch:
            return []
        columns = {"id": papers.c.id, "fingerprint": papers.c.fingerprint, "doi": papers.c.doi,
                   "arxiv_id": papers.c.arxiv_id, "openalex_id": papers.c.openalex_id}
        strong_values = [_strong_values(paper) for paper in batch]
        by_name: dict[str, set[str]] = {name: set() for name in _STRONG}
        for values in strong_values:
            for name, value in values.items():
                by_name[name].add(value)
        wanted = [(name, value) for name in _STRONG for value in sorted(by_name[name])]
        keys_of = [variant_keys(paper.title) for paper in batch]
        strong_rows: dict[str, Any] = {}
        holders: dict[str, set[str]] = {}
        database = self._current(now=False)
        backend = database.backend
        with database.reading(f"read the record store {self.where}") as connection:
            for chunk in _chunks(wanted):  # one query per chunk: every strong key of the chunk at once
                by_column: dict[str, list[str]] = {}
                for name, value in chunk:
                    by_column.setdefault(name, []).append(value)
                strong_keys = select(papers.c.id, papers.c.fingerprint, papers.c.doi, papers.c.arxiv_id,
                                     papers.c.openalex_id, papers.c.record).where(
                    or_(*(one_of(columns[name], values, backend) for name, values in by_column.items())))
                strong_rows.update((row.id, row) for row in connection.execute(strong_keys))
            for variants in _chunks(sorted({key for keys in keys_of for key in keys})):
                holding = select(title_variants.c.key, title_variants.c.paper_id).where(one_of(title_variants.c.key, variants, backend))
                for key, paper_id in connection.execute(holding):
                    holders.setdefault(key, set()).add(paper_id)
            entries_of = [file_entry_keys(paper) for paper in batch]
            made = _made_by(connection, (entry for entries in entries_of for entry in entries))
            chosen: list[tuple[list[str], list[str]]] = []
            for matched, keys, entries in zip(_strong_ids(strong_rows, strong_values), keys_of, entries_of, strict=True):
                strong = sorted(matched.union(*(made.get(entry, set()) for entry in entries)))
                similar = sorted(set().union(*(holders.get(key, set()) for key in keys)))[:MAX_TITLE_CANDIDATES + len(strong)]
                chosen.append((strong, [paper_id for paper_id in similar if paper_id not in strong][:MAX_TITLE_CANDIDATES]))
            records = {paper_id: row.record for paper_id, row in strong_rows.items()}
            missing = sorted({paper_id for strong, similar in chosen for paper_id in [*strong, *similar]} - records.keys())
            for ids in _chunks(missing):
                records.update((row.id, row.record) for row in connection.execute(
                    select(papers.c.id, papers.c.record).where(one_of(papers.c.id, ids, backend))))
        return [[decode(records[paper_id]) for paper_id in [*strong, *similar] if paper_id in records]
                for strong, similar in chosen]

    def hashes(self, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``id -> (content_hash, embedding_hash)`` for the stored ones among ``ids``."""
        wanted = list(dict.fromkeys(ids))
        result: dict[str, tuple[str, str]] = {}
        for chunk in _chunks(wanted):
            statement = (select(papers.c.id, papers.c.content_hash, papers.c.embedding_hash)
                         .where(one_of(papers.c.id, chunk, self._db.backend)))
            for paper_id, content, embedding in self._rows(statement):
                result[paper_id] = (content, embedding)
        return result

    def all_embedding_hashes(self) -> dict[str, str]:
        """``id -> embedding_hash`` for every record (for consistency checks)."""
        return dict(self._rows(select(papers.c.id, papers.c.embedding_hash)))

    def side_rows_without_record(self) -> int:
        """How many side rows (``title_variants``, ``author_names``, ``file_entries``) name no stored record: none,
        unless something other than the record store deleted records (the side tables carry no
        foreign key: ``delete_records``). For consistency checks."""
        return sum(int(self._rows(select(func.count()).select_from(side).where(_recordless(side)))[0][0])
                   for side in _SIDE_TABLES)

    def drop_side_rows_without_record(self) -> int:
        """Delete the rows ``side_rows_without_record`` counts, in one write; returns how many."""
        with self._writing("drop the side rows without a record of") as connection:
            return sum(connection.execute(delete(side).where(_recordless(side))).rowcount
                       for side in _SIDE_TABLES)

    def iter_papers(self, batch: int = 500) -> Iterator[Paper]:
        """Every record in id order, read in batches (keyset pagination, no long read lock)."""
        last = ""
        while True:
            rows = self._rows(select(papers.c.id, papers.c.record).where(papers.c.id > last)
                              .order_by(papers.c.id).limit(batch))
            if not rows:
                return
            for _, record in rows:
                yield decode(record)
            last = rows[-1][0]

    def iter_texts(self, batch: int = 500) -> Iterator[RecordText]:
        """``iter_papers`` reduced to what a text index reads (id, year, title, abstract, author
        names, venue), in id order and batches alike.

        Without the ``Paper`` models: building them (``decode``) is most of a BM25 rebuild's
        time. The id and year come from the record's columns, which every write sets from the
        record itself.
        """
        last = ""
        while True:
            rows = self._rows(select(papers.c.id, papers.c.year, papers.c.record).where(papers.c.id > last)
                              .order_by(papers.c.id).limit(batch))
            if not rows:
                return
            for paper_id, year, record in rows:
                yield record_text(paper_id, year, record)
            last = rows[-1][0]

    def ids(self) -> set[str]:
        return {paper_id for (paper_id,) in self._rows(select(papers.c.id))}

    def count(self) -> int:
        return int(self._rows(select(func.count()).select_from(papers))[0][0])

    def generation(self) -> int:
        """Counter bumped by every write; a derived index built at this generation is current."""
        value = self.get_meta("generation")
        return int(value) if value else 0

    def feed(self) -> str | None:
        """The id of this database's change feed; None for a store without one (``changes_since``)."""
        return self.get_meta(FEED_KEY)

    def changes_since(self, generation: int, *, limit: int | None = None) -> RecordChanges | None:
        """What changed after ``generation``: the current text of each record stored since and the
        ids removed since, with the generation read up to, in one snapshot (``record_changes``).

        None when this store has no change feed (a records file of the schema before the
        database, read as it is) or when more than ``limit`` records changed; a derived index then
        reads every record (``iter_texts``)."""
        database = self._current(now=False)
        if (self._read_only is not None or self._unwritable is not None) and self._schema(database)[0] != HEAD:
            return None  # only a store opened as it is can be of the schema before the database
        with database.reading(f"read the record store {self.where}") as connection:
            return read_changes(connection, generation, limit=limit)

    def digest(self) -> str:
        """Hash of the (id, content_hash) set: equal digests mean equal contents."""
        digest = hashlib.sha256()
        for paper_id, content in self._rows(select(papers.c.id, papers.c.content_hash).order_by(papers.c.id)):
            digest.update(f"{paper_id}\t{content}\n".encode())
        return digest.hexdigest()

    # --- lookups for filters -----------------------------------------------------------------

    def author_names_filed_under(self, families: Iterable[str]) -> set[tuple[str, str]]:
        """(written name, author key) of every indexed author name filed under one of ``families``."""
        wanted = sorted(set(families))
        found: set[tuple[str, str]] = set()
        for chunk in _chunks(wanted):
            statement = (select(author_names.c.name, author_names.c.author_key).distinct()
                         .where(author_names.c.family.in_(chunk)))
            found.update((name, key) for name, key in self._rows(statement))
        return found

    def year_range(self) -> tuple[int | None, int | None]:
        """(oldest, newest) publication year among records that have one."""
        low, high = self._rows(select(func.min(papers.c.year), func.max(papers.c.year)))[0]
        return low, high

    def venue_keys(self) -> set[str]:
        """Distinct folded venue names."""
        statement = select(papers.c.venue_key).distinct().where(papers.c.venue_key.is_not(None))
        return {key for (key,) in self._rows(statement)}

    def count_matching(
        self,
        *,
        since: int | None = None,
        until: int | None = None,
        author_keys: Iterable[str] | None = None,
        venue_keys: Iterable[str] | None = None,
    ) -> int:
        """How many records pass these restrictions (None = unrestricted)."""
        condition = _matching(since, until, author_keys, venue_keys)
        return int(self._rows(select(func.count()).select_from(papers).where(condition))[0][0])

    def list_matching(
        self,
        *,
        since: int | None = None,
        until: int | None = None,
        author_keys: Iterable[str] | None = None,
        venue_keys: Iterable[str] | None = None,
    ) -> list[Paper]:
        """Every record passing these restrictions (as ``count_matching``), newest year first
        (records without a year last).

        A listing answer cites all of them, so this is not a ranked top-k.
        """
        condition = _matching(since, until, author_keys, venue_keys)
        rows = self._rows(select(papers.c.record).where(condition)
                          .order_by(papers.c.year.desc().nulls_last(), papers.c.id))
        return [decode(record) for (record,) in rows]

    # --- writes ------------------------------------------------------------------------------

    def write(self, put: Sequence[Paper] = (), delete: Sequence[str] = ()) -> int:
        """Remove ``delete`` and store ``put`` (insert or replace by id) in ONE transaction.

        Returns how many of ``delete`` existed. Deletions run first, so an id listed in both
        ends up stored.
        """
        if not put and not delete:
            return 0
        stamp = self._clock().isoformat(timespec="seconds")
        with self._writing() as connection:
            generation = _bump_generation(connection)
            removed = delete_records(connection, list(dict.fromkeys(delete)))
            stamp_removals(connection, removed, generation)  # those put again below are cleared there
            _put_many(connection, put, stamp, generation)
        return len(removed)

    def put_many(self, papers: Sequence[Paper]) -> None:
        """Insert or replace records by id, all or nothing."""
        self.write(put=papers)

    def delete_many(self, ids: Sequence[str]) -> int:
        """Remove records by id; returns how many existed."""
        return self.write(delete=ids)

    # --- catching up with a migration (``legacy_records``) ------------------------------------

    def derived_refresh_pending(self) -> bool:
        """True while Chroma and BM25 have not caught up with a migration that changed records."""
        return self.get_meta(DERIVED_REFRESH_KEY) is not None

    def vector_moves(self, limit: int = _CHUNK) -> list[tuple[str, str, str]]:
        """Up to ``limit`` pending ``(old id, new id, embedding hash of the old text)`` moves.

        ``old id == new id`` for a record that kept its id but whose vector metadata (author
        keys, venue key) must be rewritten.
        """
        rows = self._rows(select(vector_moves.c.old_id, vector_moves.c.new_id, vector_moves.c.old_embedding_hash)
                          .order_by(vector_moves.c.new_id, vector_moves.c.old_id).limit(limit))
        return [(old_id, new_id, embedding_hash) for old_id, new_id, embedding_hash in rows]

    def vector_moves_done(self, old_ids: Sequence[str]) -> None:
        """Forget these moves: their vectors are in place."""
        with self._writing() as connection:
            for chunk in _chunks(list(dict.fromkeys(old_ids))):
                connection.execute(delete(vector_moves).where(vector_moves.c.old_id.in_(chunk)))

    def derived_refresh_done(self) -> None:
        """Clear the mark once every move is done and BM25 rebuilt; other processes reload."""
        with self._writing() as connection:
            if connection.execute(select(func.count()).select_from(vector_moves)).scalar():
                raise RuntimeError("vector moves are still pending")
            connection.execute(delete(meta).where(meta.c.key == DERIVED_REFRESH_KEY))
            _bump_generation(connection)

    # --- meta --------------------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        """Every ``meta`` value by key: the generation, the encoder of the vectors, pending work."""
        return dict(self._rows(select(meta.c.key, meta.c.value)))

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = self._rows(select(meta.c.value).where(meta.c.key == key))
        return rows[0][0] if rows else default

    def delete_meta(self, key: str) -> None:
        """Forget ``key`` (nothing happens when it is not set)."""
        with self._writing() as connection:
            connection.execute(delete(meta).where(meta.c.key == key))

    def set_meta(self, key: str, value: str) -> None:
        with self._writing() as connection:
            _set_meta(connection, key, value)
