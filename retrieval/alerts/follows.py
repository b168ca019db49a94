"""Follows: "tell this channel about new papers by <scholar> / on <topic>".

The store lives in the database (``storage.database``: SQLite in the data dir, or PostgreSQL)
and remembers, per follow, which papers
were already announced, so every new matching paper is posted exactly once even when a sync
reports it again or the bot restarts. Nothing here knows about Slack: a "channel" is an
opaque destination string given by the door.

Matching rules:

* **scholar**: some author of the paper could be the person. An ORCID or OpenAlex author id
  as the query must match the author's id; a name must be compatible with an author name
  (``names.names_compatible``: "Z. Zhang" matches "Zhao Zhang", "Tong Zhang" does not).
* **topic**: every content word of the topic appears, stemmed, in the paper's title,
  abstract, categories or venue ("graph neural networks" matches "a graph neural network for …").
"""

from __future__ import annotations

import builtins  # annotations in FollowStore's body after its method `list` need the builtin by name
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, delete, func, insert, select

from retrieval.config import Settings
from retrieval.errors import DataDirReadOnlyError, InputError
from retrieval.records.names import names_compatible
from retrieval.records.paper import Paper, clean_text, normalize_openalex_id, normalize_orcid
from retrieval.results import Follow, FollowAlert, FollowKind
from retrieval.storage.database import Database, open_database
from retrieval.storage.schema import follow_announced, follow_inbox, follows
from retrieval.text import fold, follow_terms

MAX_QUERY_CHARS = 200
MAX_FOLLOWS_PER_CHANNEL = 50

_KIND_PREFIX = re.compile(r"^(scholar|person|author|topic)\s*[:\s]\s*(.+)$", re.IGNORECASE | re.DOTALL)


def parse_follow(text: str) -> tuple[FollowKind | None, str]:
    """Split "scholar Zhao Zhang" / "topic: graph networks" / "graph networks" into (kind, query).

    The kind is None when the text does not say; the caller decides (e.g. by looking the name
    up among indexed authors). The query is plain text: terminal escapes, control and format
    characters (bidi overrides, zero-width characters) are removed (``clean_text``), since it is
    stored and shown in every alert of the follow.
    """
    cleaned = clean_text(text).strip("\"'")
    match = _KIND_PREFIX.match(cleaned)
    kind: FollowKind | None = None
    if match:
        kind = "topic" if match.group(1).lower() == "topic" else "scholar"
        cleaned = match.group(2).strip().strip("\"'")
    if not cleaned:
        raise InputError("Say what to follow.", hint="e.g. `follow scholar Zhao Zhang` or `follow topic optical interconnects`.")
    if len(cleaned) > MAX_QUERY_CHARS:
        raise InputError(f"A follow is at most {MAX_QUERY_CHARS} characters.", hint="Use a name or a short topic.")
    if kind == "topic" and not topic_terms(cleaned):
        raise InputError(f"The topic {cleaned!r} has no searchable words.", hint="Use a few content words, e.g. `topic graph neural networks`.")
    return kind, cleaned


def guess_kind(query: str, is_known_scholar: Callable[[str], bool]) -> FollowKind:
    """Scholar when the query is an ORCID/OpenAlex author id or a known person, else topic.

    "Known" is decided by the caller (roster or indexed author names): a capitalised phrase
    such as "Graph Neural Networks" must not become a person just because it looks like a name.
    """
    if normalize_orcid(query):
        return "scholar"
    openalex = normalize_openalex_id(query.removeprefix("openalex:"))
    if openalex and openalex.startswith("A"):
        return "scholar"
    return "scholar" if is_known_scholar(query) else "topic"


# --- matching --------------------------------------------------------------------------------


def topic_terms(topic: str) -> set[str]:
    """The stemmed content words a paper must contain to match a topic."""
    return follow_terms(topic)


