"""Claims of follow alerts, so that each (follow, paper) is posted by one replica.

Revision ID: 0007_follow_claims
Revises: 0006_record_changes

``follow_claims``: the (follow, paper) pairs a replica of ``paperbot serve`` is posting now, with
its name and the wall clock until which its claim holds (``retrieval.alerts.claims``). A row lives
from the claim until the post is recorded in ``follow_announced`` or given up; one left by a
replica that stopped is taken over once its lease has run out. Nothing is copied: the table
starts empty.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_follow_claims"
down_revision = "0006_record_changes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "follow_claims",
        sa.Column("follow_id", sa.Integer, sa.ForeignKey("follows.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("paper_id", sa.Text, primary_key=True),
        sa.Column("replica", sa.Text, nullable=False),
        sa.Column("claimed_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("follow_claims")
