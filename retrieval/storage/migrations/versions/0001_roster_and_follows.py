"""The roster and the follows, as tables; a data dir's roster.json and follows.sqlite3 imported.

Revision ID: 0001_roster_and_follows
Revises: (none: the first revision)

The import (``storage.legacy``) copies every scholar in file order and every follow, inbox entry
and announcement with its id, then moves PostgreSQL's id sequence past the imported ids. The two
files stay where they were. A damaged ``roster.json`` imports no scholar and does not stop the
upgrade: it is listed in the config's ``damaged`` attribute, and ``storage.migrate.upgrade`` sets
it aside after the commit.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import context, op

revision = "0001_roster_and_follows"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    scholars = op.create_table(
        "scholars",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("orcid", sa.Text),
        sa.Column("openalex_id", sa.Text),
        sa.Column("arxiv_name", sa.Text),
        sa.Column("aliases", sa.JSON, nullable=False),
        sa.Column("added_at", sa.Text, nullable=False),
        sa.Column("last_synced", sa.JSON, nullable=False),
    )
    follows = op.create_table(
        "follows",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("channel", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, sa.CheckConstraint("kind IN ('scholar', 'topic')", name="follows_kind"),
                  nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("query_key", sa.Text, nullable=False),
        sa.Column("created_by", sa.Text),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.UniqueConstraint("channel", "kind", "query_key", name="follows_channel_kind_query_key"),
    )
    inbox = op.create_table(
        "follow_inbox",
        sa.Column("paper_id", sa.Text, primary_key=True),
        sa.Column("noted_at", sa.Text, nullable=False),
    )
    announced = op.create_table(
        "follow_announced",
        sa.Column("follow_id", sa.Integer, sa.ForeignKey("follows.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("paper_id", sa.Text, primary_key=True),
        sa.Column("announced_at", sa.Text, nullable=False),
    )
    data_dir = context.config.attributes.get("data_dir")
    if data_dir is None:
        return
    from retrieval.storage.legacy import DamagedRoster, follows_rows, roster_rows

    try:
        rows = roster_rows(Path(data_dir))
    except DamagedRoster as damaged:  # imported as nothing; set aside once the upgrade is committed
        context.config.attributes.setdefault("damaged", []).append(damaged)
        rows = []
    if rows:
        fields = ("name", "orcid", "openalex_id", "arxiv_name", "aliases", "added_at", "last_synced")
        op.bulk_insert(scholars, [{key: row[key] for key in fields} for row in rows])
    tables = follows_rows(Path(data_dir))
    for table in (follows, inbox, announced):
        if tables[table.name]:
            op.bulk_insert(table, tables[table.name])
    if tables["follows"] and op.get_bind().dialect.name == "postgresql":
        op.execute("SELECT setval(pg_get_serial_sequence('follows', 'id'), (SELECT MAX(id) FROM follows))")


def downgrade() -> None:
    for table in ("follow_announced", "follow_inbox", "follows", "scholars"):
        op.drop_table(table)
