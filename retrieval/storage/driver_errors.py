"""The one place where a database driver's failure becomes one of paperbot's typed errors.

Both drivers are read by their error *codes*, never by their message text:

* SQLite (``sqlite3``): the primary result code of ``sqlite_errorcode`` (extended code & 0xFF).
* PostgreSQL (``psycopg``): the SQLSTATE of ``sqlstate`` (its five characters, or its class, the
  first two); a connection that failed before the server answered has none.
* An ``OSError`` (a driver that could not create its file): its ``errno``.

What each becomes (``storage_error``):

============================  =================================  ====================================
failure                       SQLite / OS                        PostgreSQL SQLSTATE
============================  =================================  ====================================
``DiskFullError``             SQLITE_FULL, ENOSPC, EDQUOT;       53100 disk_full
                              SQLITE_IOERR with < 1 MiB free
``DataDirReadOnlyError``      SQLITE_READONLY, EROFS             25006 read_only_sql_transaction
``BusyError``                 SQLITE_BUSY, SQLITE_LOCKED         55P03, 40P01, 40001 (lock, deadlock,
                                                                 serialization failure)
``DatabaseDamagedError``      SQLITE_CORRUPT, SQLITE_NOTADB      XX001, XX002 (data or index corrupted)
``ConfigError``               —                                  3D000 (no such database), class 28
                                                                 (authorization)
``StorageError``              anything else                      class 08, 57P, none (no connection:
                                                                 libpq gives a refused connection,
                                                                 a missing database or a wrong
                                                                 password no code; the server's
                                                                 words are quoted), anything else
============================  =================================  ====================================

Messages name the database by ``where`` (a path, or the URL without its password; not twice when
``doing`` names it already: "write to the record store /data/records.sqlite3") and never carry
the driver's text for the typed cases; the generic ``StorageError`` quotes it, since it is all
there is to say.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from retrieval.errors import (
    BusyError,
    ConfigError,
    DatabaseDamagedError,
    DataDirReadOnlyError,
    DiskFullError,
    PaperbotError,
    StorageError,
)
from retrieval.storage.sqlite import LOW_SPACE, free_bytes, unwritable

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_SQLITE_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_SQLITE_DAMAGED = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
_PG_BUSY = frozenset({"55P03", "40P01", "40001"})
_PG_DAMAGED = frozenset({"XX001", "XX002"})
_PG_UNREACHABLE_CLASSES = frozenset({"08", "57"})


def driver_error(exc: BaseException) -> BaseException:
    """The driver's own exception inside a SQLAlchemy ``DBAPIError`` (its ``orig``), else ``exc``."""
    orig = getattr(exc, "orig", None)
    return orig if isinstance(orig, BaseException) else exc


def sqlstate(exc: BaseException) -> str | None:
    """PostgreSQL's SQLSTATE of a psycopg error (``None``: not one, or no answer from the server)."""
    code = getattr(driver_error(exc), "sqlstate", None)
    return code if isinstance(code, str) else None


