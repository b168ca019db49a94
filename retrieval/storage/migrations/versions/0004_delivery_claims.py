"""Delivery claims of Slack events and the heartbeat table of the replicas sharing the database.

Revision ID: 0004_delivery_claims
Revises: 0003_records

``slack_claims``: which replica answers which event, with the event's payload (so another replica
can answer it when the first stops) and a done mark (``bot/slack/deliveries.py``).
``cluster_members``: each running replica and its last heartbeat (``storage.members``).
Nothing is copied: the tables start empty, and ``slack_deliveries`` keeps the keys already handled.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_delivery_claims"
down_revision = "0003_records"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "slack_claims",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("replica", sa.Text),
        sa.Column("event_key", sa.Text),
        sa.Column("payload", sa.Text),
        sa.Column("reply_ts", sa.Text),
        sa.Column("claimed_at", sa.Float, nullable=False),
        sa.Column("done_at", sa.Float),
        sa.Column("takeovers", sa.Integer, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("slack_claims_expiry", "slack_claims", ["expires_at"])
    op.create_index("slack_claims_open", "slack_claims", ["done_at", "replica"])
    op.create_table(
        "cluster_members",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("started_at", sa.Text, nullable=False),
        sa.Column("last_seen", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("cluster_members")
    op.drop_index("slack_claims_open", "slack_claims")
    op.drop_index("slack_claims_expiry", "slack_claims")
    op.drop_table("slack_claims")
