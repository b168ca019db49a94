"""retrieval.storage.bulk: many rows into a table, on SQLite (executemany) and on a real PostgreSQL
(COPY through the driver), with the values read back exactly as given and a driver's failure on the
direct path typed like any other."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import BigInteger, Column, MetaData, Table, Text, select

from retrieval.config import Settings
from retrieval.errors import StorageError
from retrieval.storage.bulk import insert_rows
from retrieval.storage.database import Database, open_database

rows_table = Table("bulk_rows", MetaData(), Column("id", Text, primary_key=True), Column("body", Text),
                   Column("count", BigInteger))

# what a text COPY must escape (tab, newline, carriage return, backslash, COPY's NULL marker "\N"),
# quotes, JSON with escapes, non-ASCII, the empty string, NULL and a large integer
AWKWARD = ["tab\there", "two\nlines", "cr\rlf", "back\\slash", "\\N", "'single' and \"double\"",
           '{"title": "a\\nb", "x": "\\u00e9"}', "Ærø — ℵ₀ ∞ 你好", "", None]


@pytest.fixture
def database(tmp_path: Path, database_url: str | None) -> Iterator[Database]:
    database = open_database(Settings(_env_file=None, data_dir=tmp_path / "data", database_url=database_url))
    with database.writing("make the test table") as connection:
        rows_table.create(connection)
    yield database


def test_every_value_comes_back_as_it_was_given(database: Database) -> None:
    given = [(2**40 + i, body, f"r{i:02d}") for i, body in enumerate(AWKWARD)]  # not the table's column order
    with database.writing("insert the rows") as connection:
        insert_rows(connection, rows_table, ["count", "body", "id"], given)
    with database.reading() as connection:
        stored = connection.execute(select(rows_table.c.count, rows_table.c.body, rows_table.c.id)
                                    .order_by(rows_table.c.id)).all()
    assert [tuple(row) for row in stored] == given  # ids in order: r00, r01, ...


def test_a_single_column_and_no_rows_work(database: Database) -> None:
    with database.writing("insert the rows") as connection:
        insert_rows(connection, rows_table, ["id"], [])
        insert_rows(connection, rows_table, ["id"], [("only",)])
    with database.reading() as connection:
        assert connection.execute(select(rows_table.c.id, rows_table.c.body)).all() == [("only", None)]


def test_a_failing_bulk_insert_is_a_typed_error_and_rolls_the_whole_write_back(database: Database) -> None:
    with database.writing("insert the first rows") as connection:
        insert_rows(connection, rows_table, ["id", "body"], [("kept", "before")])
    with pytest.raises(StorageError) as raised, database.writing("insert a duplicate") as connection:
        insert_rows(connection, rows_table, ["id", "body"], [("new", "x"), ("kept", "again")])
    assert "insert a duplicate" in str(raised.value)
    with database.reading() as connection:
        assert connection.execute(select(rows_table.c.id, rows_table.c.body)).all() == [("kept", "before")]
