"""The database of an installation, on SQLAlchemy Core: SQLite in the data dir, or PostgreSQL.

``PAPERBOT_DATABASE_URL`` picks it (``database_url``): unset, it is the SQLite file
``<data dir>/records.sqlite3`` (no server; the file the record store always had, upgraded in
place); ``postgresql+psycopg://user@host/dbname`` puts the same tables on a PostgreSQL server
(``docs/postgres.md``). It holds the records and their provenance, the store's metadata, the
roster, the follows and the Slack state (``storage.schema`` lists its tables); the embedding cache
keeps its own SQLite file (a cache, local to each host).

    db = open_database(settings)            # cached per process, upgraded to the code's schema
    with db.writing("change the roster") as connection:
        connection.execute(insert(...))     # committed at exit, rolled back on any exception

Contract of ``Database``:

* ``reading()``: a connection for reads (its transaction is rolled back at exit).
* ``writing(doing)``: one write transaction, serialised with every other writer of the database:
  SQLite's ``BEGIN IMMEDIATE`` (the file's write lock, waited for up to ``BUSY_TIMEOUT_MS``), or
  PostgreSQL's ``pg_advisory_xact_lock(WRITERS)``; so a read-then-write (is this name taken?
  then insert) is never interleaved with another writer. A driver failure becomes a typed error
  (``storage.driver_errors``: disk full, read-only, busy, damaged, unreachable), never a driver
  exception; any other exception propagates unchanged. A read-only SQLite data dir refuses
  before anything is tried (``DataDirReadOnlyError``).
* ``revision()``: the schema revision stored in the database (Alembic's ``alembic_version``),
  read with one query and without importing Alembic; None when the schema was never created.

SQLite connections get ``journal_mode=WAL``, ``synchronous=NORMAL``, ``foreign_keys=ON`` and a
busy timeout on connect (SQLAlchemy's ``connect`` event), and pysqlite's own implicit
transactions are turned off: the ``begin`` event emits ``BEGIN`` (``BEGIN IMMEDIATE`` for a
writer) itself, so that schema changes are transactional too and a migration is all or nothing.
A data dir this process cannot write (``config.unwritable_reason``) is opened read-only
(``storage.sqlite.open_read_only``: ``mode=ro``, or ``immutable`` when the log is empty), with no
pragma that writes.

The record store's writers pass a ``lock`` of their own (``RECORDS``), so an ingest's batches
and a roster change do not wait for each other on PostgreSQL (on SQLite the file has one write
lock); so do the Slack event claims (``CLAIMS``) and the replicas' heartbeats (``MEMBERS``), which
must not queue behind a burst of answers being saved. A WAL file on a full disk cannot be opened normally (its ``-shm`` cannot be created): a
``Database`` made with ``snapshot=True`` reads it with SQLite's ``immutable`` flag
(``storage.sqlite.open_snapshot``), for the record store to answer searches until space is back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from retrieval.config import Settings
from retrieval.errors import ConfigError, DataDirReadOnlyError, PaperbotError
from retrieval.storage.driver_errors import storage_error
from retrieval.storage.sqlite import open_read_only, open_snapshot, unwritable, use_write_ahead_log

BUSY_TIMEOUT_MS = 30_000  # how long a SQLite writer waits for another one's transaction
WRITERS = 0x70627772  # pg_advisory_xact_lock key every writer of the small stores takes ("pbwr")
MIGRATION = 0x70626D67  # pg_advisory_xact_lock key of schema upgrades ("pbmg")
RECORDS = 0x70627263  # pg_advisory_xact_lock key the record store's writers take ("pbrc")
CLAIMS = 0x7062636C  # pg_advisory_xact_lock key of the Slack event claims ("pbcl"; bot/slack/store.py)
MEMBERS = 0x70626D62  # pg_advisory_xact_lock key of the replicas' heartbeats ("pbmb"; storage.members)
_WRITE_OPTION = "paperbot_write"  # execution option: begin this transaction as a writer
_BACKENDS = {"sqlite": "sqlite+pysqlite", "postgresql": "postgresql+psycopg"}

log = logging.getLogger(__name__)


def database_url(settings: Settings) -> URL:
    """The database these settings name: ``PAPERBOT_DATABASE_URL``, else SQLite in the data dir.

    ``postgresql://`` means psycopg (version 3); another backend or driver is a ``ConfigError``.
    """
    if settings.database_url is None:
        return URL.create("sqlite+pysqlite", database=str(settings.database_path))
    try:
        url = make_url(settings.database_url.get_secret_value())
    except ArgumentError:
        raise ConfigError("Invalid setting PAPERBOT_DATABASE_URL: not a database URL.",
                          hint="e.g. postgresql+psycopg://paperbot@db.example.org/paperbot (docs/postgres.md).") from None
    backend = url.get_backend_name()
    if backend not in _BACKENDS or url.drivername not in (backend, _BACKENDS[backend]):
        raise ConfigError(f"Invalid setting PAPERBOT_DATABASE_URL: {url.drivername} is not supported.",
                          hint="Use postgresql+psycopg://... for PostgreSQL, or leave it unset for SQLite in the data dir.")
    if backend == "sqlite" and url.database in (None, "", ":memory:"):
        raise ConfigError("Invalid setting PAPERBOT_DATABASE_URL: a SQLite URL needs a file (sqlite:////path/to/file).")
    return url.set(drivername=_BACKENDS[backend])


class Database:
    """One database and its engine; safe to share between threads (each use takes a pooled connection)."""

    def __init__(self, url: URL, *, data_dir: Path, snapshot: bool = False) -> None:
        """``snapshot``: a SQLite file read with ``open_snapshot`` (a full disk; see the module
        docstring); its ``read_only`` says so and ``writing`` refuses."""
        self.url = url
        self.data_dir = data_dir
        self.backend: str = url.get_backend_name()
        self.path: Path | None = Path(url.database).resolve() if self.backend == "sqlite" and url.database else None
        self.where = str(self.path) if self.path is not None else url.render_as_string(hide_password=True)
        self.snapshot = snapshot and self.path is not None
        self.read_only: str | None = (
            "the disk is full" if self.snapshot else unwritable(self.path) if self.path is not None else None)
        self._engine: Engine | None = None
        self._engine_lock = threading.Lock()

    # --- the engine -----------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        with self._engine_lock:
            if self._engine is None:
                self._engine = self._sqlite_engine() if self.path is not None else self._server_engine()
            return self._engine

    def _sqlite_engine(self) -> Engine:
        assert self.path is not None
        path, reason = self.path, self.read_only
        if self.snapshot:
            engine = create_engine("sqlite+pysqlite://", creator=lambda: _snapshot_of(path))
        elif reason is not None:
            label = f"the database {path}"
            engine = create_engine("sqlite+pysqlite://", creator=lambda: open_read_only(
                path, label=label, data_dir=self.data_dir, reason=reason))
        else:
            engine = create_engine(URL.create("sqlite+pysqlite", database=str(path)),
                                   connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000})
        writable = reason is None

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: object) -> None:
            dbapi_connection.isolation_level = None  # no implicit BEGIN: ``_on_begin`` emits it
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                cursor.execute("PRAGMA foreign_keys = ON")
                if writable:
                    use_write_ahead_log(cursor, BUSY_TIMEOUT_MS / 1000)
                    cursor.execute("PRAGMA synchronous = NORMAL")
            finally:
                cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(connection: Connection) -> None:
            immediate = connection.get_execution_options().get(_WRITE_OPTION, False)
            connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

        return engine

    def _server_engine(self) -> Engine:
        try:
            return create_engine(self.url, pool_pre_ping=True)
        except ModuleNotFoundError as missing:
            raise ConfigError(f"PAPERBOT_DATABASE_URL names PostgreSQL, but its driver is not installed ({missing.name}).",
                              hint="pip install 'paperbot[postgres]' (psycopg 3).") from None

    def dispose(self) -> None:
        """Close every pooled connection (the engine is made again on next use)."""
        with self._engine_lock:
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None

    # --- transactions ---------------------------------------------------------------------------

    def exists(self) -> bool:
        """False for a SQLite file not created yet (nothing is created to find out); True for a server."""
        return self.path is None or self.path.exists()

    @contextmanager
    def reading(self, doing: str = "read the database") -> Iterator[Connection]:
        """A connection for reads; a driver failure becomes a typed error."""
        try:
            with self.engine.connect() as connection:
                yield connection
        except DBAPIError as exc:
            raise self.error(exc, doing) from exc

    @contextmanager
    def writing(self, doing: str, *, lock: int = WRITERS) -> Iterator[Connection]:
        """One write transaction under the database's writer lock (see the module docstring).

        ``lock`` is the PostgreSQL advisory lock taken (SQLite has one lock, its file's): a store
        whose writers must not wait for the small stores' (an ingest's long batches) names its own.
        """
        if self.read_only is not None:
            raise DataDirReadOnlyError(doing, data_dir=str(self.data_dir), reason=self.read_only)
        try:
            with self.engine.connect() as connection:
                connection.execution_options(**{_WRITE_OPTION: True})
                with connection.begin():
                    if self.backend == "postgresql":
                        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock})
                    yield connection
        except DBAPIError as exc:
            raise self.error(exc, doing) from exc
        except (OSError, self.engine.dialect.loaded_dbapi.Error) as exc:  # the driver used directly (bulk.py)
            raise self.error(exc, doing) from exc

    def error(self, exc: BaseException, doing: str) -> PaperbotError:
        """``exc`` (a driver's or SQLAlchemy's failure) as paperbot's typed error."""
        return storage_error(exc, doing=doing, where=self.where, path=self.path, data_dir=self.data_dir)

    def revision(self) -> str | None:
        """The schema revision stored in the database; None when it was never created."""
        if not self.exists():
            return None
        with self.reading("read the database's schema revision") as connection:
            return stored_revision(connection)


