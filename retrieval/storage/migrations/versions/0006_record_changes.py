"""The record store's change feed: a change sequence on every record, and the removed ids.

Revision ID: 0006_record_changes
Revises: 0003_records

``papers.change_seq`` is the write ``generation`` of the transaction that last stored the record;
``record_removals`` lists each removed id (until it is stored again) with the generation that
removed it; ``meta.change_feed`` names this database's feed (a random id), so that an index
derived from another database never reads this one's sequence as its own
(``storage.records.RecordStore.changes_since``).

Records stored before this revision get the store's current generation: an index built at an
older generation then re-reads them all once, one built at this generation none.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0006_record_changes"
down_revision = "0005_job_queue"
branch_labels = None
depends_on = None

ID = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
FEED_KEY = "change_feed"  # as storage.records.FEED_KEY


def upgrade() -> None:
    bind = op.get_bind()
    # nullable: SQLite adds a NOT NULL column only with a default, and a default would file a
    # record that a writer forgot to number as older than every reader's position
    op.add_column("papers", sa.Column("change_seq", sa.BigInteger, nullable=True))
    meta = sa.table("meta", sa.column("key", sa.Text), sa.column("value", sa.Text))
    generation = bind.execute(sa.select(meta.c.value).where(meta.c.key == "generation")).scalar()
    papers = sa.table("papers", sa.column("change_seq", sa.BigInteger))
    bind.execute(sa.update(papers).values(change_seq=int(generation or 0)))
    op.create_index("papers_change_seq", "papers", ["change_seq"])
    op.create_table(
        "record_removals",
        sa.Column("paper_id", ID, primary_key=True),
        sa.Column("change_seq", sa.BigInteger, nullable=False),
    )
    op.create_index("record_removals_change_seq", "record_removals", ["change_seq"])
    bind.execute(sa.insert(meta).values(key=FEED_KEY, value=uuid.uuid4().hex))


def downgrade() -> None:
    op.execute(sa.text(f"DELETE FROM meta WHERE key = '{FEED_KEY}'"))
    op.drop_table("record_removals")
    op.drop_index("papers_change_seq", table_name="papers")
    op.execute(sa.text("ALTER TABLE papers DROP COLUMN change_seq"))  # SQLite 3.35+ too, without a table copy
