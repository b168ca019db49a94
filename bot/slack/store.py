"""What the Slack app remembers, in the installation's database (``retrieval.storage.database``:
SQLite in the data dir, or PostgreSQL; tables ``slack_*`` of ``retrieval.storage.schema``).

* ``answers``: every posted answer with its question, text and cited ids, so the buttons under
  it ("More papers", "BibTeX", votes) work after a restart and carry only an id.
* ``feedback``: one vote per person per answer (the latest wins), stored *with* the question,
  the answer and the cited ids so the table is useful on its own for evaluation.
* ``threads``: threads the bot answered in; a message there is a follow-up even untagged.
* ``deliveries``: keys already handled, until they expire (``dedupe.StoredDeduper``), so a
  restarted process, or a second one on the same database, does not act on a repeat again.
* ``claims``: which replica answers which event, with the event's payload, the Slack message its
  answer goes into and a done mark, until they expire (``deliveries.Deliveries``): a re-delivery
  or a stopped replica's unfinished event is taken over by exactly one other replica.

Every change is one transaction under the database's writer lock; every failure is a typed
``StorageError`` (a ``DiskFullError`` on a full disk) naming the database. A data dir made before
the database had ``slack/state.sqlite3``: its first upgrade imports it.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import delete, insert, select, update

from retrieval.config import Settings
from retrieval.errors import DataDirReadOnlyError
from retrieval.storage.database import CLAIMS, Database, open_database
from retrieval.storage.schema import (
    cluster_members,
    slack_answers,
    slack_claims,
    slack_deliveries,
    slack_feedback,
    slack_threads,
)

Vote = Literal["up", "down"]
ClaimState = Literal["new", "taken_over", "repeat"]
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


@dataclass(frozen=True)
class Claim:
    """The outcome of claiming an event: ``new`` (first seen), ``taken_over`` (from a stopped
    replica: answer it, into ``reply_ts`` when set) or ``repeat`` (done, or being answered)."""

    state: ClaimState
    reply_ts: str | None = None


@dataclass(frozen=True)
class OpenClaim:
    """An event claimed and not done: its key, owner and claim time."""

    key: str
    replica: str
    claimed_at: float


@dataclass(frozen=True)
class TakenClaim:
    """An event this replica took over: the payload to answer and the message to answer into."""

    key: str
    payload: str
    reply_ts: str | None


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

    # --- claims ------------------------------------------------------------------------------

    def claim_event(self, key: str, *, replica: str, payload: str, now: float, ttl: float,
                    dead_after: float, started: float = 0.0) -> Claim:
        """Claim event ``key`` for ``replica``, atomically (one transaction under the claims' lock).

        ``new`` when no live claim exists (an expired one is dropped); ``repeat`` when it is done,
        already ``replica``'s since it ``started`` (this process), or its owner is alive (heard
        from within ``dead_after`` seconds, or claimed within them); else ``taken_over``: the
        claim moves to ``replica`` (from a stopped replica, or from this replica's previous
        process), so of several replicas offered it at once exactly one gets it.
        """
        with self.database.writing(_SAVE, lock=CLAIMS) as db:
            row = db.execute(select(slack_claims).where(slack_claims.c.key == key)).mappings().first()
            if row is not None and row["expires_at"] <= now:
                db.execute(delete(slack_claims).where(slack_claims.c.key == key))
                row = None
            if row is None:
                db.execute(insert(slack_claims).values(
                    key=key, replica=replica, payload=payload, claimed_at=now, takeovers=0, expires_at=now + ttl))
                return Claim("new")
            owner = row["replica"]
            if row["done_at"] is not None or owner is None or (owner == replica and row["claimed_at"] >= started):
                return Claim("repeat", row["reply_ts"])
            alive = owner in self._live(db, now=now, dead_after=dead_after) or row["claimed_at"] > now - dead_after
            if owner != replica and alive:
                return Claim("repeat", row["reply_ts"])
            db.execute(update(slack_claims).where(slack_claims.c.key == key).values(
                replica=replica, claimed_at=now, takeovers=slack_claims.c.takeovers + 1,
                payload=row["payload"] or payload))
            return Claim("taken_over", row["reply_ts"])

    def open_claims(self, *, now: float, dead_after: float, replica: str | None = None, started: float = 0.0,
                    limit: int = 100) -> list[OpenClaim]:
        """Events claimed more than ``dead_after`` seconds ago, not done, not expired, whose owner
        is not alive (not heard from within ``dead_after`` seconds), or is ``replica`` before this
        process ``started`` (a restart under the same id). Oldest first."""
        query = (select(slack_claims.c.key, slack_claims.c.replica, slack_claims.c.claimed_at)
                 .where(slack_claims.c.done_at.is_(None), slack_claims.c.replica.is_not(None),
                        slack_claims.c.payload.is_not(None), slack_claims.c.expires_at > now,
                        slack_claims.c.claimed_at <= now - dead_after)
                 .order_by(slack_claims.c.claimed_at).limit(limit))
        with self.database.reading("read the Slack state") as db:
            live = self._live(db, now=now, dead_after=dead_after)
            rows = db.execute(query).all()
        return [OpenClaim(key, owner, claimed_at) for key, owner, claimed_at in rows
                if owner not in live or (owner == replica and claimed_at < started)]

    def take_over(self, key: str, *, from_replica: str, replica: str, now: float) -> TakenClaim | None:
        """Move an open claim of ``from_replica`` to ``replica``; None when another replica took it
        first, or it was done meanwhile (a conditional update: exactly one taker wins)."""
        where = (slack_claims.c.key == key, slack_claims.c.replica == from_replica, slack_claims.c.done_at.is_(None))
        with self.database.writing(_SAVE, lock=CLAIMS) as db:
            moved = db.execute(update(slack_claims).where(*where).values(
                replica=replica, claimed_at=now, takeovers=slack_claims.c.takeovers + 1)).rowcount
            if not moved:
                return None
            row = db.execute(select(slack_claims.c.payload, slack_claims.c.reply_ts)
                             .where(slack_claims.c.key == key)).one()
        return TakenClaim(key, row.payload, row.reply_ts)

    def remember_reply(self, key: str, *, replica: str, reply_ts: str) -> None:
        """The Slack message the answer of ``key`` goes into (a replica taking it over reuses it)."""
        with self.database.writing(_SAVE, lock=CLAIMS) as db:
            db.execute(update(slack_claims).where(slack_claims.c.key == key, slack_claims.c.replica == replica)
                       .values(reply_ts=reply_ts))

    def claim_owner(self, key: str) -> str | None:
        """The replica answering event ``key`` now (None: no such claim)."""
        with self.database.reading("read the Slack state") as db:
            return db.execute(select(slack_claims.c.replica).where(slack_claims.c.key == key)).scalar()

    def settle(self, key: str, *, replica: str, now: float) -> bool:
        """Mark ``key`` done; False when ``replica`` no longer owns it (another took it over)."""
        with self.database.writing(_SAVE, lock=CLAIMS) as db:
            return bool(db.execute(update(slack_claims)
                                   .where(slack_claims.c.key == key, slack_claims.c.replica == replica)
                                   .values(done_at=now)).rowcount)

    def claim_message(self, key: str, *, event_key: str, now: float, ttl: float) -> bool:
        """True the first time message ``key`` is claimed within ``ttl``, and again for the same
        ``event_key`` (a replica answering that event after another stopped); False for another event."""
        with self.database.writing(_SAVE, lock=CLAIMS) as db:
            row = db.execute(select(slack_claims.c.event_key, slack_claims.c.expires_at)
                             .where(slack_claims.c.key == key)).first()
            if row is not None and row.expires_at <= now:
                db.execute(delete(slack_claims).where(slack_claims.c.key == key))
                row = None
            if row is None:
                db.execute(insert(slack_claims).values(key=key, event_key=event_key, claimed_at=now, done_at=now,
                                                       takeovers=0, expires_at=now + ttl))
                return True
            return bool(row.event_key == event_key)

    def expire_claims(self, *, now: float) -> int:
        """Drop the claims past their expiry; returns how many."""
        with self.database.writing(_SAVE, lock=CLAIMS) as db:
            return int(db.execute(delete(slack_claims).where(slack_claims.c.expires_at <= now)).rowcount)

    @staticmethod
    def _live(db: Any, *, now: float, dead_after: float) -> set[str]:
        query = select(cluster_members.c.id).where(cluster_members.c.last_seen >= now - dead_after)
        return set(db.execute(query).scalars())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