def _snapshot_of(path: Path) -> Any:
    """A connection of ``open_snapshot``; a file it cannot read safely is a full disk's error."""
    from retrieval.errors import DiskFullError

    connection = open_snapshot(path)
    if connection is None:
        raise DiskFullError(f"read the database {path}", where=str(path.parent))
    return connection


def stored_revision(connection: Connection) -> str | None:
    """The revision in ``alembic_version`` as seen by ``connection``; None before the first upgrade."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


@dataclass(frozen=True)
class SchemaStatus:
    """Which database these settings use and its schema revision (``paperbot doctor --json``:
    ``database``). ``revision`` is None before the first upgrade; ``head`` is this code's;
    ``set_aside`` the damaged roster files the first upgrade set aside, still in the data dir."""

    backend: str  # "sqlite" or "postgresql"
    where: str  # the SQLite file, or the server's URL without its password
    revision: str | None
    head: str
    set_aside: tuple[str, ...] = ()  # damaged roster files an upgrade set aside in the data dir (``legacy.set_aside``)
    read_only: str | None = None  # why the data dir cannot be written (never upgraded then), or None

    @property
    def current(self) -> bool:
        return self.revision == self.head

    def describe(self) -> str:
        """One line, e.g. for ``paperbot doctor``."""
        kind = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(self.backend, self.backend)
        from retrieval.storage.schema import read_as_is

        if self.current:
            state = f"schema {self.revision} (current)"
        elif self.read_only and read_as_is(self.revision):
            state = (f"schema {self.revision}, this paperbot's is {self.head}: read as it is (the data dir is read-only "
                     f"({self.read_only}), and this paperbot reads that schema unchanged)")
        elif self.read_only:
            state = (f"schema {self.revision or '(not created yet)'}, this paperbot's is {self.head}: it cannot be "
                     f"upgraded here, the data dir is read-only ({self.read_only}); point PAPERBOT_DATA_DIR at a "
                     "writable copy, which the next command upgrades")
        else:
            state = (f"schema {self.revision or '(not created yet)'}, this paperbot's is {self.head}: "
                     "upgraded on next use, or now with `paperbot db upgrade`")
        line = f"Database: {kind} {self.where}, {state}."
        for path in self.set_aside:
            line += (f"\nA damaged roster.json was set aside when the database was created: {path} (its scholars "
                     "were not imported). Fix it by hand, add its scholars again with `paperbot scholars add NAME`, "
                     "then move the file away.")
        return line


def schema_status(settings: Settings) -> SchemaStatus:
    """The database's revision as it is, read without upgrading or writing anything."""
    from retrieval.storage.legacy import set_aside_files
    from retrieval.storage.schema import HEAD

    database = Database(database_url(settings), data_dir=settings.data_dir)
    try:
        return SchemaStatus(backend=database.backend, where=database.where, revision=database.revision(), head=HEAD,
                            set_aside=tuple(str(path) for path in set_aside_files(settings.data_dir)),
                            read_only=database.read_only)
    finally:
        database.dispose()


