"""Record stores made before the database: ``records.sqlite3`` with its schema counted by ``PRAGMA user_version``.

Before revision ``0003_records`` the record store migrated its own file through a positional list
of five migrations (``MIGRATIONS``, frozen here as they were; ``LEGACY_VERSION`` is the last).
Its tables at version 5 are the record tables of ``storage.schema``, column for column, so:

* on SQLite, where the database is that very file (``config.Settings.database_path``), the
  revision upgrades the file **in place**, inside the upgrade's transaction: the migrations it
  still lacks run (``bring_up_to_date``), its tables are set aside (``set_aside``), made anew as
  the revision defines them (SQLite keeps a table's definition as it was written: the new ones
  are what a database made by this code has) and their rows copied back (``take_back``);
* elsewhere (PostgreSQL, or a SQLite URL naming another file) the revision **imports** it
  (``legacy_rows``): a copy is read into memory, brought up to date there, and its rows are
  inserted unchanged; the file itself is never written.

Migration 5 (``_refresh_records``) brings records stored by older code up to today's rules
(author names cleaned, ``hash:`` ids re-keyed where the fold that now keeps every script computes
another one). What the store cannot do itself, moving vectors in Chroma to the new ids and
rebuilding BM25, it leaves listed in ``vector_moves`` with a ``derived_refresh`` mark in ``meta``:
``PaperIndex`` finishes it on first use (``index.catch_up.MigrationCatchUp``).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval.records.merge import merge_papers
from retrieval.records.paper import Paper, title_key
from retrieval.storage.record_rows import author_name_rows, decode, paper_row, variant_keys, venue_key

RECORDS_FILE = "records.sqlite3"  # in the data dir
DERIVED_REFRESH_KEY = "derived_refresh"  # meta: Chroma and BM25 must catch up with a migration
RECORD_TABLES = ("papers", "title_variants", "author_names", "meta", "vector_moves")
_CHUNK = 500  # ids per IN (...) query, well under SQLite's variable limit


def _chunks(items: Sequence[str], size: int = _CHUNK) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def put_rows(conn: sqlite3.Connection, papers: Iterable[Paper], stamp: str) -> None:
    """Insert or replace records with their lookup columns and side-table rows (a record listed
    twice is stored once, as its last version), as the store before the database did."""
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
        " venue_key, content_hash, embedding_hash, updated_at, record) VALUES (:id, :doi, :arxiv_id,"
        " :openalex_id, :fingerprint, :title_key, :year, :venue_key, :content_hash, :embedding_hash,"
        " :updated_at, :record)",
        [paper_row(paper_id, paper, stamp) for paper_id, paper in latest.items()],
    )
    conn.executemany("INSERT INTO title_variants (paper_id, key) VALUES (?, ?)",
                     [(paper_id, key) for paper_id, paper in latest.items() for key in variant_keys(paper.title)])
    conn.executemany("INSERT INTO author_names (paper_id, family, name, author_key) VALUES (?, ?, ?, ?)",
                     [row for paper_id, paper in latest.items() for row in author_name_rows(paper, paper_id)])


def bump_generation(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO meta (key, value) VALUES ('generation', '1')"
                 " ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1")


def _backfill_title_variants(conn: sqlite3.Connection) -> None:
    """Migration 2: fill ``title_variants`` for the records stored before it existed."""
    rows = conn.execute("SELECT id, record FROM papers").fetchall()
    conn.executemany("INSERT OR IGNORE INTO title_variants (paper_id, key) VALUES (?, ?)",
                     [(paper_id, key) for paper_id, record in rows for key in variant_keys(decode(record).title)])


def _backfill_author_names(conn: sqlite3.Connection) -> None:
    """Migration 3: file the written author names of the records stored before it existed."""
    rows = conn.execute("SELECT record FROM papers").fetchall()
    conn.executemany("INSERT OR IGNORE INTO author_names (paper_id, family, name, author_key) VALUES (?, ?, ?, ?)",
                     [row for (record,) in rows for row in author_name_rows(decode(record))])


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
    Records that need none of it are left exactly as they are.
    """
    name_rows: dict[str, set[tuple[str, str, str, str]]] = defaultdict(set)
    for row in conn.execute("SELECT paper_id, family, name, author_key FROM author_names"):
        name_rows[row[0]].add(tuple(row))
    keys: dict[str, set[str]] = defaultdict(set)
    for paper_id, key in conn.execute("SELECT paper_id, key FROM title_variants"):
        keys[paper_id].add(key)
    rows = conn.execute(
        "SELECT id, fingerprint, title_key, venue_key, embedding_hash, record FROM papers ORDER BY id").fetchall()
    staying: list[tuple[str, Paper, str, bool]] = []
    moving: list[tuple[str, Paper, str, bool]] = []
    for paper_id, fingerprint, key, venue, embedding_hash, record in rows:
        stored = decode(record)
        paper = stored.with_clean_authors()
        unchanged = (
            paper is stored and paper.id == paper_id and paper.fingerprint == fingerprint
            and title_key(paper.title) == key and venue_key(paper) == venue
            and set(author_name_rows(paper)) == name_rows.get(paper_id, set())
            and set(variant_keys(paper.title)) == keys.get(paper_id, set())
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
    put_rows(conn, [paper for paper, _ in changed.values()], datetime.now(UTC).isoformat(timespec="seconds"))
    conn.executemany(
        "INSERT OR REPLACE INTO vector_moves (old_id, new_id, old_embedding_hash) VALUES (?, ?, ?)",
        [(old_id, new_id, embedding_hash) for new_id, (_, origins) in changed.items()
         for old_id, embedding_hash in origins],
    )
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, 'pending')", (DERIVED_REFRESH_KEY,))
    bump_generation(conn)


