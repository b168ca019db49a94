"""The job queue: the queue library's schema on PostgreSQL, and paperbot's job tables.

Revision ID: 0005_job_queue
Revises: 0003_records

On PostgreSQL the schema of procrastinate (the queue library, ``retrieval.jobs``) is created
from its public ``SchemaManager.get_schema()`` in the upgrade's transaction: its tables
(``procrastinate_jobs``, ``procrastinate_workers``, ``procrastinate_periodic_defers``,
``procrastinate_events``), types and functions. SQLite gets none of it: without a server the
jobs run in the process that asks for them. On both backends the three job tables of
``storage.schema`` are created (empty and unused on SQLite).

A later procrastinate release that changes its schema ships SQL migrations
(``SchemaManager.get_migrations_path()``); they go in a revision of their own.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_job_queue"
down_revision = "0004_delivery_claims"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_parts",
        sa.Column("ingest_id", sa.Text, primary_key=True),
        sa.Column("part", sa.Integer, primary_key=True),
        sa.Column("parts", sa.Integer, nullable=False),
        sa.Column("records", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("done_at", sa.Text),
        sa.Column("report", sa.JSON),
    )
    op.create_table(
        "job_results",
        sa.Column("job_id", sa.BigInteger, primary_key=True),
        sa.Column("task", sa.Text, nullable=False),
        sa.Column("result", sa.JSON, nullable=False),
        sa.Column("finished_at", sa.Text, nullable=False),
    )
    op.create_table(
        "job_workers",
        sa.Column("worker_id", sa.BigInteger, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("concurrency", sa.Integer, nullable=False),
        sa.Column("started_at", sa.Text, nullable=False),
    )
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    try:
        from procrastinate.schema import SchemaManager
    except ModuleNotFoundError:
        from retrieval.errors import ConfigError

        raise ConfigError("This PostgreSQL database needs the job queue's library, procrastinate, which is not "
                          "installed; nothing was changed.", hint="pip install 'paperbot[postgres]'") from None

    # psycopg runs a parameterless text of many statements as it is (no placeholders to expand),
    # on the upgrade's own connection, inside its transaction
    driver = bind.connection.driver_connection
    assert driver is not None  # an open connection's psycopg connection
    driver.execute(SchemaManager.get_schema())


def downgrade() -> None:
    op.drop_table("job_workers")
    op.drop_table("job_results")
    op.drop_table("job_parts")
