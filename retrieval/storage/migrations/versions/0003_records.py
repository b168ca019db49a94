"""The record store's tables; a data dir's records.sqlite3 upgraded in place or imported.

Revision ID: 0003_records
Revises: 0002_slack_state

On SQLite the database of a data dir is its ``records.sqlite3``: a file the record store made
before the database already holds these tables. It is upgraded in place, in the upgrade's
transaction: the positional migrations it still lacks run (``storage.legacy_records``), its
tables are set aside, made anew as below and their rows copied back, so that every database has
the same table definitions. Anywhere else the tables are created, and a ``records.sqlite3`` in
the data dir is imported row for row (``legacy_rows``), the file left as it was.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import context, op

revision = "0003_records"
down_revision = "0002_slack_state"
branch_labels = None
depends_on = None

ID = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")


def _partial_index(name: str, column: str) -> None:
    """An index of the rows where ``column`` is set (both backends support the ``WHERE``)."""
    where = sa.text(f"{column} IS NOT NULL")
    op.create_index(name, "papers", [column], sqlite_where=where, postgresql_where=where)


def upgrade() -> None:
    bind = op.get_bind()
    in_place = bind.dialect.name == "sqlite" and sa.inspect(bind).has_table("papers")
    legacy = bind.connection.driver_connection if in_place else None  # the sqlite3 connection
    if legacy is not None:
        from retrieval.storage.legacy_records import bring_up_to_date, set_aside

        bring_up_to_date(legacy)
        set_aside(legacy)
    papers = op.create_table(
        "papers",
        sa.Column("id", ID, primary_key=True),
        sa.Column("doi", sa.Text),
        sa.Column("arxiv_id", sa.Text),
        sa.Column("openalex_id", sa.Text),
        sa.Column("fingerprint", sa.Text, nullable=False),
        sa.Column("title_key", sa.Text, nullable=False),
        sa.Column("year", sa.Integer),
        sa.Column("venue_key", sa.Text),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.Column("embedding_hash", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.Column("record", sa.Text, nullable=False),
    )
    _partial_index("papers_doi", "doi")
    _partial_index("papers_arxiv", "arxiv_id")
    _partial_index("papers_openalex", "openalex_id")
    op.create_index("papers_fingerprint", "papers", ["fingerprint"])
    op.create_index("papers_title_key", "papers", ["title_key"])
    op.create_index("papers_year", "papers", ["year"])
    variants = op.create_table(
        "title_variants",
        sa.Column("paper_id", ID, sa.ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("key", sa.Text, primary_key=True),
    )
    op.create_index("title_variants_key", "title_variants", ["key"])
    names = op.create_table(
        "author_names",
        sa.Column("paper_id", ID, sa.ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("family", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("author_key", sa.Text, nullable=False),
    )
    op.create_index("author_names_family", "author_names", ["family"])
    op.create_index("author_names_key", "author_names", ["author_key"])
    meta = op.create_table(
        "meta",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    moves = op.create_table(
        "vector_moves",
        sa.Column("old_id", ID, primary_key=True),
        sa.Column("new_id", ID, nullable=False),
        sa.Column("old_embedding_hash", sa.Text, nullable=False),
    )
    if legacy is not None:
        from retrieval.storage.legacy_records import take_back

        take_back(legacy)
        return
    data_dir = context.config.attributes.get("data_dir")
    if data_dir is None:
        return
    from retrieval.storage.legacy_records import RECORDS_FILE, legacy_rows

    legacy = Path(data_dir) / RECORDS_FILE
    database = bind.engine.url.database if bind.dialect.name == "sqlite" else None
    if not legacy.is_file() or (database and Path(database).resolve() == legacy.resolve()):
        return
    rows = legacy_rows(legacy)
    for table in (papers, variants, names, meta, moves):
        if rows[table.name]:
            op.bulk_insert(table, rows[table.name])


def downgrade() -> None:
    for table in ("vector_moves", "meta", "author_names", "title_variants", "papers"):
        op.drop_table(table)