def sqlite_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of a ``sqlite3`` error (``None``: not one)."""
    code = getattr(driver_error(exc), "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def storage_error(exc: BaseException, *, doing: str, where: str, path: Path | None = None,
                  data_dir: Path | None = None) -> PaperbotError:
    """The typed error for the driver failure ``exc`` raised while trying to ``doing``.

    ``doing`` completes "Cannot ..." ("change the roster"); ``where`` names the database; ``path``
    is its SQLite file (None for a server), whose disk and directory the disk-full and read-only
    cases look at; ``data_dir`` is the data dir a read-only error names (default: the file's).
    """
    error = driver_error(exc)
    if isinstance(error, OSError) and error.errno is not None:
        if error.errno in _FULL_ERRNOS:
            return DiskFullError(_at(doing, where))
        if error.errno == errno.EROFS and path is not None:
            return _read_only(doing, path, data_dir)
    code = sqlite_code(error)
    if code is not None:
        return _from_sqlite(code, error, doing=doing, where=where, path=path, data_dir=data_dir)
    if isinstance(error, sqlite3.Error):  # no result code (an API misuse, a closed connection)
        return _generic(doing, where, error)
    state = sqlstate(error)
    if state is not None or _is_psycopg(error):
        return _from_postgres(state, error, doing=doing, where=where)
    return _generic(doing, where, error)


def _from_sqlite(code: int, error: BaseException, *, doing: str, where: str, path: Path | None,
                 data_dir: Path | None) -> PaperbotError:
    if code == sqlite3.SQLITE_FULL:
        return DiskFullError(_at(doing, where))
    if code == sqlite3.SQLITE_IOERR and path is not None:
        free = free_bytes(path)
        if free is not None and free < LOW_SPACE:  # all SQLite says when it cannot grow its -shm file
            return DiskFullError(_at(doing, where))
    if code == sqlite3.SQLITE_READONLY and path is not None:
        return _read_only(doing, path, data_dir)
    if code in _SQLITE_BUSY:
        return BusyError(f"Cannot {doing}: another process holds the database {where} locked; nothing was changed.",
                         hint="Retry in a moment.")
    if code in _SQLITE_DAMAGED:
        return DatabaseDamagedError(doing, where=where)
    return _generic(doing, where, error)


def _from_postgres(state: str | None, error: BaseException, *, doing: str, where: str) -> PaperbotError:
    if state == "53100" or (state in (None, "XX000") and _SERVER_OUT_OF_SPACE in str(error)):
        # the second: a server whose disk is full may refuse a new connection ("could not write init
        # file: No space left on device"), which libpq reports without a code or as an internal error
        return DiskFullError(_at(doing, where), disk="the database server's disk")
    if state == "25006":
        failure = DataDirReadOnlyError(doing, data_dir=where, reason="the server accepts no writes")
        failure.hint = "Point PAPERBOT_DATABASE_URL at the primary server, not a read-only standby."
        return failure
    if state in _PG_BUSY:
        return BusyError(f"Cannot {doing}: another connection holds the rows or locks it needs in {where}; "
                         "nothing was changed.", hint="Retry in a moment.")
    if state in _PG_DAMAGED:
        return DatabaseDamagedError(doing, where=where)
    if state == "3D000":
        return ConfigError(f"Cannot {doing}: the database {where} does not exist.",
                           hint="Create it (createdb, docs/postgres.md) or fix PAPERBOT_DATABASE_URL.")
    if state is not None and state.startswith("28"):
        return ConfigError(f"Cannot {doing}: the server refused the credentials for {where}.",
                           hint="Fix the user or password in PAPERBOT_DATABASE_URL.")
    if state is None or state[:2] in _PG_UNREACHABLE_CLASSES:  # libpq gives a refused connection no code
        return StorageError(f"Cannot {doing}: no connection to the database {where} ({_first_line(error)}).",
                            hint="Check that the server is running and that PAPERBOT_DATABASE_URL names an "
                                 "existing database and a user it accepts.")
    return _generic(doing, where, error)


_SERVER_OUT_OF_SPACE = "No space left on device"  # the server's strerror(ENOSPC)


def _read_only(doing: str, path: Path, data_dir: Path | None) -> DataDirReadOnlyError:
    reason = unwritable(path) or "SQLite opened it read-only"
    return DataDirReadOnlyError(doing, data_dir=str(data_dir or path.parent), reason=reason)


def _at(doing: str, where: str) -> str:
    """``doing`` with the database named after it, unless it names it already."""
    return doing if where in doing else f"{doing} ({where})"


def _generic(doing: str, where: str, error: BaseException) -> StorageError:
    return StorageError(f"Cannot {_at(doing, where)}: {_first_line(error)}.",
                        hint="Check free disk space and permissions of PAPERBOT_DATA_DIR, or the database server.")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0].rstrip(".") if text else type(error).__name__


def _is_psycopg(error: BaseException) -> bool:
    return type(error).__module__.split(".")[0] == "psycopg"
