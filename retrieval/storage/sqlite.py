"""What every SQLite file of the data dir needs: full-disk and read-only handling.

The embedding cache (raw ``sqlite3``) and the database (``storage.database``, through
SQLAlchemy: the records, the roster, the Slack state) use these helpers.

A full disk. SQLite rolls a transaction back by itself when a write fails for lack of space,
so a ``ROLLBACK`` afterwards would fail too ("no transaction is active") and hide the real
error: ``rollback`` rolls back only a transaction still open and never raises, and the caller
gets the original failure. ``disk_is_full`` tells that failure apart (SQLITE_FULL, ENOSPC,
EDQUOT, or an I/O error on a filesystem with next to nothing free); it becomes a
``DiskFullError`` ("Cannot write to the record store ...: the disk is full (the disk holding
PAPERBOT_DATA_DIR); nothing was changed. Free some disk space and retry; nothing was lost.").

Reading a full disk. A WAL-mode file (the record store, the embedding cache) cannot even be
opened for reading when no byte is free: the first connection must create its ``-shm`` index.
``open_snapshot`` then opens it with SQLite's ``immutable`` flag, which writes nothing, so
searches still answer; it does so only while the write-ahead log is empty (everything
committed is in the main file), and its users reopen normally as soon as space is back.

A read-only data dir (``config.unwritable_reason``: a read-only mount, no write permission).
``unwritable`` tells whether a file there can be written; ``open_read_only`` then opens it with
SQLite's ``mode=ro`` (a WAL file with its ``-shm`` in place), or ``immutable`` when its log is
empty, and writes nothing, no pragma and no migration. What must write checks ``unwritable``
first and raises ``DataDirReadOnlyError`` naming the cause instead of SQLite's "attempt to write
a readonly database".
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path

from retrieval.config import unwritable_reason
from retrieval.errors import DataDirReadOnlyError

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


def use_write_ahead_log(cursor: sqlite3.Connection | sqlite3.Cursor, timeout: float) -> None:
    """``PRAGMA journal_mode = WAL`` on a writable SQLite connection (or a cursor of one), waiting
    up to ``timeout`` seconds for another connection that converts the same new file at that
    moment: both escalate their lock, and SQLite answers one of them SQLITE_BUSY ("database is
    locked") at once instead of letting it wait, whatever its busy timeout. The mode then
    persists in the file, so only the first connections to a new file ever wait here."""
    from retrieval.storage.driver_errors import sqlite_code  # which imports this module

    deadline = time.monotonic() + timeout
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if sqlite_code(exc) != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
