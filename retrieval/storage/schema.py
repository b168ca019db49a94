"""The tables of the database (``storage.database``), as the stores query them.

The migrations in ``storage/migrations/versions`` create and change these tables; this module is
what the code of *this* revision expects, and ``HEAD`` names that revision
(``tests/storage/test_migrations.py`` checks both against Alembic's own view). A store opens the
database through ``database.open_database``, which upgrades a database behind ``HEAD`` first.

Times are ISO-8601 text (as the stores always wrote them); lists and maps of the roster are JSON.
"""

from __future__ import annotations

from sqlalchemy import JSON, CheckConstraint, Column, ForeignKey, Integer, MetaData, Table, Text, UniqueConstraint

HEAD = "0001_roster_and_follows"  # the newest revision in storage/migrations/versions

metadata = MetaData()

scholars = Table(
    "scholars", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),  # roster order: the order of adding
    Column("name", Text, nullable=False),
    Column("orcid", Text),
    Column("openalex_id", Text),
    Column("arxiv_name", Text),
    Column("aliases", JSON, nullable=False),  # list of names
    Column("added_at", Text, nullable=False),
    Column("last_synced", JSON, nullable=False),  # source -> ISO time of its last complete fetch
)

follows = Table(
    "follows", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("channel", Text, nullable=False),
    Column("kind", Text, CheckConstraint("kind IN ('scholar', 'topic')", name="follows_kind"), nullable=False),
    Column("query", Text, nullable=False),
    Column("query_key", Text, nullable=False),
    Column("created_by", Text),
    Column("created_at", Text, nullable=False),
    UniqueConstraint("channel", "kind", "query_key", name="follows_channel_kind_query_key"),
)

follow_inbox = Table(
    "follow_inbox", metadata,  # ids a sync reported new, until the serving bot processed them
    Column("paper_id", Text, primary_key=True),
    Column("noted_at", Text, nullable=False),
)

follow_announced = Table(
    "follow_announced", metadata,  # what each follow already posted (each paper once)
    Column("follow_id", Integer, ForeignKey("follows.id", ondelete="CASCADE"), primary_key=True),
    Column("paper_id", Text, primary_key=True),
    Column("announced_at", Text, nullable=False),
)
