"""Upgrading the database schema with Alembic, one process at a time.

``upgrade(database)`` brings a database to ``schema.HEAD`` through Alembic's public API
(``alembic.command.upgrade`` on a ``Config`` whose script location is
``retrieval.storage:migrations``). The whole upgrade is one transaction on one connection,
taken under the migration lock first:

* SQLite: ``BEGIN IMMEDIATE`` (the file's write lock; another process waits for it);
* PostgreSQL: ``pg_advisory_xact_lock(MIGRATION)`` (released by the commit).

Under the lock the stored revision is read again, so of two processes starting together the
second finds the schema current and changes nothing. A revision that fails rolls back every
revision of that upgrade (both backends' schema changes are transactional); the error is a typed
one (``storage.driver_errors``), or the revision's own ``StorageError`` (a damaged legacy file).
A stored revision this code does not know (a newer paperbot wrote it) is refused, never "upgraded".
A damaged ``roster.json`` of a data dir made before the database does not stop the upgrade: once it
is committed, the file is set aside (``legacy.set_aside``) and ``notice`` (else the log, as a
warning) is told what happened and what to do next.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from retrieval.config import Settings
from retrieval.errors import StorageError
from retrieval.storage.database import MIGRATION, Database, SchemaStatus, database_url, schema_status, stored_revision
from retrieval.storage.legacy import set_aside, set_aside_notice

log = logging.getLogger(__name__)

SCRIPT_LOCATION = "retrieval.storage:migrations"


def alembic_config(connection: Connection | None = None, *, data_dir: str | None = None) -> Config:
    """An Alembic ``Config`` for the package's migrations, running on ``connection``."""
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    config.attributes["data_dir"] = data_dir
    return config


def head() -> str:
    """The newest revision among the package's migrations (Alembic's own reading of them)."""
    found = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert found is not None, "no revision in retrieval/storage/migrations/versions"
    return found


def known_revisions() -> list[str]:
    """Every revision of the package's migrations, oldest first."""
    scripts = ScriptDirectory.from_config(alembic_config())
    return [script.revision for script in reversed(list(scripts.walk_revisions()))]


def upgrade(database: Database, *, notice: Callable[[str], None] | None = None,
            warning: Callable[[str], None] | None = None) -> bool:
    """Bring ``database`` to the newest revision under the migration lock (module docstring).

    ``notice`` is told, with the lock held, which revision is upgraded to which, before anything
    changes; ``warning`` (else ``notice``, else the log) what the user must act on after it (a
    damaged roster set aside). Returns False when the schema was current already (nothing was done).
    """
    doing = f"upgrade the database schema of {database.where}"
    if database.path is not None:
        try:
            database.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise database.error(exc, doing) from exc
    with database.writing(doing) as connection:
        if database.backend == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION})
        current = stored_revision(connection)
        target = head()
        if current == target:
            return False
        if current is not None and current not in known_revisions():
            raise StorageError(f"The database {database.where} has schema revision {current}, which this paperbot "
                               "does not know (a newer paperbot upgraded it); nothing was changed.",
                               hint="Upgrade paperbot to the version that wrote it.")
        if notice is not None:
            notice(f"Upgrading the database {database.where} from schema {current or '(none)'} to {target}.")
        config = alembic_config(connection, data_dir=str(database.data_dir))
        try:
            command.upgrade(config, target)
        except DBAPIError as exc:
            raise database.error(exc, doing) from exc
    for damaged in config.attributes.get("damaged", []):  # committed: the file is no longer needed in place
        (warning or notice or log.warning)(set_aside_notice(damaged, set_aside(damaged)))
    return True


def upgrade_database(settings: Settings, *, notice: Callable[[str], None] | None = None) -> tuple[SchemaStatus, SchemaStatus]:
    """``paperbot db upgrade``: the database of these settings before and after ``upgrade``."""
    before = schema_status(settings)
    database = Database(database_url(settings), data_dir=settings.data_dir)
    try:
        upgrade(database, notice=notice)
    finally:
        database.dispose()
    return before, schema_status(settings)
