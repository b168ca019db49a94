"""The record store's change feed: which records changed after a given write, on SQLite and PostgreSQL.

Every write of the record store is one transaction that bumps the store's ``generation`` (in
``meta``) and stamps what it changes with the new value (revision ``0006_record_changes``): each
record it stores gets ``papers.change_seq``, each id it removes a ``record_removals`` row (dropped
again when the id is stored later). ``read_changes(connection, since)`` then lists what changed
after generation ``since`` (the current text of each stored record, the removed ids) and the
generation it has read up to, so a derived index (``index.lexical``) reads only those records.

No reader misses a change: the generation is bumped under the record store's writer lock
(``RecordStore._writing``: SQLite's ``BEGIN IMMEDIATE``, or PostgreSQL's
``pg_advisory_xact_lock(RECORDS)`` taken as the transaction's first statement), and that lock is
released only after the commit is visible (PostgreSQL releases a transaction's locks after it
leaves the set of running transactions). So the writer of generation ``g + 1`` started after the
writer of ``g`` had committed, and commits in the order of the numbers: a snapshot that shows a
change stamped ``g`` shows every change stamped below ``g``. (A PostgreSQL ``SEQUENCE`` would not:
``nextval`` is taken outside any commit order, so a reader could see 12 committed while 11 is
still running, move past 11 and never read it.) ``read_changes`` reads the generation and the
changes in one snapshot: SQLite's read transaction, PostgreSQL's ``REPEATABLE READ``.

Applying a change is idempotent (it is the record's current state, or its absence), so a reader
that reads a change twice (a full rebuild read record by record, then the feed from the
generation it read first) ends in the same state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import Connection, delete, func, insert, select

from retrieval.storage.bulk import one_of
from retrieval.storage.record_rows import RecordText, record_text
from retrieval.storage.schema import meta, papers, record_removals

FEED_KEY = "change_feed"  # meta key: this database's feed id (revision 0006_record_changes)
_CHUNK = 500  # ids per IN (...) query, as the record store's
_T = TypeVar("_T")


def _chunks(items: Sequence[_T], size: int = _CHUNK) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass(frozen=True)
class RecordChanges:
    """What changed in a record store after generation ``since``, read in one snapshot.

    ``generation``: the store's generation in that snapshot (every change up to it is here);
    ``feed``: the database's feed id; ``records``: the current text of every record stored since,
    in id order; ``removed``: the ids removed since and not stored again, sorted."""

    feed: str
    since: int
    generation: int
    records: list[RecordText]
    removed: list[str]

    def __len__(self) -> int:
        return len(self.records) + len(self.removed)


def stamp_removals(connection: Connection, ids: Iterable[str], generation: int) -> None:
    """File ``ids`` (removed in this transaction) as removed at ``generation``."""
    wanted = list(dict.fromkeys(ids))
    clear_removals(connection, wanted)  # an earlier removal of one of them is replaced
    if wanted:
        connection.execute(insert(record_removals), [{"paper_id": paper_id, "change_seq": generation}
                                                     for paper_id in wanted])


def clear_removals(connection: Connection, ids: Sequence[str]) -> None:
    """Forget the filed removal of ``ids``: stored again in this transaction (their rows say so
    now), or about to be filed again (``stamp_removals``)."""
    for chunk in _chunks(ids):
        connection.execute(delete(record_removals).where(one_of(record_removals.c.paper_id, chunk, connection.dialect.name)))


def read_changes(connection: Connection, since: int, *, limit: int | None = None) -> RecordChanges | None:
    """The changes after generation ``since`` as ``connection`` sees them, in one snapshot.

    ``connection`` must not have begun a transaction yet (on PostgreSQL it is made ``REPEATABLE
    READ`` here). None when the store has no feed (a records file of the schema before the
    database, read as it is), or when more than ``limit`` records and removals changed (the
    caller is better off reading everything: they are not read then).
    """
    if connection.dialect.name == "postgresql":
        connection.execution_options(isolation_level="REPEATABLE READ")
    values = dict(connection.execute(select(meta.c.key, meta.c.value).where(meta.c.key.in_([FEED_KEY, "generation"]))).all())
    feed = values.get(FEED_KEY)
    if feed is None:
        return None
    generation = int(values.get("generation") or 0)
    if generation <= since:
        return RecordChanges(feed, since, generation, [], [])
    if limit is not None:
        changed = connection.execute(select(func.count()).select_from(papers).where(papers.c.change_seq > since)).scalar_one()
        removed = connection.execute(select(func.count()).select_from(record_removals)
                                     .where(record_removals.c.change_seq > since)).scalar_one()
        if changed + removed > limit:
            return None
    rows = connection.execute(select(papers.c.id, papers.c.year, papers.c.record)
                              .where(papers.c.change_seq > since).order_by(papers.c.id))
    records = [record_text(paper_id, year, record) for paper_id, year, record in rows]
    gone = connection.execute(select(record_removals.c.paper_id).where(record_removals.c.change_seq > since)
                              .order_by(record_removals.c.paper_id)).scalars().all()
    return RecordChanges(feed, since, generation, records, list(gone))
