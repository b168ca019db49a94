"""A small SQLite file in the data dir, opened once and shared by threads behind one lock.

The Slack state (``slack/state.sqlite3``) opens its file this way (the roster and the follows
moved to ``storage.database``): create the directory, connect in autocommit mode (``isolation_level=None``:
each statement commits by itself unless it runs inside ``transaction``), apply their pragmas and
their ``CREATE ... IF NOT EXISTS`` schema. Every failure to open, and every SQLite failure inside
``call`` or ``transaction``, becomes a ``StorageError`` that names the file and the fix.

    file = SqliteFile(path, _SCHEMA, label=f"the Slack state file {path}", pragmas=("foreign_keys = ON",))
    with file.transaction() as db:
        db.execute("INSERT ...")

A full disk. SQLite rolls a transaction back by itself when a write fails for lack of space,
so a ``ROLLBACK`` afterwards would fail too ("no transaction is active") and hide the real
error: ``rollback`` rolls back only a transaction still open and never raises, and the caller
gets the original failure. ``disk_is_full`` tells that failure apart (SQLITE_FULL, ENOSPC,
EDQUOT, or an I/O error on a filesystem with next to nothing free); it becomes a
``DiskFullError`` ("Cannot update the Slack state file ...: the disk is full (the disk holding
PAPERBOT_DATA_DIR); nothing was changed. Free some disk space and retry; nothing was lost.").

Reading a full disk. A WAL-mode file (the record store, the embedding cache) cannot even be
opened for reading when no byte is free: the first connection must create its ``-shm`` index.
``open_snapshot`` then opens it with SQLite's ``immutable`` flag, which writes nothing, so
searches still answer; it does so only while the write-ahead log is empty (everything
committed is in the main file), and its users reopen normally as soon as space is back.

A read-only data dir (``config.unwritable_reason``: a read-only mount, no write permission).
``unwritable`` tells whether a file there can be written; ``open_read_only`` then opens it with
SQLite's ``mode=ro`` (a WAL file with its ``-shm`` in place), or ``immutable`` when its log is
empty, and writes nothing, no pragma and no migration. ``SqliteFile``, whose users must write,
raises ``DataDirReadOnlyError`` naming the cause instead of SQLite's "attempt to write a readonly
database".

Nothing here knows about Slack: ``bot/`` may use it, the core never imports ``bot/``.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from retrieval.config import unwritable_reason
from retrieval.errors import DataDirReadOnlyError, DiskFullError, StorageError

log = logging.getLogger(__name__)

LOW_SPACE = 1 << 20  # bytes: an I/O error on a filesystem with less free than this is a full disk
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_FULL_TEXTS = ("database or disk is full", "no space left", "quota exceeded")


def free_bytes(path: Path) -> int | None:
    """Bytes this user may still write on the filesystem holding ``path`` (or its nearest
    existing parent); None when it cannot be told."""
    for candidate in (path, *path.parents):
        try:
            stats = os.statvfs(candidate)
        except OSError:
            continue
        return stats.f_bavail * stats.f_frsize
    return None


def disk_is_full(error: BaseException | str, path: Path) -> bool:
    """True when ``error`` (an exception, or a library's error text) means the disk holding
    ``path`` ran out of space: ENOSPC / EDQUOT, SQLITE_FULL, or an I/O error ("disk I/O error"
    is all SQLite says when it cannot grow its ``-shm`` file) while less than ``LOW_SPACE`` is free.
    """
    if isinstance(error, OSError) and error.errno is not None:
        return error.errno in _FULL_ERRNOS
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_FULL:
        return True
    text = str(error).lower()
    if any(marker in text for marker in _FULL_TEXTS):
        return True
    io_error = (isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_IOERR) or "i/o error" in text
    if not io_error:
        return False
    free = free_bytes(path)
    return free is not None and free < LOW_SPACE


_reported: set[str] = set()
_reported_lock = threading.Lock()


def report_read_only(where: str, detail: str) -> None:
    """Say once per process and data dir that its disk is full and the index is read as it is.

    Each store that falls back to reading (record store, embedding cache, vector index) calls
    this; the first call is a warning, the rest are details at INFO level.
    """
    with _reported_lock:
        first = where not in _reported
        _reported.add(where)
    if first:
        log.warning("The disk holding PAPERBOT_DATA_DIR (%s) is full: the index is read as it is "
                    "(read-only) and nothing can be saved until some space is freed.", where)
    log.info("Disk full: %s.", detail)


def rollback(db: sqlite3.Connection) -> None:
    """Roll back the transaction still open on ``db``, if any; never raises.

    After a failed write SQLite may have rolled back already (a full disk does that), and a
    failing ``ROLLBACK`` must not replace the error the caller is about to see.
    """
    if not db.in_transaction:
        return
    try:
        db.execute("ROLLBACK")
    except sqlite3.Error as exc:
        log.warning("ROLLBACK failed after an earlier error (%s); that error is reported instead.", exc)


def open_snapshot(path: Path) -> sqlite3.Connection | None:
    """A read-only connection to ``path`` that writes nothing at all, or None when unsafe.

    SQLite's ``immutable`` flag skips locking and the ``-shm`` index, so a WAL file opens on a
    disk without a free byte. Only while its write-ahead log is empty (a cleanly closed file):
    what the connection reads is then every committed write. It does not see later writes by
    other processes, so callers keep it only until a normal open works again.
    """
    wal = path.with_name(path.name + "-wal")
    try:
        if path.stat().st_size == 0 or (wal.exists() and wal.stat().st_size > 0):
            return None
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True,
                             check_same_thread=False, isolation_level=None)
    except (OSError, sqlite3.Error):
        return None
    try:
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        db.close()
        return None
    return db


def unwritable(path: Path) -> str | None:
    """Why the SQLite file ``path`` cannot be written (``config.unwritable_reason``), or None.

    Both the file (when it exists) and its directory count: SQLite creates its ``-wal``,
    ``-shm`` or ``-journal`` next to the file for any write.
    """
    return unwritable_reason(path.parent) or (unwritable_reason(path) if path.exists() else None)


def open_read_only(path: Path, *, label: str, data_dir: Path, reason: str) -> sqlite3.Connection:
    """A connection to ``path`` in a read-only data dir that never writes a byte.

    SQLite's ``mode=ro`` reads a WAL file whose ``-shm`` exists (its write-ahead log included);
    a file whose log is empty or gone opens ``immutable`` (``open_snapshot``) when ``mode=ro``
    cannot create the ``-shm`` it wants. Raises ``DataDirReadOnlyError`` (``label`` names the
    file, ``reason`` why the dir cannot be written) when the file does not exist, or holds
    changes in its log that SQLite can only read through a ``-shm`` it would have to create.
    """
    if not path.exists():
        raise DataDirReadOnlyError(f"create {label}", data_dir=str(data_dir), reason=reason)
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False,
                             isolation_level=None)
    except sqlite3.Error:
        db = None
    if db is not None:
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.Error:
            db.close()
    snapshot = open_snapshot(path)
    if snapshot is None:
        raise DataDirReadOnlyError(
            f"read {label}: its write-ahead log {path.name}-wal holds changes SQLite can read only by "
            f"creating {path.name}-shm next to it", data_dir=str(data_dir), reason=reason)
    return snapshot


def _connect(
    path: Path, schema: str, *, label: str, pragmas: Sequence[str] = (), data_dir: Path | None = None
) -> sqlite3.Connection:
    """Connect to ``path`` (creating it and its directory), set ``pragmas``, apply ``schema``.

    ``label`` names the file in the error, e.g. "the Slack state file /data/slack/state.sqlite3".
    A file in a read-only data dir (``data_dir``, default the file's directory) is a
    ``DataDirReadOnlyError``: its users must write.
    """
    reason = unwritable(path)
    if reason is not None:
        raise DataDirReadOnlyError(f"open {label}", data_dir=str(data_dir or path.parent), reason=reason)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        for pragma in pragmas:
            db.execute(f"PRAGMA {pragma}")
        db.executescript(schema)
    except (OSError, sqlite3.Error) as exc:
        if disk_is_full(exc, path):
            raise DiskFullError(f"open {label}") from exc
        raise StorageError(
            f"Cannot open {label}: {exc}.",
            hint="Check that PAPERBOT_DATA_DIR is writable.",
        ) from exc
    return db


class SqliteFile:
    """One open SQLite file and the lock that serialises its use across threads.

    ``write_verb`` words the error of a failed change: "Cannot <write_verb> <label>: ...";
    ``data_dir`` is the data dir an error names when the file's directory cannot be written.
    """

    def __init__(
        self, path: Path, schema: str, *, label: str, pragmas: Sequence[str] = (), write_verb: str = "write",
        data_dir: Path | None = None,
    ) -> None:
        self.path = path
        self.label = label
        self.write_verb = write_verb
        self._lock = threading.Lock()
        self._db = _connect(path, schema, label=label, pragmas=pragmas, data_dir=data_dir)

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

        A SQLite error becomes a ``StorageError`` (a ``DiskFullError`` when the disk is full);
        any other exception propagates unchanged. Either way the caller sees the error that
        happened, not a failure of the ``ROLLBACK`` after it (``rollback``).
        """
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                rollback(self._db)
                raise self._write_error(exc) from exc
            except BaseException:
                rollback(self._db)
                raise

    def _write_error(self, exc: sqlite3.Error) -> StorageError:
        if disk_is_full(exc, self.path):
            return DiskFullError(f"{self.write_verb} {self.label}")
        return StorageError(
            f"Cannot {self.write_verb} {self.label}: {exc}.",
            hint="Check free disk space and permissions of PAPERBOT_DATA_DIR.",
        )
