"""Record stores as paperbot wrote them before the database (``retrieval.storage.legacy_records``).

``legacy_store`` makes one the way the record store did (its positional migrations, then its own
writes); ``as_legacy_store`` turns a database file made by this code back into one, for tests
that then take tables away as an older version lacked them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

from retrieval.records.paper import Paper
from retrieval.storage.legacy_records import (
    LEGACY_VERSION,
    MIGRATIONS,
    RECORD_TABLES,
    bring_up_to_date,
    bump_generation,
    put_rows,
)

STAMP = "2026-11-30T12:00:00+00:00"


def legacy_store(path: Path, papers: Iterable[Paper] = (), *, meta: Mapping[str, str] | None = None) -> None:
    """A ``records.sqlite3`` at ``path`` of the last schema before the database, holding ``papers``
    (one write, as the store made it) and the ``meta`` values given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("BEGIN IMMEDIATE")
        bring_up_to_date(conn)
        put_rows(conn, papers, STAMP)
        bump_generation(conn)
        for key, value in (meta or {}).items():
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
        conn.execute("COMMIT")
    finally:
        conn.close()


def as_legacy_store(path: Path, version: int = LEGACY_VERSION) -> None:
    """Leave only the record tables in the database file ``path``, no Alembic revision, and
    ``PRAGMA user_version = version``: what the record store before the database would read."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys=OFF")
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            if table not in RECORD_TABLES and not table.startswith("sqlite_"):
                conn.execute(f'DROP TABLE "{table}"')
        # the change feed came with the database (revision 0006_record_changes)
        if any(row[1] == "change_seq" for row in conn.execute("PRAGMA table_info(papers)")):
            conn.execute("DROP INDEX IF EXISTS papers_change_seq")
            conn.execute("ALTER TABLE papers DROP COLUMN change_seq")
        conn.execute("DELETE FROM meta WHERE key = 'change_feed'")
        _give_side_tables_their_key(conn)
        conn.execute(f"PRAGMA user_version = {int(version)}")
    finally:
        conn.close()


# The side tables as the store before the database made them (with their foreign key and its
# ON DELETE CASCADE, on which its migrations rely), and their indexes: legacy MIGRATIONS 2 to 4.
_LEGACY_SIDE_TABLES = {
    "title_variants": [MIGRATIONS[1][0], MIGRATIONS[1][1]],
    "author_names": [MIGRATIONS[2][0], MIGRATIONS[2][1], MIGRATIONS[3][0]],
}


def _give_side_tables_their_key(conn: sqlite3.Connection) -> None:
    """Make the side tables anew with their legacy foreign key where the file has none (made by
    revision 0009_side_rows_unchecked or later), keeping their rows."""
    for table, statements in _LEGACY_SIDE_TABLES.items():
        if conn.execute(f'PRAGMA foreign_key_list("{table}")').fetchall():
            continue
        rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
        columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
        conn.execute(f'DROP TABLE "{table}"')
        for statement in statements:
            assert isinstance(statement, str) and table in statement
            conn.execute(statement)
        conn.executemany(f'INSERT INTO "{table}" ({", ".join(columns)}) VALUES ({", ".join("?" * len(columns))})', rows)
