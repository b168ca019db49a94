"""Following jobs: their progress, and the Slack message that shows a job started from Slack.

Revision ID: 0008_job_followers
Revises: 0007_follow_claims

``job_progress``: a running job's ``done`` of ``total`` (a sync: scholars synced of the roster),
written by the worker that runs it, read by whoever follows the job. ``slack_jobs``: for a job
started with ``/paperbot sync``, the Slack message that shows its progress and outcome, who
started it and which ``paperbot serve`` replica follows it; when that replica stops, another
finishes the message (``bot/slack/sync_jobs.py``). Both tables on both backends (unused on SQLite,
where jobs run in the process that asks for them).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_job_followers"
down_revision = "0007_follow_claims"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_progress",
        sa.Column("job_id", sa.BigInteger, primary_key=True),
        sa.Column("done", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
    )
    op.create_table(
        "slack_jobs",
        sa.Column("job_id", sa.BigInteger, primary_key=True),
        sa.Column("channel", sa.Text, nullable=False),
        sa.Column("message_ts", sa.Text, nullable=False),
        sa.Column("thread_ts", sa.Text),
        sa.Column("requested_by", sa.Text, nullable=False),
        sa.Column("replica", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("finished_at", sa.Text),
    )


def downgrade() -> None:
    op.drop_table("slack_jobs")
    op.drop_table("job_progress")
