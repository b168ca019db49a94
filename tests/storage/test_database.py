"""retrieval.storage.database and driver_errors: the URL, SQLite's pragmas, the writer lock, and
driver failures as typed errors, on SQLite and on a real PostgreSQL (``database_url``)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr
from sqlalchemy import Column, Integer, MetaData, Table, insert, select, text, update

from retrieval.config import Settings
from retrieval.errors import (
    BusyError,
    ConfigError,
    DatabaseDamagedError,
    DataDirReadOnlyError,
    DiskFullError,
    StorageError,
)
from retrieval.storage.database import Database, close_databases, database_url, open_database
from retrieval.storage.driver_errors import storage_error
from retrieval.storage.schema import HEAD
from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[2]
counter = Table("counter", MetaData(), Column("id", Integer, primary_key=True), Column("n", Integer, nullable=False))



@pytest.fixture
def database(settings: Settings) -> Iterator[Database]:
    database = open_database(settings)
    with database.writing("make the test table") as connection:
        counter.create(connection)
        connection.execute(insert(counter).values(id=1, n=0))
    yield database


# --- the URL -----------------------------------------------------------------------------------


def test_the_default_is_sqlite_in_the_data_dir_and_postgresql_means_psycopg(tmp_path: Path) -> None:
    default = database_url(Settings(_env_file=None, data_dir=tmp_path))
    assert default.drivername == "sqlite+pysqlite" and default.database == str(tmp_path / "records.sqlite3")
    server = Settings(_env_file=None, data_dir=tmp_path, database_url="postgresql://bot:s3cret@db.example.org/papers")
    url = database_url(server)
    assert url.drivername == "postgresql+psycopg" and url.password == "s3cret"
    assert "s3cret" not in Database(url, data_dir=tmp_path).where and "s3cret" not in repr(server)
    assert isinstance(server.database_url, SecretStr)
    assert database_url(Settings(_env_file=None, data_dir=tmp_path, database_url="  ")) == default
    elsewhere = database_url(Settings(_env_file=None, data_dir=tmp_path, database_url=f"sqlite:///{tmp_path}/other.db"))
    assert elsewhere.drivername == "sqlite+pysqlite" and elsewhere.database == f"{tmp_path}/other.db"


@pytest.mark.parametrize("url", ["mysql://bot@db/papers", "postgresql+psycopg2://bot@db/papers", "sqlite://",
                                 "sqlite:///:memory:", "not a url"])
def test_an_unsupported_url_is_a_config_error_naming_the_variable(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError, match="PAPERBOT_DATABASE_URL"):
        database_url(Settings(_env_file=None, data_dir=tmp_path, database_url=url))


def test_sqlite_connections_get_their_pragmas(tmp_path: Path) -> None:
    database = open_database(Settings(_env_file=None, data_dir=tmp_path / "data"))
    try:
        with database.reading() as connection:
            pragmas = {name: connection.exec_driver_sql(f"PRAGMA {name}").scalar()
                       for name in ("journal_mode", "foreign_keys", "busy_timeout", "synchronous")}
    finally:
        close_databases()
    assert pragmas == {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 30_000, "synchronous": 1}


def test_two_upgraders_of_a_new_sqlite_file_both_get_through(tmp_path: Path) -> None:
    """Two connections switching a new file to WAL at once escalate their locks together, and
    SQLite answers one of them SQLITE_BUSY at once (no busy wait): before the switch was retried,
    one of two processes starting together failed so in 5 of 40 pairs. 30 pairs here."""
    from retrieval.storage.migrate import upgrade

    errors: list[BaseException] = []
    for attempt in range(30):
        settings = Settings(_env_file=None, data_dir=tmp_path / f"data-{attempt}")
        start = threading.Barrier(2)

        def upgrader(settings: Settings = settings, start: threading.Barrier = start) -> None:
            database = Database(database_url(settings), data_dir=settings.data_dir)
            try:
                start.wait(10)
                upgrade(database)
            except BaseException as exc:  # reported below
                errors.append(exc)
            finally:
                database.dispose()

        threads = [threading.Thread(target=upgrader) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []


# --- transactions ------------------------------------------------------------------------------


def _count(database: Database) -> int:
    with database.reading() as connection:
        return int(connection.execute(select(counter.c.n)).scalar_one())


def test_a_write_that_raises_is_rolled_back(database: Database) -> None:
    with pytest.raises(KeyError), database.writing("count") as connection:
        connection.execute(update(counter).values(n=counter.c.n + 1))
        raise KeyError("the caller's own error, unchanged")
    assert _count(database) == 0


def test_writers_are_serialised_so_a_read_then_write_loses_nothing(settings: Settings, database: Database) -> None:
    """Writer A reads, then waits (at most 1 s) for writer B to read too: under the lock B cannot
    read before A commits, so B reads 1 and the count ends at 2. Without the lock B would read 0
    (PostgreSQL: a lost update) or fail to upgrade its read lock (SQLite: busy)."""
    other = Database(database_url(settings), data_dir=settings.data_dir)  # as another process would
    a_in, b_read = threading.Event(), threading.Event()
    seen: dict[str, int] = {}
    errors: list[BaseException] = []

    def writer(name: str, db: Database) -> None:
        try:
            if name == "B":
                a_in.wait(10)
            with db.writing("count") as connection:
                seen[name] = connection.execute(select(counter.c.n)).scalar_one()
                if name == "A":
                    a_in.set()
                    b_read.wait(1)
                else:
                    b_read.set()
                connection.execute(update(counter).values(n=seen[name] + 1))
        except BaseException as exc:
            errors.append(exc)
            a_in.set()
            b_read.set()

    threads = [threading.Thread(target=writer, args=("A", database)), threading.Thread(target=writer, args=("B", other))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    other.dispose()
    assert errors == []
    assert seen == {"A": 0, "B": 1} and _count(database) == 2


# --- driver failures as typed errors -----------------------------------------------------------


def test_sqlite_disk_full_is_a_disk_full_error(tmp_path: Path) -> None:
    database = open_database(Settings(_env_file=None, data_dir=tmp_path / "data"))
    with database.writing("make the test table") as connection:
        counter.create(connection)
        connection.execute(insert(counter).values(id=1, n=0))
    with pytest.raises(DiskFullError, match=r"^Cannot count \(.*records\.sqlite3\): the disk is full"), \
            database.writing("count") as connection:
        pages = connection.exec_driver_sql("PRAGMA page_count").scalar()
        connection.exec_driver_sql(f"PRAGMA max_page_count = {pages}")  # SQLite's own SQLITE_FULL past it
        connection.execute(insert(counter), [{"id": n, "n": n} for n in range(2, 5000)])
    assert _count(database) == 0
    close_databases()


def test_a_damaged_sqlite_file_is_a_damaged_database_error(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "records.sqlite3").write_bytes(b"this was never a database " * 200)
    try:
        with pytest.raises(DatabaseDamagedError, match=r"records\.sqlite3 is damaged; nothing was changed"):
            open_database(Settings(_env_file=None, data_dir=data_dir))
    finally:
        close_databases()


def test_sqlite_failures_map_by_result_code(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (n)")
    holder.execute("BEGIN IMMEDIATE")
    waiter = sqlite3.connect(path, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError) as busy:
        waiter.execute("BEGIN IMMEDIATE")
    holder.execute("ROLLBACK")
    reader = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as read_only:
        reader.execute("INSERT INTO t VALUES (1)")
    for connection in (holder, waiter, reader):
        connection.close()
    assert isinstance(storage_error(busy.value, doing="count", where=str(path), path=path), BusyError)
    refused = storage_error(read_only.value, doing="count", where=str(path), path=path)
    assert isinstance(refused, DataDirReadOnlyError) and refused.data_dir == str(tmp_path)
    full = storage_error(OSError(28, "No space left on device"), doing="count", where=str(path), path=path)
    assert isinstance(full, DiskFullError)


def test_a_read_only_data_dir_refuses_writes_before_trying(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("retrieval.storage.database.unwritable", lambda path: "a read-only file system")
    database = open_database(Settings(_env_file=None, data_dir=tmp_path / "data"))
    try:
        assert database.read_only == "a read-only file system" and database.revision() is None
        with pytest.raises(DataDirReadOnlyError, match=r"^Cannot count: the data dir .* is read-only"):
            with database.writing("count"):
                pytest.fail("a write began")
    finally:
        close_databases()
    assert not (tmp_path / "data").exists()


@pytest.mark.postgres
@pytest.mark.parametrize(("code", "expected"), [
    ("disk_full", DiskFullError),
    ("read_only_sql_transaction", DataDirReadOnlyError),
    ("lock_not_available", BusyError),
    ("deadlock_detected", BusyError),
    ("serialization_failure", BusyError),
    ("data_corrupted", DatabaseDamagedError),
    ("index_corrupted", DatabaseDamagedError),
    ("undefined_table", StorageError),
])
def test_postgresql_failures_map_by_sqlstate_not_text(tmp_path: Path, postgres_server, code: str,
                                                      expected: type[StorageError]) -> None:
    url = postgres_server.new_database()
    database = Database(database_url(Settings(_env_file=None, data_dir=tmp_path, database_url=url)), data_dir=tmp_path)
    try:
        with pytest.raises(StorageError) as raised, database.writing("count") as connection:
            # the server raises it, with a message that says something else entirely
            connection.execute(text(f"DO $$ BEGIN RAISE EXCEPTION 'database or disk is full' USING ERRCODE = '{code}'; END $$"))
    finally:
        database.dispose()
        postgres_server.drop_database(url)
    assert type(raised.value) is expected
    assert "127.0.0.1" in raised.value.user_message


@pytest.mark.postgres
def test_postgresql_missing_database_and_no_server(tmp_path: Path, postgres_server) -> None:
    """libpq gives a failed connection no SQLSTATE: one StorageError, quoting what the server said."""
    missing = Settings(_env_file=None, data_dir=tmp_path, database_url=postgres_server.url("no_such_database"))
    with pytest.raises(StorageError, match=r"^Cannot read .*: no connection to the database .*no_such_database") as no_db:
        Database(database_url(missing), data_dir=tmp_path).revision()
    assert "does not exist" in no_db.value.user_message and "PAPERBOT_DATABASE_URL" in (no_db.value.hint or "")
    with socket_bound() as port:  # a port where nothing answers
        gone = Settings(_env_file=None, data_dir=tmp_path, database_url=f"postgresql://bot@127.0.0.1:{port}/papers")
        with pytest.raises(StorageError, match=r"no connection to the database") as refused:
            Database(database_url(gone), data_dir=tmp_path).revision()
    assert "refused" in refused.value.user_message


class socket_bound:
    """A port on 127.0.0.1 that is bound but never listened on: connections are refused."""

    def __enter__(self) -> int:
        import socket

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        return int(self._socket.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self._socket.close()


# --- what opening costs ------------------------------------------------------------------------


def test_opening_a_current_database_imports_no_alembic(settings: Settings) -> None:
    open_database(settings)  # created and upgraded here
    close_databases()
    code = textwrap.dedent(f"""
        import json, sys
        from retrieval.config import Settings
        from retrieval.storage.database import open_database
        database = open_database(Settings(_env_file=None, data_dir={str(settings.data_dir)!r},
                                          database_url={settings.database_url.get_secret_value() if settings.database_url else None!r}))
        print(json.dumps([database.revision(), sorted(m for m in sys.modules if m.split(".")[0] == "alembic")]))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=patience(120),
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [HEAD, []]


def test_a_server_refusing_a_connection_for_want_of_disk_space_is_a_full_disk_not_an_outage() -> None:
    import psycopg

    refused_for_space = psycopg.OperationalError(
        'connection failed: connection to server at "127.0.0.1", port 5432 failed: FATAL:  could not write init '
        "file: No space left on device")
    full = storage_error(refused_for_space, doing="count", where="postgresql://db/paperbot")
    assert isinstance(full, DiskFullError) and "the database server's disk" in full.user_message
    down = storage_error(psycopg.OperationalError('connection to server at "127.0.0.1", port 5432 failed: '
                                                  "Connection refused"), doing="count", where="postgresql://db/p")
    assert not isinstance(down, DiskFullError) and "no connection to the database" in down.user_message
