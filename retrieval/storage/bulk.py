"""Many rows, and many values, at once: how the record store writes and looks up an ingest batch.

``insert_rows(connection, table, columns, rows)`` inserts ``rows`` (tuples of the values of
``columns`` of ``table``, in that order) in the connection's open transaction, with the fastest path its dialect has:

* **SQLite** (in-process): the INSERT is compiled by SQLAlchemy for the dialect, once per call,
  and the rows go to the driver's executemany as they are (``exec_driver_sql``). SQLAlchemy's own
  executemany would build each row's parameters anew, about a fifth of an ingest batch's time for
  the twenty or so rows a record has in the three record tables. Only for columns whose type has
  no bind processor on the dialect (text and integers: every column of the record tables), so
  the driver gets the values SQLAlchemy would have passed; otherwise the plain executemany.
* **PostgreSQL**: ``COPY table (columns) FROM STDIN`` through psycopg's ``Cursor.copy``, on the
  connection's own driver connection and so in its transaction: one statement for all the rows,
  where an executemany has the server parse and run one INSERT per row and an
  ``INSERT ... SELECT unnest(arrays)`` pays for encoding every value as an array element in
  Python (the figures are in docs/performance.md, "The record store").

Either way the rows are in the table when it returns, or the driver's error propagates (the
caller's ``Database.writing`` translates it and rolls the transaction back).

``one_of(column, values, backend)`` is ``column IN values`` with the values bound as one
parameter where the backend allows it: on SQLite, for more than ``ONE_PARAMETER_FROM`` values,
``IN (SELECT value FROM json_each(:json))`` (SQLite looks each value up in ``column``'s index, as
for a written list; for a few values a placeholder each is a little faster); on PostgreSQL
``column = ANY(:array)`` (the same for its planner); elsewhere an expanding parameter.
``column.in_(values)`` would have SQLAlchemy test every value when the statement is built and
render a placeholder for each when it runs: for an ingest batch's 1,500 or so lookup keys, a few
percent of its time on SQLite.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table, Text, any_, bindparam, func, insert, select


def insert_rows(connection: Connection, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Insert ``rows`` (each its values of ``columns``, in that order) into ``table`` (module
    docstring); nothing for no rows."""
    if not rows:
        return
    driver = connection.connection.driver_connection  # psycopg's, on PostgreSQL
    if connection.dialect.name == "postgresql" and driver is not None:
        _copy_rows(driver, table, columns, rows)
    else:
        _executemany(connection, table, columns, rows)


ONE_PARAMETER_FROM = 100  # values; fewer go one placeholder each on SQLite (no JSON to encode and walk)


def one_of(column: ColumnElement[Any], values: Sequence[str], backend: str) -> ColumnElement[bool]:
    """``column IN values`` on ``backend`` ("sqlite" or "postgresql"; module docstring)."""
    if backend == "sqlite" and len(values) > ONE_PARAMETER_FROM:
        listed = func.json_each(bindparam(None, json.dumps(list(values)), type_=Text, unique=True)).table_valued("value")
        return column.in_(select(listed.c.value))
    if backend == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY  # imported with the dialect already

        return column == any_(bindparam(None, list(values), type_=ARRAY(Text), unique=True))
    return column.in_(bindparam(None, list(values), expanding=True, unique=True))


def _executemany(connection: Connection, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    names = list(columns)
    compiled = insert(table).compile(dialect=connection.dialect, column_keys=names)
    processed = any(table.c[name].type.bind_processor(connection.dialect) is not None for name in names)
    if processed or set(compiled.params) != set(names) or not compiled.positional:
        connection.execute(insert(table), [dict(zip(names, row, strict=True)) for row in rows])
        return
    order = list(compiled.positiontup or [])
    if order != names:  # the INSERT lists the table's columns in the table's order
        positions = [names.index(name) for name in order]
        rows = [tuple(row[position] for position in positions) for row in rows]
    connection.exec_driver_sql(compiled.string, rows if isinstance(rows, list) else list(rows))


def _copy_rows(driver: Any, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from psycopg import sql  # the dialect's driver, imported with it

    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table.name), sql.SQL(", ").join(map(sql.Identifier, columns)))
    with driver.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
