"""Alembic's environment: migrations run only on the connection ``storage.migrate`` hands over.

``storage.migrate.upgrade`` opens the transaction (under the migration lock) and puts the
connection in ``config.attributes["connection"]``, with the data dir whose legacy files a
revision may import in ``config.attributes["data_dir"]``. Running ``alembic`` from the command
line without them is refused: ``paperbot db upgrade`` is the operators' command.
"""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("Run migrations through `paperbot db upgrade` (retrieval.storage.migrate), not alembic itself.")

# The caller's transaction is already open: Alembic runs every revision inside it (all or nothing).
context.configure(connection=connection, target_metadata=None, transaction_per_migration=False)
with context.begin_transaction():
    context.run_migrations()
