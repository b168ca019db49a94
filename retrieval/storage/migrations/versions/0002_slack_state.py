"""The Slack door's state as tables; a data dir's slack/state.sqlite3 imported.

Revision ID: 0002_slack_state
Revises: 0001_roster_and_follows

Answers keep their ids and their order (``seq``), votes, threads and pending deliveries are
copied as they are (``storage.legacy.slack_rows``); the file stays where it was.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import context, op

revision = "0002_slack_state"
down_revision = "0001_roster_and_follows"
branch_labels = None
depends_on = None


def upgrade() -> None:
    answers = op.create_table(
        "slack_answers",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("team", sa.Text),
        sa.Column("channel", sa.Text, nullable=False),
        sa.Column("thread_ts", sa.Text),
        sa.Column("user", sa.Text),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("answer", sa.Text, nullable=False),
        sa.Column("cited_ids", sa.JSON, nullable=False),
    )
    feedback = op.create_table(
        "slack_feedback",
        sa.Column("answer_id", sa.Text, primary_key=True),
        sa.Column("user", sa.Text, primary_key=True),
        sa.Column("vote", sa.Text, sa.CheckConstraint("vote IN ('up', 'down')", name="slack_feedback_vote"),
                  nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("answer", sa.Text, nullable=False),
        sa.Column("cited_ids", sa.JSON, nullable=False),
    )
    threads = op.create_table(
        "slack_threads",
        sa.Column("channel", sa.Text, primary_key=True),
        sa.Column("thread_ts", sa.Text, primary_key=True),
        sa.Column("created_at", sa.Text, nullable=False),
    )
    deliveries = op.create_table(
        "slack_deliveries",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("slack_deliveries_expiry", "slack_deliveries", ["expires_at"])
    data_dir = context.config.attributes.get("data_dir")
    if data_dir is None:
        return
    from retrieval.storage.legacy import slack_rows

    rows = slack_rows(Path(data_dir))
    for table in (answers, feedback, threads, deliveries):
        if rows[table.name]:
            op.bulk_insert(table, rows[table.name])


def downgrade() -> None:
    for table in ("slack_deliveries", "slack_threads", "slack_feedback", "slack_answers"):
        op.drop_table(table)