def matches(follow: Follow, paper: Paper) -> bool:
    """Whether ``paper`` is news for ``follow`` (see the module docstring for the rules)."""
    if follow.kind == "topic":
        terms = topic_terms(follow.query)
        if not terms:
            return False
        text = " ".join([paper.title, paper.abstract or "", " ".join(paper.categories), paper.venue or ""])
        return terms <= follow_terms(text)
    orcid = normalize_orcid(follow.query)
    if orcid:
        return any(author.orcid == orcid for author in paper.authors)
    openalex = normalize_openalex_id(follow.query.removeprefix("openalex:"))
    if openalex and openalex.startswith("A"):
        return any(author.openalex_id == openalex for author in paper.authors)
    return any(names_compatible(follow.query, author.name) for author in paper.authors)


# --- storage ---------------------------------------------------------------------------------


class FollowStore:
    """Follows and what each already announced, in the database (``storage.database``: the
    tables ``follows``, ``follow_inbox`` and ``follow_announced``); safe across threads and
    processes: every change is one transaction under the database's writer lock."""

    def __init__(self, database: Database) -> None:
        if database.read_only is not None:
            raise DataDirReadOnlyError("open the follows store", data_dir=str(database.data_dir),
                                       reason=database.read_only)
        self.database = database

    @classmethod
    def for_settings(cls, settings: Settings) -> FollowStore:
        """The follows of these settings' database (upgraded first if it is behind)."""
        return cls(open_database(settings))

    def close(self) -> None:
        """Nothing to release: the database's connections are pooled per process (``close_databases``)."""

    def add(self, channel: str, kind: FollowKind, query: str, *, created_by: str | None = None) -> tuple[Follow, bool]:
        """Follow ``query`` in ``channel``; returns (follow, False) when it already existed."""
        query = " ".join(query.split())
        key = fold(query) or query.casefold()
        with self.database.writing("change the follows") as db:
            row = db.execute(select(follows).where(
                follows.c.channel == channel, follows.c.kind == kind, follows.c.query_key == key)).first()
            if row is not None:
                return _follow(row), False
            count = db.execute(select(func.count()).select_from(follows).where(follows.c.channel == channel)).scalar_one()
            if count >= MAX_FOLLOWS_PER_CHANNEL:
                raise InputError(
                    f"This channel already follows {count} scholars and topics.",
                    hint="Unfollow some first (`follows` lists them).",
                )
            row = db.execute(insert(follows).values(
                channel=channel, kind=kind, query=query, query_key=key, created_by=created_by, created_at=_now(),
            ).returning(*follows.c)).one()
            return _follow(row), True

    def remove(self, channel: str, reference: str) -> Follow | None:
        """Unfollow by number (as listed) or by the followed name/topic; None if nothing matched."""
        reference = " ".join(reference.split()).strip().strip("\"'").removeprefix("#")
        kind, text = parse_follow(reference) if reference else (None, "")
        with self.database.writing("change the follows") as db:
            if text.isdigit():
                row = db.execute(select(follows).where(follows.c.channel == channel, follows.c.id == int(text))).first()
            else:
                rows = db.execute(select(follows).where(
                    follows.c.channel == channel, follows.c.query_key == (fold(text) or text.casefold()),
                ).order_by(follows.c.id)).all()
                rows = [r for r in rows if kind is None or r.kind == kind]
                row = rows[0] if rows else None
            if row is None:
                return None
            db.execute(delete(follows).where(follows.c.id == row.id))
            return _follow(row)

    def list(self, channel: str | None = None) -> builtins.list[Follow]:
        query = select(follows).order_by(follows.c.id)
        if channel is not None:
            query = query.where(follows.c.channel == channel)
        with self.database.reading("read the follows") as db:
            return [_follow(row) for row in db.execute(query)]

    def note_new_papers(self, paper_ids: Iterable[str]) -> int:
        """Queue ids a sync reported as NEW; the serving bot matches and posts them later.

        This is the hand-over between ``paperbot sync`` (any process) and ``paperbot serve``.
        Returns how many ids were not queued already.
        """
        now = _now()
        wanted = builtins.list(dict.fromkeys(paper_ids))
        with self.database.writing("queue new papers for the follow alerts") as db:
            queued = _present(db, follow_inbox.c.paper_id, wanted)
            fresh = [paper_id for paper_id in wanted if paper_id not in queued]
            if fresh:
                db.execute(insert(follow_inbox), [{"paper_id": paper_id, "noted_at": now} for paper_id in fresh])
            return len(fresh)

    def queued_new_papers(self, limit: int = 500) -> builtins.list[str]:
        """Ids noted by syncs and not yet processed, oldest first."""
        query = select(follow_inbox.c.paper_id).order_by(follow_inbox.c.noted_at, follow_inbox.c.paper_id).limit(limit)
        with self.database.reading("read the follow alerts' queue") as db:
            return builtins.list(db.execute(query).scalars())

    def done_with_new_papers(self, paper_ids: Sequence[str]) -> None:
        """Drop processed ids from the queue (after their alerts were posted)."""
        with self.database.writing("update the follow alerts' queue") as db:
            for chunk in _chunks(paper_ids):
                db.execute(delete(follow_inbox).where(follow_inbox.c.paper_id.in_(chunk)))

    def pending_alerts(self, papers: Iterable[Paper]) -> builtins.list[FollowAlert]:
        """For each follow, the given papers that match it and were not announced yet."""
        candidates = builtins.list(papers)
        alerts: list[FollowAlert] = []
        for follow in self.list():
            matching = [paper for paper in candidates if matches(follow, paper)]
            if not matching:
                continue
            done = self._announced(follow.id, [paper.id for paper in matching])
            fresh = [paper for paper in matching if paper.id not in done]
            if fresh:
                alerts.append(FollowAlert(follow=follow, papers=fresh,
                                          posted_before=[paper for paper in matching if paper.id in done]))
        return alerts

    def mark_announced(self, follow_id: int, paper_ids: Sequence[str]) -> None:
        """Record that these papers were posted for this follow (call after a successful post)."""
        now = _now()
        with self.database.writing("record the posted follow alerts") as db:
            if db.execute(select(follows.c.id).where(follows.c.id == follow_id)).first() is None:
                return  # unfollowed meanwhile
            wanted = builtins.list(dict.fromkeys(paper_ids))
            done = _present(db, follow_announced.c.paper_id, wanted, follow_announced.c.follow_id == follow_id)
            fresh = [{"follow_id": follow_id, "paper_id": paper_id, "announced_at": now}
                     for paper_id in wanted if paper_id not in done]
            if fresh:
                db.execute(insert(follow_announced), fresh)

    def _announced(self, follow_id: int, paper_ids: Sequence[str]) -> set[str]:
        if not paper_ids:
            return set()
        with self.database.reading("read the posted follow alerts") as db:
            return _present(db, follow_announced.c.paper_id, paper_ids, follow_announced.c.follow_id == follow_id)


_CHUNK = 500  # ids per IN (...) list: well under SQLite's limit of bound parameters


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start:start + _CHUNK]


def _present(db: Connection, column: ColumnElement[str], values: Sequence[str], *where: ColumnElement[bool]) -> set[str]:
    """Which of ``values`` are in ``column`` (of the rows that satisfy ``where``)."""
    found: set[str] = set()
    for chunk in _chunks(values):
        found.update(db.execute(select(column).where(column.in_(chunk), *where)).scalars())
    return found


def note_new_papers(settings: Settings, paper_ids: Iterable[str]) -> int:
    """Hand the NEW ids of a sync to the follow alerts (what ``paperbot sync`` calls)."""
    store = FollowStore.for_settings(settings)
    try:
        return store.note_new_papers(paper_ids)
    finally:
        store.close()


def _follow(row: Row[Any]) -> Follow:
    return Follow(id=row.id, channel=row.channel, kind=row.kind, query=row.query, created_by=row.created_by,
                  created_at=row.created_at)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
