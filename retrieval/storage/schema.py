"""The tables of the database (``storage.database``), as the stores query them.

The migrations in ``storage/migrations/versions`` create and change these tables; this module is
what the code of *this* revision expects, and ``HEAD`` names that revision
(``tests/storage/test_migrations.py`` checks both against Alembic's own view). A store opens the
database through ``database.open_database``, which upgrades a database behind ``HEAD`` first.

Times are ISO-8601 text (as the stores always wrote them), but the claims' and heartbeats' wall
clocks (seconds, compared across processes); lists and maps are JSON. The follow tables are the
follows store's (``alerts.follows``) and the alert claims' (``follow_claims``: ``alerts.claims``,
revision ``0007_follow_claims``). The Slack
tables hold what the Slack door remembers (``bot/slack/store.py`` queries them; nothing in the
core reads them). The record tables (``papers`` and its side tables, ``meta``, ``vector_moves``)
are the record store's (``storage.records``), the same columns as ``records.sqlite3`` had before
the database (``storage.legacy_records``) plus its change feed (``papers.change_seq``,
``record_removals``: revision ``0006_record_changes``), without the side tables' foreign key
(revision ``0009_side_rows_unchecked``: the record store deletes side rows with their record), and
``file_entries`` (revision ``0010_file_entries``: which record each file's entry made);
record ids sort bytewise on both backends (``ID``).
The job tables (``job_parts``, ``job_results``, ``job_workers``) are the job queue's (``retrieval.jobs``): what a
scaled-out ingest staged for its workers, what finished jobs report, the workers' names; on PostgreSQL revision
0005_job_queue also creates the queue library's own tables (procrastinate's ``procrastinate_*``,
through its public schema API), which this module does not describe. Revision 0008_job_followers adds
``job_progress`` (how far a running job is) and ``slack_jobs`` (the Slack message following a job
started from Slack, so another replica can finish it).
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

HEAD = "0010_file_entries"  # the newest revision in storage/migrations/versions
# Older revisions that differ from HEAD in nothing this code reads or relies on when only reading
# (0009 only dropped the side tables' foreign key; 0010 added a table only ingest reads): a
# read-only data dir at one of them (a backup, a snapshot on a shared volume) is read as it is; a
# writable one is upgraded as usual.
READ_AS_HEAD = ("0008_job_followers", "0009_side_rows_unchecked")


def read_as_is(revision: str | None) -> bool:
    """True when this code reads a database at ``revision`` without upgrading it (``HEAD`` or one
    of ``READ_AS_HEAD``): what a read-only data dir must have."""
    return revision == HEAD or revision in READ_AS_HEAD

metadata = MetaData()

# Record ids: text compared bytewise. SQLite orders text by bytes; on PostgreSQL revision
# 0003_records gives these columns the "C" collation, which the server applies to every
# comparison and ORDER BY (the code needs no variant type for it, which would import the
# PostgreSQL dialect on SQLite too).
ID = Text

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

follow_claims = Table(
    "follow_claims", metadata,  # (follow, paper) pairs a replica is posting now (revision 0007_follow_claims)
    Column("follow_id", Integer, ForeignKey("follows.id", ondelete="CASCADE"), primary_key=True),
    Column("paper_id", Text, primary_key=True),
    Column("replica", Text, nullable=False),  # who posts it (PAPERBOT_REPLICA_ID, or host-pid)
    Column("claimed_at", Float, nullable=False),  # wall clock of the claim or take-over
    Column("expires_at", Float, nullable=False),  # until then no other replica takes it over
)

# --- the Slack door's state (bot/slack/store.py) -------------------------------------------------

slack_answers = Table(
    "slack_answers", metadata,  # every posted answer, so its buttons work after a restart
    Column("seq", Integer, primary_key=True, autoincrement=True),  # the order answers were saved in
    Column("id", Text, nullable=False, unique=True),  # what the buttons carry
    Column("created_at", Text, nullable=False),
    Column("team", Text),
    Column("channel", Text, nullable=False),
    Column("thread_ts", Text),
    Column("user", Text),
    Column("kind", Text, nullable=False),
    Column("question", Text, nullable=False),
    Column("answer", Text, nullable=False),
    Column("cited_ids", JSON, nullable=False),
)

slack_feedback = Table(
    "slack_feedback", metadata,  # one vote per person per answer, with what was voted on
    Column("answer_id", Text, primary_key=True),
    Column("user", Text, primary_key=True),
    Column("vote", Text, CheckConstraint("vote IN ('up', 'down')", name="slack_feedback_vote"), nullable=False),
    Column("created_at", Text, nullable=False),
    Column("question", Text, nullable=False),
    Column("answer", Text, nullable=False),
    Column("cited_ids", JSON, nullable=False),
)

slack_threads = Table(
    "slack_threads", metadata,  # threads the bot answered in
    Column("channel", Text, primary_key=True),
    Column("thread_ts", Text, primary_key=True),
    Column("created_at", Text, nullable=False),
)

slack_deliveries = Table(
    "slack_deliveries", metadata,  # event ids and message keys handled, until they expire
    Column("key", Text, primary_key=True),
    Column("expires_at", Float, nullable=False),
    Index("slack_deliveries_expiry", "expires_at"),
)

slack_claims = Table(
    "slack_claims", metadata,  # events (and the messages they carry) claimed by a replica, until they expire
    Column("key", Text, primary_key=True),  # "event:<event_id>" or "message:<channel>:<ts>"
    Column("replica", Text),  # who answers the event (None: a message key, see event_key)
    Column("event_key", Text),  # a message key: the event whose answer covers the message
    Column("payload", Text),  # an event: its validated body (JSON), what another replica answers from
    Column("reply_ts", Text),  # an event: the Slack message its answer goes into, once posted
    Column("claimed_at", Float, nullable=False),  # wall clock of the last claim or take-over
    Column("done_at", Float),  # set once the answer is posted (or nothing was to be answered)
    Column("takeovers", Integer, nullable=False),  # how often another replica took it over
    Column("expires_at", Float, nullable=False),
    Index("slack_claims_expiry", "expires_at"),
    Index("slack_claims_open", "done_at", "replica"),
)

# --- the processes sharing the database (storage/members.py) -----------------------------------

cluster_members = Table(
    "cluster_members", metadata,  # every running replica, heart-beating
    Column("id", Text, primary_key=True),  # PAPERBOT_REPLICA_ID, or host-pid
    Column("role", Text, nullable=False),  # "slack" for `paperbot serve`
    Column("host", Text, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", Text, nullable=False),  # ISO-8601
    Column("last_seen", Float, nullable=False),  # wall clock of its last heartbeat
)

# --- the record store (storage/records.py) ------------------------------------------------------

papers = Table(
    "papers", metadata,  # one row per record: lookup columns beside the record's JSON
    Column("id", ID, primary_key=True),
    Column("doi", Text),
    Column("arxiv_id", Text),
    Column("openalex_id", Text),
    Column("fingerprint", Text, nullable=False),
    Column("title_key", Text, nullable=False),
    Column("year", Integer),
    Column("venue_key", Text),
    Column("content_hash", Text, nullable=False),
    Column("embedding_hash", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    Column("record", Text, nullable=False),  # Paper.model_dump_json()
    # the generation of the write that stored it (revision 0006_record_changes): the change feed
    Column("change_seq", BigInteger),
    # partial: only the rows where the id is set (WHERE ... IS NOT NULL, revision 0003_records;
    # not repeated here, where a dialect's keyword would import that dialect)
    Index("papers_doi", "doi"),
    Index("papers_arxiv", "arxiv_id"),
    Index("papers_openalex", "openalex_id"),
    Index("papers_fingerprint", "fingerprint"),
    Index("papers_title_key", "title_key"),
    Index("papers_year", "year"),
    Index("papers_change_seq", "change_seq"),
)

record_removals = Table(
    "record_removals", metadata,  # ids removed (and not stored again since), with the removing generation
    Column("paper_id", ID, primary_key=True),
    Column("change_seq", BigInteger, nullable=False),
    Index("record_removals_change_seq", "change_seq"),
)

# The side rows of a record (title_variants, author_names, file_entries) carry no foreign key (revision
# 0009_side_rows_unchecked): the record store writes and deletes them with their record, in one
# transaction (records.delete_records).
title_variants = Table(
    "title_variants", metadata,  # record_rows.variant_keys of each record's title
    Column("paper_id", ID, primary_key=True),
    Column("key", Text, primary_key=True),
    Index("title_variants_key", "key"),
)

author_names = Table(
    "author_names", metadata,  # each written author name under every family name it may carry
    Column("paper_id", ID, primary_key=True),
    Column("family", Text, primary_key=True),
    Column("name", Text, primary_key=True),
    Column("author_key", Text, nullable=False),
    Index("author_names_family", "family"),
    Index("author_names_key", "author_key"),
)

file_entries = Table(
    "file_entries", metadata,  # each provenance entry that names its file (revision 0010_file_entries)
    Column("paper_id", ID, primary_key=True),
    Column("source", Text, primary_key=True),
    Column("source_id", Text, primary_key=True),
    Column("file", Text, primary_key=True),  # Provenance.file: the file's absolute path
    Index("file_entries_entry", "file", "source", "source_id"),
)

meta = Table(
    "meta", metadata,  # the store's generation, the encoder of the vectors, pending work
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

vector_moves = Table(
    "vector_moves", metadata,  # vectors a migration left for the index to move (index.catch_up)
    Column("old_id", ID, primary_key=True),
    Column("new_id", ID, nullable=False),
    Column("old_embedding_hash", Text, nullable=False),
)


# --- the job queue (retrieval/jobs/) -------------------------------------------------------------

job_parts = Table(
    "job_parts", metadata,  # one scaled-out ingest's records, staged for the workers part by part
    Column("ingest_id", Text, primary_key=True),
    Column("part", Integer, primary_key=True),
    Column("parts", Integer, nullable=False),  # how many parts the ingest has
    Column("records", Text, nullable=False),  # JSON lines: Paper.model_dump_json() of each record
    Column("created_at", Text, nullable=False),
    Column("done_at", Text),  # set by the job that wrote the part
    Column("report", JSON),  # that job's counts: added, updated, unchanged
)

job_results = Table(
    "job_results", metadata,  # what a finished job reports (a sync's SyncReport), for whoever waits on it
    Column("job_id", BigInteger, primary_key=True),
    Column("task", Text, nullable=False),
    Column("result", JSON, nullable=False),
    Column("finished_at", Text, nullable=False),
)

job_progress = Table(
    "job_progress", metadata,  # how far a running job is (a sync: scholars done of total), for whoever follows it
    Column("job_id", BigInteger, primary_key=True),
    Column("done", Integer, nullable=False),
    Column("total", Integer, nullable=False),
    Column("message", Text, nullable=False),  # e.g. the scholar just synced
    Column("updated_at", Text, nullable=False),
)

slack_jobs = Table(
    "slack_jobs", metadata,  # the Slack message that shows a queued job started from Slack (revision 0007)
    Column("job_id", BigInteger, primary_key=True),
    Column("channel", Text, nullable=False),
    Column("message_ts", Text, nullable=False),  # the message updated with the job's progress, then its outcome
    Column("thread_ts", Text),
    Column("requested_by", Text, nullable=False),  # the Slack user who started it
    Column("replica", Text, nullable=False),  # the replica following it (another takes over when it stops)
    Column("created_at", Text, nullable=False),
    Column("finished_at", Text),  # set once the outcome is shown
)

job_workers = Table(
    "job_workers", metadata,  # who each registered queue worker is (the queue library knows only an id)
    Column("worker_id", BigInteger, primary_key=True),
    Column("name", Text, nullable=False),  # host:pid
    Column("concurrency", Integer, nullable=False),
    Column("started_at", Text, nullable=False),
)


def described_here(name: str | None, kind: str, _parents: object = None) -> bool:
    """Whether this module describes a database object (Alembic's ``include_name`` hook, for
    comparing a database with ``metadata``): every table but the queue library's own
    (``procrastinate_*``, revision 0005_job_queue on PostgreSQL)."""
    return not (kind == "table" and (name or "").startswith("procrastinate_"))