# The positional migrations of the record store before the database (SQL statements or functions
# of the connection); ``PRAGMA user_version`` counted how many had been applied.
MIGRATIONS: list[list[str | Callable[[sqlite3.Connection], None]]] = [
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
LEGACY_VERSION = len(MIGRATIONS)  # the last schema the store had before the database


def legacy_version(conn: sqlite3.Connection) -> int:
    """How many of ``MIGRATIONS`` the file behind ``conn`` has had (``PRAGMA user_version``)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def bring_up_to_date(conn: sqlite3.Connection, *, up_to: int = LEGACY_VERSION) -> None:
    """Run the migrations the file behind ``conn`` lacks, up to ``up_to``, in the caller's transaction.

    ``conn`` is in autocommit mode with a transaction already begun (the upgrade's): a failure
    leaves everything to the caller's rollback, ``user_version`` included.
    """
    version = legacy_version(conn)
    for number, statements in enumerate(MIGRATIONS[version:up_to], start=version + 1):
        for statement in statements:
            if callable(statement):
                statement(conn)
            else:
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")


_ASIDE = "_before_database"  # suffix of the record tables while the revision makes them anew


def set_aside(conn: sqlite3.Connection) -> None:
    """Rename the record tables of the file behind ``conn`` out of the way, their indexes dropped
    (the new tables' indexes take the same names). References between them follow the renames."""
    tables = ", ".join(f"'{table}'" for table in RECORD_TABLES)
    indexes = conn.execute(f"SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                           f" AND tbl_name IN ({tables})").fetchall()
    for (index,) in indexes:
        conn.execute(f'DROP INDEX "{index}"')
    for table in RECORD_TABLES:
        conn.execute(f'ALTER TABLE "{table}" RENAME TO "{table}{_ASIDE}"')


def take_back(conn: sqlite3.Connection) -> None:
    """Copy every row of the tables ``set_aside`` renamed into the new tables of the same names,
    column by column, then drop the renamed ones."""
    for table in RECORD_TABLES:  # referenced tables first
        columns = ", ".join(f'"{row[1]}"' for row in conn.execute(f'PRAGMA table_info("{table}{_ASIDE}")'))
        conn.execute(f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM "{table}{_ASIDE}"')
    for table in reversed(RECORD_TABLES):  # referencing tables first
        conn.execute(f'DROP TABLE "{table}{_ASIDE}"')


def legacy_rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The rows of every record table of the records file ``path``, brought up to date in memory.

    The file is read (SQLite's ``mode=ro``) into an in-memory copy, which the migrations it lacks
    then change; ``path`` itself is not written. Rows are column -> value, in rowid order.
    """
    source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    copy = sqlite3.connect(":memory:", isolation_level=None)
    try:
        source.backup(copy)
        copy.row_factory = sqlite3.Row
        copy.execute("BEGIN")
        bring_up_to_date(copy)
        rows = {table: [dict(row) for row in copy.execute(f"SELECT * FROM {table} ORDER BY rowid")]
                for table in RECORD_TABLES}
        copy.execute("ROLLBACK")
        return rows
    finally:
        source.close()
        copy.close()
