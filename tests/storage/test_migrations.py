"""retrieval.storage.migrate and the named revisions: what they build is what the code queries,
two processes starting together migrate once, and a newer schema is refused; on SQLite and on a
real PostgreSQL (``database_url``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from retrieval.config import Settings
from retrieval.errors import StorageError
from retrieval.storage import migrate
from retrieval.storage.database import Database, database_url, open_database
from retrieval.storage.schema import HEAD, described_here, metadata

VERSIONS = Path(migrate.__file__).parent / "migrations" / "versions"



def _fresh(settings: Settings) -> Database:
    """A ``Database`` of its own, as another process would have (not ``open_database``'s)."""
    return Database(database_url(settings), data_dir=settings.data_dir)


def test_head_and_the_revision_files_agree() -> None:
    revisions = migrate.known_revisions()
    assert migrate.head() == HEAD == revisions[-1]
    files = sorted(path.stem for path in VERSIONS.glob("*.py") if path.stem != "__init__")
    assert files == revisions  # each file is named by its revision id, and they sort in order
    assert all(len(revision) <= 32 for revision in revisions)  # alembic_version.version_num is VARCHAR(32)


def test_the_migrated_schema_is_the_one_the_code_queries(settings: Settings) -> None:
    database = open_database(settings)
    assert database.revision() == HEAD
    with database.reading() as connection:
        context = MigrationContext.configure(connection, opts={"include_name": described_here})
        differences = compare_metadata(context, metadata)
    assert differences == []


def test_two_processes_starting_together_migrate_once(settings: Settings) -> None:
    """Each upgrader, once it holds the lock, waits (at most 1 s) for the other to arrive there
    too: with the lock the other is still waiting for it, and finds the schema current after."""
    inside: list[str] = []
    arrived = threading.Event()
    results: dict[str, bool] = {}
    errors: list[BaseException] = []
    ready = threading.Barrier(2)

    def upgrader(name: str) -> None:
        database = _fresh(settings)

        def notice(message: str) -> None:
            inside.append(name)
            if len(inside) > 1:
                arrived.set()
            else:
                arrived.wait(1)

        try:
            ready.wait(10)
            results[name] = migrate.upgrade(database, notice=notice)
        except BaseException as exc:
            errors.append(exc)
        finally:
            database.dispose()

    threads = [threading.Thread(target=upgrader, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(inside) == 1 and sorted(results.values()) == [False, True]
    assert _fresh(settings).revision() == HEAD


def test_a_schema_from_a_newer_paperbot_is_refused_and_left_alone(settings: Settings) -> None:
    database = _fresh(settings)
    migrate.upgrade(database)
    with database.writing("pretend to be newer") as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0099_from_the_future'"))
    with pytest.raises(StorageError, match=r"schema revision 0099_from_the_future, which this paperbot does not know"):
        migrate.upgrade(database)
    assert database.revision() == "0099_from_the_future"
    database.dispose()


def test_an_upgrade_changes_nothing_when_the_schema_is_current(settings: Settings) -> None:
    database = _fresh(settings)
    assert migrate.upgrade(database) is True
    assert migrate.upgrade(database) is False
    database.dispose()
