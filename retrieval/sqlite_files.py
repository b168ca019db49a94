"""A small SQLite file in the data dir, opened once and shared by threads behind one lock.

The Slack state (``slack/state.sqlite3``) and the follows store (``follows.sqlite3``) open their
files the same way: create the directory, connect in autocommit mode (``isolation_level=None``:
each statement commits by itself unless it runs inside ``transaction``), apply their pragmas and
their ``CREATE ... IF NOT EXISTS`` schema. Every failure to open, and every SQLite failure inside
``call`` or ``transaction``, becomes a ``StorageError`` that names the file and the fix.

    file = SqliteFile(path, _SCHEMA, label=f"the follows store at {path}", pragmas=("foreign_keys = ON",))
    with file.transaction() as db:
        db.execute("INSERT ...")

Nothing here knows about Slack: ``bot/`` may use it, the core never imports ``bot/``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from retrieval.errors import StorageError


def _connect(path: Path, schema: str, *, label: str, pragmas: Sequence[str] = ()) -> sqlite3.Connection:
    """Connect to ``path`` (creating it and its directory), set ``pragmas``, apply ``schema``.

    ``label`` names the file in the error, e.g. "the Slack state file /data/slack/state.sqlite3".
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        for pragma in pragmas:
            db.execute(f"PRAGMA {pragma}")
        db.executescript(schema)
    except (OSError, sqlite3.Error) as exc:
        raise StorageError(
            f"Cannot open {label}: {exc}.",
            hint="Check that PAPERBOT_DATA_DIR is writable.",
        ) from exc
    return db


class SqliteFile:
    """One open SQLite file and the lock that serialises its use across threads.

    ``write_verb`` words the error of a failed change: "Cannot <write_verb> <label>: ...".
    """

    def __init__(
        self, path: Path, schema: str, *, label: str, pragmas: Sequence[str] = (), write_verb: str = "write"
    ) -> None:
        self.path = path
        self.label = label
        self.write_verb = write_verb
        self._lock = threading.Lock()
        self._db = _connect(path, schema, label=label, pragmas=pragmas)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        """The connection under the lock; a SQLite error propagates as it is."""
        with self._lock:
            yield self._db

    @contextmanager
    def call(self) -> Iterator[sqlite3.Connection]:
        """The connection under the lock (autocommit); a SQLite error becomes a ``StorageError``."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise self._write_error(exc) from exc

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction under the lock, rolled back on any exception.

        A SQLite error becomes a ``StorageError``; any other exception propagates unchanged.
        """
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise self._write_error(exc) from exc
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _write_error(self, exc: sqlite3.Error) -> StorageError:
        return StorageError(
            f"Cannot {self.write_verb} {self.label}: {exc}.",
            hint="Check free disk space and permissions of PAPERBOT_DATA_DIR.",
        )
