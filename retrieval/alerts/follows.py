"""Follows: "tell this channel about new papers by <scholar> / on <topic>".

The store lives in the data dir (``follows.sqlite3``) and remembers, per follow, which papers
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
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from retrieval.config import Settings
from retrieval.errors import InputError
from retrieval.records.names import names_compatible
from retrieval.records.paper import Paper, clean_text, normalize_openalex_id, normalize_orcid
from retrieval.results import Follow, FollowAlert, FollowKind
from retrieval.storage.sqlite import SqliteFile
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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS follows (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('scholar', 'topic')),
    query TEXT NOT NULL,
    query_key TEXT NOT NULL,
    created_by TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (channel, kind, query_key)
);
CREATE TABLE IF NOT EXISTS inbox (
    paper_id TEXT PRIMARY KEY,
    noted_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS announced (
    follow_id INTEGER NOT NULL REFERENCES follows(id) ON DELETE CASCADE,
    paper_id TEXT NOT NULL,
    announced_at TEXT NOT NULL,
    PRIMARY KEY (follow_id, paper_id)
);
"""


class FollowStore:
    """Follows and what each already announced, in one SQLite file; safe across threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = SqliteFile(path, _SCHEMA, label=f"the follows store at {path}", pragmas=("foreign_keys = ON",))

    @classmethod
    def for_settings(cls, settings: Settings) -> FollowStore:
        return cls(settings.data_dir / "follows.sqlite3")

    def close(self) -> None:
        self._file.close()

    def add(self, channel: str, kind: FollowKind, query: str, *, created_by: str | None = None) -> tuple[Follow, bool]:
        """Follow ``query`` in ``channel``; returns (follow, False) when it already existed."""
        query = " ".join(query.split())
        key = fold(query) or query.casefold()
        with self._file.transaction() as db:
            row = db.execute(
                "SELECT * FROM follows WHERE channel = ? AND kind = ? AND query_key = ?", (channel, kind, key)
            ).fetchone()
            if row is not None:
                return _follow(row), False
            (count,) = db.execute("SELECT COUNT(*) FROM follows WHERE channel = ?", (channel,)).fetchone()
            if count >= MAX_FOLLOWS_PER_CHANNEL:
                raise InputError(
                    f"This channel already follows {count} scholars and topics.",
                    hint="Unfollow some first (`follows` lists them).",
                )
            cursor = db.execute(
                "INSERT INTO follows (channel, kind, query, query_key, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (channel, kind, query, key, created_by, _now()),
            )
            row = db.execute("SELECT * FROM follows WHERE id = ?", (cursor.lastrowid,)).fetchone()
            return _follow(row), True

    def remove(self, channel: str, reference: str) -> Follow | None:
        """Unfollow by number (as listed) or by the followed name/topic; None if nothing matched."""
        reference = " ".join(reference.split()).strip().strip("\"'").removeprefix("#")
        kind, text = parse_follow(reference) if reference else (None, "")
        with self._file.transaction() as db:
            if text.isdigit():
                row = db.execute("SELECT * FROM follows WHERE channel = ? AND id = ?", (channel, int(text))).fetchone()
            else:
                rows = db.execute(
                    "SELECT * FROM follows WHERE channel = ? AND query_key = ? ORDER BY id",
                    (channel, fold(text) or text.casefold()),
                ).fetchall()
                rows = [r for r in rows if kind is None or r[2] == kind]
                row = rows[0] if rows else None
            if row is None:
                return None
            db.execute("DELETE FROM follows WHERE id = ?", (row[0],))
            return _follow(row)

    def list(self, channel: str | None = None) -> list[Follow]:
        with self._file.locked() as db:
            if channel is None:
                rows = db.execute("SELECT * FROM follows ORDER BY id").fetchall()
            else:
                rows = db.execute("SELECT * FROM follows WHERE channel = ? ORDER BY id", (channel,)).fetchall()
        return [_follow(row) for row in rows]

    def note_new_papers(self, paper_ids: Iterable[str]) -> int:
        """Queue ids a sync reported as NEW; the serving bot matches and posts them later.

        This is the hand-over between ``paperbot sync`` (any process) and ``paperbot serve``.
        Returns how many ids were not queued already.
        """
        now = _now()
        with self._file.transaction() as db:
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO inbox (paper_id, noted_at) VALUES (?, ?)",
                [(paper_id, now) for paper_id in dict.fromkeys(paper_ids)],
            )
            return db.total_changes - before

    def queued_new_papers(self, limit: int = 500) -> builtins.list[str]:
        """Ids noted by syncs and not yet processed, oldest first."""
        with self._file.locked() as db:
            rows = db.execute("SELECT paper_id FROM inbox ORDER BY noted_at, paper_id LIMIT ?", (limit,)).fetchall()
        return [row[0] for row in rows]

    def done_with_new_papers(self, paper_ids: Sequence[str]) -> None:
        """Drop processed ids from the queue (after their alerts were posted)."""
        with self._file.transaction() as db:
            db.executemany("DELETE FROM inbox WHERE paper_id = ?", [(paper_id,) for paper_id in paper_ids])

    def pending_alerts(self, papers: Iterable[Paper]) -> builtins.list[FollowAlert]:
        """For each follow, the given papers that match it and were not announced yet."""
        candidates = list(papers)
        alerts: list[FollowAlert] = []
        for follow in self.list():
            matching = [paper for paper in candidates if matches(follow, paper)]
            if not matching:
                continue
            done = self._announced(follow.id, [paper.id for paper in matching])
            fresh = [paper for paper in matching if paper.id not in done]
            if fresh:
                alerts.append(FollowAlert(follow=follow, papers=fresh))
        return alerts

    def mark_announced(self, follow_id: int, paper_ids: Sequence[str]) -> None:
        """Record that these papers were posted for this follow (call after a successful post)."""
        now = _now()
        with self._file.transaction() as db:
            exists = db.execute("SELECT 1 FROM follows WHERE id = ?", (follow_id,)).fetchone()
            if exists is None:
                return  # unfollowed meanwhile
            db.executemany(
                "INSERT OR IGNORE INTO announced (follow_id, paper_id, announced_at) VALUES (?, ?, ?)",
                [(follow_id, paper_id, now) for paper_id in paper_ids],
            )

    def _announced(self, follow_id: int, paper_ids: Sequence[str]) -> set[str]:
        if not paper_ids:
            return set()
        marks = ",".join("?" * len(paper_ids))
        with self._file.locked() as db:
            rows = db.execute(
                f"SELECT paper_id FROM announced WHERE follow_id = ? AND paper_id IN ({marks})",
                (follow_id, *paper_ids),
            ).fetchall()
        return {row[0] for row in rows}


def note_new_papers(settings: Settings, paper_ids: Iterable[str]) -> int:
    """Hand the NEW ids of a sync to the follow alerts (what ``paperbot sync`` calls)."""
    store = FollowStore.for_settings(settings)
    try:
        return store.note_new_papers(paper_ids)
    finally:
        store.close()


def _follow(row: tuple[object, ...]) -> Follow:
    follow_id, channel, kind, query, _key, created_by, created_at = row
    return Follow(id=follow_id, channel=channel, kind=kind, query=query, created_by=created_by, created_at=created_at)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
