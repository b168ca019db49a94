"""What the Slack app remembers in the data dir (``slack/state.sqlite3``).

* ``answers``: every posted answer with its question, text and cited ids, so the buttons under
  it ("More papers", "BibTeX", votes) work after a restart and carry only an id.
* ``feedback``: one vote per person per answer (the latest wins), stored *with* the question,
  the answer and the cited ids so the file is useful on its own for evaluation.
* ``threads``: threads the bot answered in; a message there is a follow-up even untagged.
* ``deliveries``: event ids and message keys already handled, until they expire
  (``dedupe.StoredDeduper``), so a restarted process, or a second one on the same data dir,
  does not answer Slack's re-delivery of an event again.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from retrieval.storage.sqlite import SqliteFile

Vote = Literal["up", "down"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    team TEXT, channel TEXT NOT NULL, thread_ts TEXT, user TEXT,
    kind TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    cited_ids TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS feedback (
    answer_id TEXT NOT NULL,
    user TEXT NOT NULL,
    vote TEXT NOT NULL CHECK (vote IN ('up', 'down')),
    created_at TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    cited_ids TEXT NOT NULL,
    PRIMARY KEY (answer_id, user)
);
CREATE TABLE IF NOT EXISTS threads (
    channel TEXT NOT NULL,
    thread_ts TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (channel, thread_ts)
);
CREATE TABLE IF NOT EXISTS deliveries (
    key TEXT PRIMARY KEY,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_expiry ON deliveries (expires_at);
"""


class StoredAnswer(BaseModel):
    id: str
    created_at: str
    team: str | None
    channel: str
    thread_ts: str | None
    user: str | None
    kind: str
    question: str
    answer: str
    cited_ids: list[str]


class FeedbackRecord(BaseModel):
    answer_id: str
    user: str
    vote: Vote
    created_at: str
    question: str
    answer: str
    cited_ids: list[str]


class SlackStore:
    """SQLite-backed, thread-safe; every failure is a ``StorageError`` naming the file."""

    def __init__(self, path: Path, *, data_dir: Path | None = None) -> None:
        """``data_dir``: the installation's data dir, named when it is read-only (default: the file's dir)."""
        self.path = path
        self._file = SqliteFile(path, _SCHEMA, label=f"the Slack state file {path}", write_verb="update",
                                data_dir=data_dir)

    def close(self) -> None:
        self._file.close()

    # --- answers -----------------------------------------------------------------------------

    def save_answer(
        self, *, channel: str, thread_ts: str | None, user: str | None, team: str | None,
        kind: str, question: str, answer: str, cited_ids: Sequence[str],
    ) -> str:
        """Store an answer; returns its id (what the buttons carry)."""
        answer_id = secrets.token_hex(8)
        with self._file.call() as db:
            db.execute(
                "INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (answer_id, _now(), team, channel, thread_ts, user, kind, question, answer, json.dumps(list(cited_ids))),
            )
        return answer_id

    def answer(self, answer_id: str) -> StoredAnswer | None:
        with self._file.call() as db:
            row = db.execute(
                "SELECT id, created_at, team, channel, thread_ts, user, kind, question, answer, cited_ids "
                "FROM answers WHERE id = ?", (answer_id,),
            ).fetchone()
        if row is None:
            return None
        keys = ("id", "created_at", "team", "channel", "thread_ts", "user", "kind", "question", "answer")
        return StoredAnswer(**dict(zip(keys, row[:9], strict=True)), cited_ids=json.loads(row[9]))

    def thread_history(self, channel: str, thread_ts: str, *, limit: int = 10) -> list[tuple[str, str]]:
        """(question, answer) pairs of the questions answered in this thread, oldest first."""
        with self._file.call() as db:
            rows = db.execute(
                "SELECT question, answer FROM answers WHERE channel = ? AND thread_ts = ? AND kind = 'ask' "
                "ORDER BY created_at DESC, rowid DESC LIMIT ?", (channel, thread_ts, limit),
            ).fetchall()
        return [(question, answer) for question, answer in reversed(rows)]

    # --- feedback ----------------------------------------------------------------------------

    def record_vote(self, answer: StoredAnswer, user: str, vote: Vote) -> bool:
        """Store a vote with the question, answer and cited ids; False if it only repeated one."""
        with self._file.call() as db:
            previous = db.execute(
                "SELECT vote FROM feedback WHERE answer_id = ? AND user = ?", (answer.id, user)
            ).fetchone()
            db.execute(
                "INSERT OR REPLACE INTO feedback VALUES (?, ?, ?, ?, ?, ?, ?)",
                (answer.id, user, vote, _now(), answer.question, answer.answer, json.dumps(answer.cited_ids)),
            )
        return previous is None or previous[0] != vote

    def feedback(self) -> list[FeedbackRecord]:
        with self._file.call() as db:
            rows = db.execute(
                "SELECT answer_id, user, vote, created_at, question, answer, cited_ids FROM feedback ORDER BY created_at"
            ).fetchall()
        keys = ("answer_id", "user", "vote", "created_at", "question", "answer")
        return [FeedbackRecord(**dict(zip(keys, row[:6], strict=True)), cited_ids=json.loads(row[6])) for row in rows]

    # --- threads -----------------------------------------------------------------------------

    def remember_thread(self, channel: str, thread_ts: str) -> None:
        with self._file.call() as db:
            db.execute("INSERT OR IGNORE INTO threads VALUES (?, ?, ?)", (channel, thread_ts, _now()))

    def is_bot_thread(self, channel: str, thread_ts: str) -> bool:
        with self._file.call() as db:
            row = db.execute("SELECT 1 FROM threads WHERE channel = ? AND thread_ts = ?", (channel, thread_ts)).fetchone()
        return row is not None


    # --- deliveries --------------------------------------------------------------------------

    def first_delivery(self, key: str, *, now: float, ttl: float) -> bool:
        """True the first time ``key`` is offered within ``ttl`` seconds (wall clock ``now``).

        One transaction: expired keys are dropped and ``key`` claimed, so of two processes
        offered the same key at once exactly one gets True.
        """
        with self._file.transaction() as db:
            db.execute("DELETE FROM deliveries WHERE expires_at <= ?", (now,))
            claimed = db.execute("INSERT OR IGNORE INTO deliveries VALUES (?, ?)", (key, now + ttl))
            return claimed.rowcount == 1


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
