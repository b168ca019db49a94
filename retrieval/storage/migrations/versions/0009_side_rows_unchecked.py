"""A record's side rows are deleted with it by the record store, not by a foreign key.

Revision ID: 0009_side_rows_unchecked
Revises: 0008_job_followers

``title_variants`` and ``author_names`` lose their foreign key to ``papers`` (``ON DELETE
CASCADE``). The record store writes and deletes a record's side rows in the same transaction as
the record (``RecordStore.write`` through ``records.delete_records``), so the key only made the
server check every side row as it was written: about ten author-name rows per record, the largest
single cost of an ingest on PostgreSQL (docs/performance.md, "The record store"). Nothing else
changes; no row is copied or rewritten on PostgreSQL (the constraint is dropped in place). SQLite
cannot drop a constraint, so there both tables are rebuilt without it (alembic's batch mode: a
copy of the table, its indexes made again; how long that takes is in docs/performance.md, "The
record store").

Downgrading deletes side rows whose record is gone (none, unless something other than the record
store deleted records), then gives the key back.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import inspect, text

revision = "0009_side_rows_unchecked"
down_revision = "0008_job_followers"
branch_labels = None
depends_on = None

SIDE_TABLES = ("title_variants", "author_names")
# how the unnamed key of a SQLite table is named while batch mode rebuilds it (alembic's
# documented way to drop an unnamed constraint)
SQLITE_NAMING = {"fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s"}


def _sqlite_key(table: str) -> str:
    return f"fk_{table}_paper_id_papers"


def upgrade() -> None:
    bind = op.get_bind()
    for table in SIDE_TABLES:
        if bind.dialect.name == "sqlite":
            with op.batch_alter_table(table, recreate="always", naming_convention=SQLITE_NAMING) as batch:
                batch.drop_constraint(_sqlite_key(table), type_="foreignkey")
            continue
        for key in inspect(bind).get_foreign_keys(table):
            if key["referred_table"] == "papers" and key["name"]:
                op.drop_constraint(key["name"], table, type_="foreignkey")


def downgrade() -> None:
    bind = op.get_bind()
    for table in SIDE_TABLES:
        op.execute(text(f"DELETE FROM {table} WHERE paper_id NOT IN (SELECT id FROM papers)"))
        if bind.dialect.name == "sqlite":
            with op.batch_alter_table(table, recreate="always", naming_convention=SQLITE_NAMING) as batch:
                batch.create_foreign_key(_sqlite_key(table), "papers", ["paper_id"], ["id"], ondelete="CASCADE")
            continue
        op.create_foreign_key(f"{table}_paper_id_fkey", table, "papers", ["paper_id"], ["id"], ondelete="CASCADE")
