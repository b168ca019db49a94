"""Which record each entry of a file made: the ``file_entries`` side table.

Revision ID: 0010_file_entries
Revises: 0009_side_rows_unchecked

A provenance entry read from a file names the file (``Provenance.file``, from this revision's
code on). ``file_entries`` holds one row per such entry (record id, source, the entry's key,
file), written and deleted with its record by the record store, like the other side tables. An
ingest looks a re-read file's entries up there, so that an entry whose title was corrected since
revises the record it made instead of adding a second one (``ingest.pipeline``).

Records stored before this revision name no file, so there is usually nothing to fill in; the
records whose JSON names one (a database downgraded and upgraded again) get their rows. Only those
records are decoded: the others are passed over by a text match on their JSON.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0010_file_entries"
down_revision = "0009_side_rows_unchecked"
branch_labels = None
depends_on = None

ID = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
_BATCH = 1_000  # rows per insert while filling in


def _rows_of(paper_id: str, record: str) -> list[dict[str, str]]:
    """The ``file_entries`` rows of one stored record (its JSON): one per (source, key, file)."""
    try:
        provenance = json.loads(record).get("provenance") or []
    except (ValueError, AttributeError):  # not a record: nothing of it can be filed
        return []
    rows: dict[tuple[str, str, str], dict[str, str]] = {}
    for entry in provenance:
        if isinstance(entry, dict) and all(isinstance(entry.get(name), str) and entry[name]
                                           for name in ("source", "source_id", "file")):
            rows[entry["source"], entry["source_id"], entry["file"]] = {
                "paper_id": paper_id, "source": entry["source"], "source_id": entry["source_id"], "file": entry["file"]}
    return list(rows.values())


def upgrade() -> None:
    table = op.create_table(
        "file_entries",
        sa.Column("paper_id", ID, primary_key=True),
        sa.Column("source", sa.Text, primary_key=True),
        sa.Column("source_id", sa.Text, primary_key=True),
        sa.Column("file", sa.Text, primary_key=True),
    )
    op.create_index("file_entries_entry", "file_entries", ["file", "source", "source_id"])
    papers = sa.table("papers", sa.column("id", sa.Text), sa.column("record", sa.Text))
    naming = papers.c.record.like('%"file":"%')
    pending: list[dict[str, str]] = []
    for paper_id, record in op.get_bind().execute(sa.select(papers.c.id, papers.c.record).where(naming)):
        pending += _rows_of(paper_id, record)
        if len(pending) >= _BATCH:
            op.bulk_insert(table, pending)
            pending = []
    if pending:
        op.bulk_insert(table, pending)


def downgrade() -> None:
    op.drop_index("file_entries_entry", table_name="file_entries")
    op.drop_table("file_entries")
