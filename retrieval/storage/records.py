"""The record store: one SQLite file holding every full ``Paper`` record (the source of truth).

Chroma and the BM25 index are derived from this store and can be rebuilt from it. Lookup
columns (ids, fingerprint, title key, year, hashes) sit next to the JSON record so that ingest
can find the records a new paper must merge with, and the index can tell added / updated /
unchanged records apart without parsing JSON. An ``author_names`` side table files each
written author name of a paper under every family name it may carry
(``names.filing_families``: "Zhang Zhao" under "zhao" and "zhang") with its canonical author
key (``names.author_key``, the value author filters select in Chroma and BM25), so
that an author filter finds every compatible written name (``names.names_compatible``) with
one indexed lookup and maps it to its key. A ``title_variants``
side table lists each paper's ``merge.title_variants`` keys, so that the other version of a
paper (a preprint "ChemCrow: Augmenting ..." of 2023 and its article "Augmenting ..." of 2024,
with other ids and another fingerprint) is found across separate ingests.

Schema migrations are numbered and each runs in one transaction at open (``_MIGRATIONS``).
Migration 5 brings records stored by older code up to today's rules (``_refresh_records``):
author names cleaned ("et al." removed, ``authors_truncated`` set, no ``<b>`` or "Song*"), and
``hash:`` ids re-keyed where the fold that now keeps every script computes another one. What
the store cannot do itself, moving vectors in Chroma to the new ids and rebuilding BM25, it
leaves listed in a ``vector_moves`` table with a ``derived_refresh`` mark in ``meta``:
``PaperIndex`` finishes it on first use (``index.catch_up.MigrationCatchUp``).

Every write is one transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``): a failure rolls back and
leaves the previous data intact. Each write also bumps a ``generation`` counter in the ``meta``
table, so derived indexes notice changes made by another process with one cheap query.
SQLite failures become ``StorageError`` with a message naming the file and what to do; a full
disk becomes ``DiskFullError``, and the error a caller sees is always the one that happened (a
``ROLLBACK`` that fails after it is logged, ``sqlite_files.rollback``).

A full disk. The store is a WAL file, and SQLite cannot open one without writing (its ``-shm``
index) when not a byte is free. The store then opens a read-only snapshot instead
(``sqlite_files.open_snapshot``): searches and answers work, every write raises
``DiskFullError``, and each write (and, every few seconds, a read) first tries to reopen the
file normally, so freeing space is enough to make it writable again.

A read-only data dir (a snapshot on a read-only mount, a backup without write permission:
``sqlite_files.unwritable``). The store is opened with SQLite's ``mode=ro`` (``open_read_only``):
no pragma, no migration, not a byte written. Reads work; every write raises
``DataDirReadOnlyError`` naming the cause, and so does opening a store that still needs a
migration (written by an older paperbot) or that does not exist.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple, Self

from pydantic import BaseModel

from retrieval.errors import DataDirReadOnlyError, DiskFullError, StorageError
from retrieval.records.merge import merge_papers, title_variants
from retrieval.records.names import author_key, filing_families
from retrieval.records.paper import Author, FamilyPart, Paper, Provenance, title_key
from retrieval.storage.sqlite import disk_is_full, open_read_only, open_snapshot, report_read_only, rollback, unwritable
from retrieval.text import folded

log = logging.getLogger(__name__)

MAX_TITLE_CANDIDATES = 20  # title-variant candidates returned per lookup (generic titles stay bounded)
REOPEN_EVERY = 5.0  # seconds between a read-only snapshot's attempts to reopen the store writable


@lru_cache(maxsize=4096)
def _variant_keys(title: str) -> tuple[str, ...]:
    """Title-variant keys worth looking up: two words at least (one word identifies nothing).

    Cached (a few recent titles): an ingest looks each title up (``find_matches``), then
    writes the record under the same title.
    """
    return tuple(key for key in dict.fromkeys(title_variants(title)) if len(key.split()) >= 2)


def _backfill_title_variants(conn: sqlite3.Connection) -> None:
    """Migration 2: fill ``title_variants`` for the records stored before it existed."""
    rows = conn.execute("SELECT id, record FROM papers").fetchall()
    conn.executemany(
        "INSERT OR IGNORE INTO title_variants (paper_id, key) VALUES (?, ?)",
        [(paper_id, key) for paper_id, record in rows for key in _variant_keys(_decode(record).title)],
    )


@lru_cache(maxsize=65536)
def _filing(name: str) -> tuple[str, tuple[str, ...]] | None:
    """(author key, filing families) of one written name; None for a name without a key.

    Cached: the papers of a publication list all repeat their scholar's name.
    """
    key = author_key(name)
    return (key, tuple(filing_families(name))) if key else None


def _author_name_rows(paper: Paper, paper_id: str | None = None) -> list[tuple[str, str, str, str]]:
    """``author_names`` rows of one record: (paper id, family, written name, author key).

    ``paper_id``: the record's id when the caller has it (``Paper.id`` of a ``hash:`` record
    hashes its title anew on every read).
    """
    if paper_id is None:
        paper_id = paper.id
    rows = {}
    for author in paper.authors:
        filed = _filing(author.name)
        if filed is not None:
            key, families = filed
            for family in families:
                rows[(family, author.name)] = key
    return [(paper_id, family, name, key) for (family, name), key in rows.items()]


def _backfill_author_names(conn: sqlite3.Connection) -> None:
    """Migration 3: file the written author names of the records stored before it existed."""
    rows = conn.execute("SELECT record FROM papers").fetchall()
    conn.executemany(
        "INSERT OR IGNORE INTO author_names (paper_id, family, name, author_key) VALUES (?, ?, ?, ?)",
        [row for (record,) in rows for row in _author_name_rows(_decode(record))],
    )


DERIVED_REFRESH_KEY = "derived_refresh"  # meta: Chroma and BM25 must catch up with a migration


def _put_many(conn: sqlite3.Connection, papers: Iterable[Paper], stamp: str) -> None:
    """Insert or replace records with their lookup columns and side-table rows.

    A record listed twice is stored once, as its last version. Statements are batched over
    the whole call (the side rows of all ids deleted a chunk at a time, then every row
    inserted by one ``executemany`` per table): one record at a time took five statements.
    """
    latest: dict[str, Paper] = {}
    for paper in papers:
        latest[paper.id] = paper
    if not latest:
        return
    for chunk in _chunks(list(latest)):
        marks = ",".join("?" * len(chunk))
        conn.execute(f"DELETE FROM title_variants WHERE paper_id IN ({marks})", tuple(chunk))
        conn.execute(f"DELETE FROM author_names WHERE paper_id IN ({marks})", tuple(chunk))
    conn.executemany(
        "INSERT OR REPLACE INTO papers (id, doi, arxiv_id, openalex_id, fingerprint, title_key, year,"
        " venue_key, content_hash, embedding_hash, updated_at, record)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(paper_id, paper.doi, paper.arxiv_id, paper.openalex_id, paper.fingerprint, title_key(paper.title),
          paper.year, _venue_key(paper), paper.content_hash, paper.embedding_hash, stamp, paper.model_dump_json())
         for paper_id, paper in latest.items()],
    )
    conn.executemany("INSERT INTO title_variants (paper_id, key) VALUES (?, ?)",
                     [(paper_id, key) for paper_id, paper in latest.items() for key in _variant_keys(paper.title)])
    conn.executemany("INSERT INTO author_names (paper_id, family, name, author_key) VALUES (?, ?, ?, ?)",
                     [row for paper_id, paper in latest.items() for row in _author_name_rows(paper, paper_id)])


def _venue_key(paper: Paper) -> str | None:
    return folded(paper.venue) if paper.venue else None  # cached fold: a list repeats its venues


def _bump_generation(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('generation', '1')"
        " ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )


def _place(kept: dict[str, tuple[Paper, list[tuple[str, str]]]], paper: Paper, origins: list[tuple[str, str]]) -> None:
    """File ``paper`` under its id in ``kept``, merged with whatever already holds that id.

    Merging can change the id again (a fuller first-author name): then it is filed anew. Each
    round removes one entry, so this ends.
    """
    while paper.id in kept:
        held, held_origins = kept.pop(paper.id)
        paper = merge_papers(held, paper)
        origins = held_origins + origins
    kept[paper.id] = (paper, origins)


def _refresh_records(conn: sqlite3.Connection) -> None:
    """Migration 5: today's author cleaning and fold applied to the records stored before them.

    Each stored record gets ``Paper.with_clean_authors`` ("et al." and "others" removed and
    ``authors_truncated`` set, markup and footnote marks stripped) and its id, fingerprint,
    title key, venue key, title variants and author side-table rows computed anew. A ``hash:``
    id may change: the title fold now transliterates non-Latin scripts, and a cleaned first
    author ("<b>Shaden Smith</b>") has another family name. Such a record moves to its new id;
    records that arrive at the same id are merged, as an ingest would have merged them.

    What cannot be undone: two papers the old fold could not tell apart (two Chinese titles of
    one year and first author had the same empty title key, hence one ``hash:`` id) were merged
    into one record when they were ingested. The record stays one, under the id of the title it
    kept; re-ingesting the source file restores the other paper as a record of its own.

    Vectors are not touched here: each changed record is listed in ``vector_moves`` (old id,
    new id, embedding hash of the old text) and ``meta.derived_refresh`` is set, for
    ``PaperIndex`` to move the vectors without re-embedding unchanged text and to rebuild BM25.
    Records that need none of it are left exactly as they are. One transaction, like every
    migration: an interrupted run leaves the old store, and the next open runs it again.
    """
    name_rows: dict[str, set[tuple[str, str, str, str]]] = defaultdict(set)
    for row in conn.execute("SELECT paper_id, family, name, author_key FROM author_names"):
        name_rows[row[0]].add(tuple(row))
    variant_keys: dict[str, set[str]] = defaultdict(set)
    for paper_id, key in conn.execute("SELECT paper_id, key FROM title_variants"):
        variant_keys[paper_id].add(key)
    rows = conn.execute(
        "SELECT id, fingerprint, title_key, venue_key, embedding_hash, record FROM papers ORDER BY id").fetchall()
    staying: list[tuple[str, Paper, str, bool]] = []
    moving: list[tuple[str, Paper, str, bool]] = []
    for paper_id, fingerprint, key, venue_key, embedding_hash, record in rows:
        stored = _decode(record)
        paper = stored.with_clean_authors()
        unchanged = (
            paper is stored and paper.id == paper_id and paper.fingerprint == fingerprint
            and title_key(paper.title) == key and _venue_key(paper) == venue_key
            and set(_author_name_rows(paper)) == name_rows.get(paper_id, set())
            and set(_variant_keys(paper.title)) == variant_keys.get(paper_id, set())
        )
        (staying if paper.id == paper_id else moving).append((paper_id, paper, embedding_hash, unchanged))
    kept: dict[str, tuple[Paper, list[tuple[str, str]]]] = {}
    untouched: set[str] = set()
    for paper_id, paper, embedding_hash, unchanged in [*staying, *moving]:  # records keeping their id win ties
        if unchanged:
            untouched.add(paper_id)
        _place(kept, paper, [(paper_id, embedding_hash)])
    changed = {new_id: (paper, origins) for new_id, (paper, origins) in kept.items()
               if not (new_id in untouched and [old_id for old_id, _ in origins] == [new_id])}
    if not changed:
        return
    gone = [paper_id for paper_id, *_ in rows if paper_id not in kept]
    for chunk in _chunks(gone):
        conn.execute(f"DELETE FROM papers WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk))
    _put_many(conn, [paper for paper, _ in changed.values()], _utc_now().isoformat(timespec="seconds"))
    conn.executemany(
        "INSERT OR REPLACE INTO vector_moves (old_id, new_id, old_embedding_hash) VALUES (?, ?, ?)",
        [(old_id, new_id, embedding_hash) for new_id, (_, origins) in changed.items()
         for old_id, embedding_hash in origins],
    )
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, 'pending')", (DERIVED_REFRESH_KEY,))
    _bump_generation(conn)


# Ordered schema migrations (SQL statements or functions of the connection); ``PRAGMA
# user_version`` records how many have been applied. Each runs in one transaction.
_MIGRATIONS: list[list[str | Callable[[sqlite3.Connection], None]]] = [
    [
        """CREATE TABLE papers (
            id TEXT PRIMARY KEY,
            doi TEXT, arxiv_id TEXT, openalex_id TEXT,
            fingerprint TEXT NOT NULL, title_key TEXT NOT NULL,
            year INTEGER, venue_key TEXT,
            content_hash TEXT NOT NULL, embedding_hash TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            record TEXT NOT NULL)""",
        "CREATE INDEX papers_doi ON papers(doi) WHERE doi IS NOT NULL",
        "CREATE INDEX papers_arxiv ON papers(arxiv_id) WHERE arxiv_id IS NOT NULL",
        "CREATE INDEX papers_openalex ON papers(openalex_id) WHERE openalex_id IS NOT NULL",
        "CREATE INDEX papers_fingerprint ON papers(fingerprint)",
        "CREATE INDEX papers_title_key ON papers(title_key)",
        "CREATE INDEX papers_year ON papers(year)",
        """CREATE TABLE authors (
            paper_id TEXT NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            author_key TEXT NOT NULL,
            family TEXT NOT NULL,
            PRIMARY KEY (paper_id, position))""",
        "CREATE INDEX authors_family ON authors(family)",
        "CREATE INDEX authors_key ON authors(author_key)",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ],
    [
        """CREATE TABLE title_variants (
            paper_id TEXT NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            PRIMARY KEY (paper_id, key))""",
        "CREATE INDEX title_variants_key ON title_variants(key)",
        _backfill_title_variants,
    ],
    [
        """CREATE TABLE author_names (
            paper_id TEXT NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
            family TEXT NOT NULL,
            name TEXT NOT NULL,
            author_key TEXT NOT NULL,
            PRIMARY KEY (paper_id, family, name))""",
        "CREATE INDEX author_names_family ON author_names(family)",
        _backfill_author_names,
    ],
    [  # author_names holds every author key too: the older authors table is redundant
        "CREATE INDEX author_names_key ON author_names(author_key)",
        "DROP TABLE IF EXISTS authors",
    ],
    [  # cleaned author names, truncated lists, hash ids of a fold that keeps every script
        """CREATE TABLE IF NOT EXISTS vector_moves (
            old_id TEXT PRIMARY KEY,
            new_id TEXT NOT NULL,
            old_embedding_hash TEXT NOT NULL)""",
        _refresh_records,
    ],
]

_CHUNK = 500  # ids per IN (...) query, well under SQLite's variable limit


def _chunks(items: Sequence[str], size: int = _CHUNK) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _decode(record: str) -> Paper:
    """Rebuild a stored ``Paper`` without re-running its validators.

    Records were validated before they were stored, and validation is slow (text cleaning
    walks every character: ~1 ms per abstract, which dominated search latency and BM25
    rebuilds). Unknown keys (an older schema) are dropped; anything unexpected falls back to
    full validation.
    """
    try:
        data = json.loads(record)
        fields = {key: value for key, value in data.items() if key in Paper.model_fields}
        fields["authors"] = [Author.model_construct(**_known(Author, a)) for a in fields.get("authors") or []]
        fields["provenance"] = [Provenance.model_construct(**_known(Provenance, p)) for p in fields.get("provenance") or []]
        fields["editor_families"] = {name: FamilyPart.model_construct(**_known(FamilyPart, part))
                                     for name, part in (fields.get("editor_families") or {}).items()}
        return Paper.model_construct(**fields)
    except (TypeError, ValueError, AttributeError):
        return Paper.model_validate_json(record)


def _known(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key in model.model_fields}


class RecordText(NamedTuple):
    """The fields of a stored record that a text index reads (``RecordStore.iter_texts``)."""

    id: str
    year: int | None
    title: str
    abstract: str | None
    author_names: list[str]
    venue: str | None


def _record_text(paper_id: str, year: int | None, record: str) -> RecordText:
    """``RecordText`` of one stored record: its fields as ``_decode`` would give them, read
    from the JSON without building the ``Paper`` and its ``Author`` models.

    A record of another shape (what ``_decode`` validates instead) goes through ``_decode``.
    """
    try:
        data = json.loads(record)
        names = [author["name"] for author in data.get("authors") or []]
        return RecordText(paper_id, year, data["title"], data.get("abstract"), names, data.get("venue"))
    except (TypeError, ValueError, AttributeError, KeyError):
        paper = _decode(record)
        return RecordText(paper_id, year, paper.title, paper.abstract, paper.author_names, paper.venue)


def _matching_clause(
    since: int | None,
    until: int | None,
    author_keys: Iterable[str] | None,
    venue_keys: Iterable[str] | None,
) -> tuple[str, list[object]]:
    """The SQL ``WHERE`` condition (and its parameters) of filter restrictions; None = unrestricted."""
    clauses: list[str] = []
    params: list[object] = []
    if since is not None:
        clauses.append("year >= ?")
        params.append(since)
    if until is not None:
        clauses.append("year <= ?")
        params.append(until)
    if author_keys is not None:
        keys = list(author_keys)
        clauses.append(f"id IN (SELECT paper_id FROM author_names WHERE author_key IN ({','.join('?' * len(keys))}))")
        params.extend(keys)
    if venue_keys is not None:
        keys = list(venue_keys)
        clauses.append(f"venue_key IN ({','.join('?' * len(keys))})")
        params.extend(keys)
    return " AND ".join(clauses) or "1", params


def _utc_now() -> datetime:
    return datetime.now(UTC)


class RecordStore:
    """SQLite (WAL) store of full ``Paper`` records, safe to share between threads."""

    def __init__(self, path: Path, *, clock: Callable[[], datetime] = _utc_now) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.RLock()
        self._unwritable: DiskFullError | None = None  # set while reading a snapshot (disk full)
        self._next_reopen = 0.0
        self._read_only = unwritable(self.path)  # why the data dir cannot be written, or None
        with self._errors("open"):
            if self._read_only is not None:
                self._conn = self._open_read_only(self._read_only)
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._conn = self._connect()
            except sqlite3.Error as exc:
                if not disk_is_full(exc, self.path):
                    raise
                self._conn = self._snapshot(exc)

    def _connect(self) -> sqlite3.Connection:
        """A writable connection with the store's pragmas, migrated to the current schema."""
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            self._migrate(conn)
        except BaseException:
            conn.close()  # a failed open holds no connection (the migration rolled back)
            raise
        return conn

    def _open_read_only(self, reason: str) -> sqlite3.Connection:
        """The store of a read-only data dir, opened without writing (module docstring)."""
        conn = open_read_only(self.path, label=f"the record store {self.path}", data_dir=self.path.parent,
                              reason=reason)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < len(_MIGRATIONS):
            conn.close()
            raise self._read_only_error(f"bring the record store {self.path} (written by an older paperbot, "
                                        f"schema {version}) up to schema {len(_MIGRATIONS)}")
        return conn

    @property
    def read_only(self) -> str | None:
        """Why this store cannot be written (its data dir is read-only: "a read-only file system"), or None."""
        return self._read_only

    def _read_only_error(self, doing: str) -> DataDirReadOnlyError:
        return DataDirReadOnlyError(doing, data_dir=str(self.path.parent), reason=self._read_only or "")

    def _snapshot(self, failure: sqlite3.Error) -> sqlite3.Connection:
        """The read-only snapshot of a full disk (module docstring), or the disk-full error."""
        error = self._disk_full("open")
        conn = open_snapshot(self.path)
        if conn is None:
            raise error from failure
        if conn.execute("PRAGMA user_version").fetchone()[0] != len(_MIGRATIONS):
            conn.close()  # a store that still needs a migration cannot be read as it is
            raise error from failure
        report_read_only(str(self.path.parent), f"the record store {self.path} is read from a read-only snapshot")
        self._unwritable = error
        self._next_reopen = time.monotonic() + REOPEN_EVERY
        return conn

    def _reopen(self, *, now: bool) -> None:
        """Leave the read-only snapshot once the store opens normally again (caller holds the lock).

        ``now``: try at once (before a write); otherwise at most every ``REOPEN_EVERY`` seconds.
        """
        if self._unwritable is None or (not now and time.monotonic() < self._next_reopen):
            return
        self._next_reopen = time.monotonic() + REOPEN_EVERY
        try:
            conn = self._connect()
        except sqlite3.Error as exc:
            log.debug("the record store is still not writable: %s", exc)
            return
        self._conn.close()
        self._conn, self._unwritable = conn, None
        log.info("The record store %s is writable again.", self.path)

    # --- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn SQLite/OS failures into ``StorageError`` naming the file and the fix."""
        try:
            yield
        except sqlite3.Error as exc:
            raise self._storage_error(action, str(exc), exc) from exc
        except OSError as exc:
            raise self._storage_error(action, exc.strerror or str(exc), exc) from exc

    def _disk_full(self, action: str) -> DiskFullError:
        return DiskFullError(f"{action} the record store {self.path}", where=str(self.path.parent))

    def _storage_error(self, action: str, detail: str, exc: BaseException | None = None) -> StorageError:
        text = detail.lower()
        where = f"the record store {self.path}"
        if disk_is_full(exc if exc is not None else detail, self.path):
            return self._disk_full(action)
        if "readonly" in text or "read-only" in text or "permission" in text:
            return StorageError(f"Cannot {action} {where}: it is read-only; nothing was changed.",
                                hint="Make PAPERBOT_DATA_DIR writable or point it to a writable directory.")
        if "locked" in text or "busy" in text:
            return StorageError(f"Cannot {action} {where}: another paperbot process is writing to it.",
                                hint="Wait for it to finish, then run the command again.")
        if "not a database" in text or "malformed" in text:
            return StorageError(f"Cannot {action} {where}: the file is damaged.",
                                hint="Move it aside and ingest your sources again (the index is rebuilt from them).")
        return StorageError(f"Cannot {action} {where}: {detail}.",
                            hint="Check that PAPERBOT_DATA_DIR exists and is writable.")

    @contextmanager
    def _transaction(self, action: str) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT``; on any failure rolled back, and the failure
        (not a failing ``ROLLBACK``) is what the caller sees."""
        with self._lock, self._errors(action):
            if self._read_only is not None:
                raise self._read_only_error(f"{action} the record store {self.path}")
            self._reopen(now=True)
            if self._unwritable is not None:
                raise self._disk_full(action)
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                rollback(self._conn)
                raise

    def _query(self, sql: str, params: Iterable[object] = ()) -> list[tuple]:
        with self._lock, self._errors("read"):
            self._reopen(now=False)
            return self._conn.execute(sql, tuple(params)).fetchall()

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for number, statements in enumerate(_MIGRATIONS[version:], start=version + 1):
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("PRAGMA user_version").fetchone()[0] >= number:
                    conn.execute("COMMIT")  # another process opening the store ran it meanwhile
                    continue
                for statement in statements:
                    if callable(statement):
                        statement(conn)
                    else:
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads -------------------------------------------------------------------------------

    def get(self, paper_id: str) -> Paper | None:
        rows = self._query("SELECT record FROM papers WHERE id = ?", (paper_id,))
        return _decode(rows[0][0]) if rows else None

    def get_many(self, ids: Iterable[str]) -> dict[str, Paper]:
        """Records by id; ids that are not stored are simply absent from the result."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, Paper] = {}
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            for paper_id, record in self._query(f"SELECT id, record FROM papers WHERE id IN ({marks})", chunk):
                found[paper_id] = _decode(record)
        return {paper_id: found[paper_id] for paper_id in wanted if paper_id in found}

    def find_matches(self, paper: Paper) -> list[Paper]:
        """Candidate records of the same paper: the records sharing its id, DOI, arXiv id, OpenAlex
        id or fingerprint, then those sharing a title-variant key (at most ``MAX_TITLE_CANDIDATES``).

        Candidates, not verdicts: a title-variant candidate may be another paper with the same
        title, so callers confirm each one with ``merge.same_paper``. Strong matches come first,
        each group in id order.
        """
        clauses = ["id = ?", "fingerprint = ?"]
        params: list[object] = [paper.id, paper.fingerprint]
        for column, value in (("doi", paper.doi), ("arxiv_id", paper.arxiv_id), ("openalex_id", paper.openalex_id)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        rows = self._query(f"SELECT id, record FROM papers WHERE {' OR '.join(clauses)} ORDER BY id", params)
        keys = _variant_keys(paper.title)
        if keys:
            strong = {paper_id for paper_id, _ in rows}
            marks = ",".join("?" * len(keys))
            similar = self._query(
                f"SELECT id, record FROM papers WHERE id IN"
                f" (SELECT paper_id FROM title_variants WHERE key IN ({marks})) ORDER BY id LIMIT ?",
                [*keys, MAX_TITLE_CANDIDATES + len(strong)],
            )
            rows += [row for row in similar if row[0] not in strong][:MAX_TITLE_CANDIDATES]
        return [_decode(record) for _, record in rows]

    def hashes(self, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``id -> (content_hash, embedding_hash)`` for the stored ones among ``ids``."""
        wanted = list(dict.fromkeys(ids))
        result: dict[str, tuple[str, str]] = {}
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id, content_hash, embedding_hash FROM papers WHERE id IN ({marks})"
            for paper_id, content, embedding in self._query(sql, chunk):
                result[paper_id] = (content, embedding)
        return result

    def all_embedding_hashes(self) -> dict[str, str]:
        """``id -> embedding_hash`` for every record (for consistency checks)."""
        return dict(self._query("SELECT id, embedding_hash FROM papers"))

    def iter_papers(self, batch: int = 500) -> Iterator[Paper]:
        """Every record in id order, read in batches (keyset pagination, no long read lock)."""
        last = ""
        while True:
            rows = self._query("SELECT id, record FROM papers WHERE id > ? ORDER BY id LIMIT ?", (last, batch))
            if not rows:
                return
            for _, record in rows:
                yield _decode(record)
            last = rows[-1][0]

    def iter_texts(self, batch: int = 500) -> Iterator[RecordText]:
        """``iter_papers`` reduced to what a text index reads (id, year, title, abstract, author
        names, venue), in id order and batches alike.

        Without the ``Paper`` models: building them (``_decode``) is most of a BM25 rebuild's
        time. The id and year come from the record's columns, which every write sets from the
        record itself (``_put``).
        """
        last = ""
        while True:
            rows = self._query("SELECT id, year, record FROM papers WHERE id > ? ORDER BY id LIMIT ?", (last, batch))
            if not rows:
                return
            for paper_id, year, record in rows:
                yield _record_text(paper_id, year, record)
            last = rows[-1][0]

    def ids(self) -> set[str]:
        return {paper_id for (paper_id,) in self._query("SELECT id FROM papers")}

    def count(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM papers")[0][0])

    def generation(self) -> int:
        """Counter bumped by every write; a derived index built at this generation is current."""
        value = self.get_meta("generation")
        return int(value) if value else 0

    def digest(self) -> str:
        """Hash of the (id, content_hash) set: equal digests mean equal contents."""
        digest = hashlib.sha256()
        for paper_id, content in self._query("SELECT id, content_hash FROM papers ORDER BY id"):
            digest.update(f"{paper_id}\t{content}\n".encode())
        return digest.hexdigest()

    # --- lookups for filters -----------------------------------------------------------------

    def author_names_filed_under(self, families: Iterable[str]) -> set[tuple[str, str]]:
        """(written name, author key) of every indexed author name filed under one of ``families``."""
        wanted = sorted(set(families))
        found: set[tuple[str, str]] = set()
        for chunk in _chunks(wanted):
            found.update(self._query(
                f"SELECT DISTINCT name, author_key FROM author_names WHERE family IN ({','.join('?' * len(chunk))})",
                chunk,
            ))
        return found

    def year_range(self) -> tuple[int | None, int | None]:
        """(oldest, newest) publication year among records that have one."""
        low, high = self._query("SELECT MIN(year), MAX(year) FROM papers")[0]
        return low, high

    def venue_keys(self) -> set[str]:
        """Distinct folded venue names."""
        return {key for (key,) in self._query("SELECT DISTINCT venue_key FROM papers WHERE venue_key IS NOT NULL")}

    def count_matching(
        self,
        *,
        since: int | None = None,
        until: int | None = None,
        author_keys: Iterable[str] | None = None,
        venue_keys: Iterable[str] | None = None,
    ) -> int:
        """How many records pass these restrictions (None = unrestricted)."""
        where, params = _matching_clause(since, until, author_keys, venue_keys)
        return int(self._query(f"SELECT COUNT(*) FROM papers WHERE {where}", params)[0][0])

    def list_matching(
        self,
        *,
        since: int | None = None,
        until: int | None = None,
        author_keys: Iterable[str] | None = None,
        venue_keys: Iterable[str] | None = None,
    ) -> list[Paper]:
        """Every record passing these restrictions (as ``count_matching``), newest year first.

        A listing answer cites all of them, so this is not a ranked top-k.
        """
        where, params = _matching_clause(since, until, author_keys, venue_keys)
        rows = self._query(f"SELECT record FROM papers WHERE {where} ORDER BY year DESC, id", params)
        return [_decode(record) for (record,) in rows]

    # --- writes ------------------------------------------------------------------------------

    def write(self, put: Sequence[Paper] = (), delete: Sequence[str] = ()) -> int:
        """Remove ``delete`` and store ``put`` (insert or replace by id) in ONE transaction.

        Returns how many of ``delete`` existed. Deletions run first, so an id listed in both
        ends up stored.
        """
        if not put and not delete:
            return 0
        deleted = 0
        stamp = self._clock().isoformat(timespec="seconds")
        with self._transaction("write to") as conn:
            for chunk in _chunks(list(dict.fromkeys(delete))):
                cursor = conn.execute(f"DELETE FROM papers WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk))
                deleted += cursor.rowcount
            _put_many(conn, put, stamp)
            _bump_generation(conn)
        return deleted

    def put_many(self, papers: Sequence[Paper]) -> None:
        """Insert or replace records by id, all or nothing."""
        self.write(put=papers)

    def delete_many(self, ids: Sequence[str]) -> int:
        """Remove records by id; returns how many existed."""
        return self.write(delete=ids)

    # --- catching up with a migration (``_refresh_records``) -----------------------------------

    def derived_refresh_pending(self) -> bool:
        """True while Chroma and BM25 have not caught up with a migration that changed records."""
        return self.get_meta(DERIVED_REFRESH_KEY) is not None

    def vector_moves(self, limit: int = _CHUNK) -> list[tuple[str, str, str]]:
        """Up to ``limit`` pending ``(old id, new id, embedding hash of the old text)`` moves.

        ``old id == new id`` for a record that kept its id but whose vector metadata (author
        keys, venue key) must be rewritten.
        """
        rows = self._query(
            "SELECT old_id, new_id, old_embedding_hash FROM vector_moves ORDER BY new_id, old_id LIMIT ?", (limit,))
        return [(old_id, new_id, embedding_hash) for old_id, new_id, embedding_hash in rows]

    def vector_moves_done(self, old_ids: Sequence[str]) -> None:
        """Forget these moves: their vectors are in place."""
        with self._transaction("write to") as conn:
            for chunk in _chunks(list(dict.fromkeys(old_ids))):
                conn.execute(f"DELETE FROM vector_moves WHERE old_id IN ({','.join('?' * len(chunk))})", tuple(chunk))

    def derived_refresh_done(self) -> None:
        """Clear the mark once every move is done and BM25 rebuilt; other processes reload."""
        with self._transaction("write to") as conn:
            if conn.execute("SELECT COUNT(*) FROM vector_moves").fetchone()[0]:
                raise RuntimeError("vector moves are still pending")
            conn.execute("DELETE FROM meta WHERE key = ?", (DERIVED_REFRESH_KEY,))
            _bump_generation(conn)

    # --- meta --------------------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        """Every ``meta`` value by key: the generation, the encoder of the vectors, pending work."""
        return dict(self._query("SELECT key, value FROM meta"))

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else default

    def delete_meta(self, key: str) -> None:
        """Forget ``key`` (nothing happens when it is not set)."""
        with self._transaction("write to") as conn:
            conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    def set_meta(self, key: str, value: str) -> None:
        with self._transaction("write to") as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
