"""What the Slack app remembers, in the installation's database (``retrieval.storage.database``:
SQLite in the data dir, or PostgreSQL; tables ``slack_*`` of ``retrieval.storage.schema``).

* ``answers``: every posted answer with its question, text and cited ids, so the buttons under
  it ("More papers", "BibTeX", votes) work after a restart and carry only an id.
* ``feedback``: one vote per person per answer (the latest wins), stored *with* the question,
  the answer and the cited ids so the table is useful on its own for evaluation.
* ``threads``: threads the bot answered in; a message there is a follow-up even untagged.
* ``deliveries``: event ids and message keys already handled, until they expire
  (``dedupe.StoredDeduper``), so a restarted process, or a second one on the same database,
  does not answer Slack's re-delivery of an event again.

Every change is one transaction under the database's writer lock; every failure is a typed
``StorageError`` (a ``DiskFullError`` on a full disk) naming the database. A data dir made before
the database had ``slack/state.sqlite3``: its first upgrade imports it.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import delete, insert, select, update

from retrieval.config import Settings
from retrieval.errors import DataDirReadOnlyError
from retrieval.storage.database import Database, open_database
from retrieval.storage.schema import slack_answers, slack_deliveries, slack_feedback, slack_threads

Vote = Literal["up", "down"]
_SAVE = "save to the Slack state"


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
    """The Slack state in the database; thread-safe (each call takes a pooled connection)."""

    def __init__(self, database: Database) -> None:
        """A read-only data dir is a ``DataDirReadOnlyError`` here: the Slack app must write."""
        if database.read_only is not None:
            raise DataDirReadOnlyError("open the Slack state", data_dir=str(database.data_dir),
                                       reason=database.read_only)
        self.database = database

    @classmethod
    def for_settings(cls, settings: Settings) -> SlackStore:
        """The Slack state of these settings' database (upgraded first if it is behind)."""
        return cls(open_database(settings))

    def close(self) -> None:
        """Nothing to release: the database's connections are pooled per process."""

    # --- answers -----------------------------------------------------------------------------

    def save_answer(
        self, *, channel: str, thread_ts: str | None, user: str | None, team: str | None,
        kind: str, question: str, answer: str, cited_ids: Sequence[str],
    ) -> str:
        """Store an answer; returns its id (what the buttons carry)."""
        answer_id = secrets.token_hex(8)
        with self.database.writing(_SAVE) as db:
            db.execute(insert(slack_answers).values(
                id=answer_id, created_at=_now(), team=team, channel=channel, thread_ts=thread_ts, user=user, kind=kind,
                question=question, answer=answer, cited_ids=list(cited_ids),
            ))
        return answer_id

    def answer(self, answer_id: str) -> StoredAnswer | None:
        columns = [column for column in slack_answers.c if column.name != "seq"]
        with self.database.reading("read the Slack state") as db:
            row = db.execute(select(*columns).where(slack_answers.c.id == answer_id)).mappings().first()
        return StoredAnswer(**row) if row is not None else None

    def thread_history(self, channel: str, thread_ts: str, *, limit: int = 10) -> list[tuple[str, str]]:
        """(question, answer) pairs of the questions answered in this thread, oldest first."""
        query = (select(slack_answers.c.question, slack_answers.c.answer)
                 .where(slack_answers.c.channel == channel, slack_answers.c.thread_ts == thread_ts,
                        slack_answers.c.kind == "ask")
                 .order_by(slack_answers.c.seq.desc()).limit(limit))
        with self.database.reading("read the Slack state") as db:
            rows = db.execute(query).all()
        return [(question, answer) for question, answer in reversed(rows)]

    # --- feedback ----------------------------------------------------------------------------

    def record_vote(self, answer: StoredAnswer, user: str, vote: Vote) -> bool:
        """Store a vote with the question, answer and cited ids; False if it only repeated one."""
        key = (slack_feedback.c.answer_id == answer.id, slack_feedback.c.user == user)
        values: dict[str, Any] = {"vote": vote, "created_at": _now(), "question": answer.question,
                                  "answer": answer.answer, "cited_ids": answer.cited_ids}
        with self.database.writing(_SAVE) as db:
            previous = db.execute(select(slack_feedback.c.vote).where(*key)).scalar()
            if previous is None:
                db.execute(insert(slack_feedback).values(answer_id=answer.id, user=user, **values))
            else:
                db.execute(update(slack_feedback).where(*key).values(**values))
        return previous is None or previous != vote

    def feedback(self) -> list[FeedbackRecord]:
        query = select(slack_feedback).order_by(slack_feedback.c.created_at)
        with self.database.reading("read the Slack state") as db:
            return [FeedbackRecord(**row) for row in db.execute(query).mappings()]

    # --- threads -----------------------------------------------------------------------------

    def remember_thread(self, channel: str, thread_ts: str) -> None:
        key = (slack_threads.c.channel == channel, slack_threads.c.thread_ts == thread_ts)
        with self.database.writing(_SAVE) as db:
            if db.execute(select(slack_threads.c.channel).where(*key)).first() is None:
                db.execute(insert(slack_threads).values(channel=channel, thread_ts=thread_ts, created_at=_now()))

    def is_bot_thread(self, channel: str, thread_ts: str) -> bool:
        query = select(slack_threads.c.channel).where(slack_threads.c.channel == channel,
                                                      slack_threads.c.thread_ts == thread_ts)
        with self.database.reading("read the Slack state") as db:
            return db.execute(query).first() is not None

    # --- deliveries --------------------------------------------------------------------------

    def first_delivery(self, key: str, *, now: float, ttl: float) -> bool:
        """True the first time ``key`` is offered within ``ttl`` seconds (wall clock ``now``).

        One transaction under the writer lock: expired keys are dropped and ``key`` claimed, so
        of two processes offered the same key at once exactly one gets True.
        """
        with self.database.writing(_SAVE) as db:
            db.execute(delete(slack_deliveries).where(slack_deliveries.c.expires_at <= now))
            if db.execute(select(slack_deliveries.c.key).where(slack_deliveries.c.key == key)).first() is not None:
                return False
            db.execute(insert(slack_deliveries).values(key=key, expires_at=now + ttl))
            return True


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