# --- one Database per database and process -----------------------------------------------------

_OPEN: dict[tuple[str, Path], Database] = {}
_CURRENT: set[tuple[str, Path]] = set()  # checked (and upgraded if needed) in this process
_OPEN_LOCK = threading.Lock()


def open_database(settings: Settings, *, notice: Callable[[str], None] | None = None) -> Database:
    """The database of these settings, at the schema this code needs.

    Made once per process and database. The first call compares the stored revision with
    ``schema.HEAD`` (one query); only when they differ is Alembic imported and the schema
    upgraded (``storage.migrate.upgrade``, under the migration lock; ``notice`` is told, else the
    log at INFO level). A
    read-only SQLite data dir is never upgraded: its users read what is there
    (``Database.revision`` tells them whether it is current) and refuse writes.
    """
    url = database_url(settings)
    key = (url.render_as_string(hide_password=False), settings.data_dir.resolve())
    with _OPEN_LOCK:
        database = _OPEN.get(key)
        if database is None:
            database = _OPEN[key] = Database(url, data_dir=settings.data_dir)
        if key in _CURRENT or database.read_only is not None:
            return database
        ensure_current(database, notice=notice)
        _CURRENT.add(key)
        return database


def ensure_current(database: Database, *, notice: Callable[[str], None] | None = None) -> None:
    """Upgrade ``database`` to ``schema.HEAD`` when its revision differs (one query when it does
    not; Alembic is imported only to upgrade). ``notice`` is told of an upgrade, else the log (what
    the user must act on, a damaged roster set aside, as a warning)."""
    from retrieval.storage.schema import HEAD

    if database.revision() != HEAD:
        from retrieval.storage.migrate import upgrade

        upgrade(database, notice=notice or log.info, warning=notice or log.warning)


def close_databases() -> None:
    """Dispose of every engine this process made and forget them (tests; a server's shutdown)."""
    with _OPEN_LOCK:
        for database in _OPEN.values():
            database.dispose()
        _OPEN.clear()
        _CURRENT.clear()
