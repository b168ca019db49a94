"""Claims of follow alerts: each (follow, paper) announcement posted once per deployment.

Every replica of ``paperbot serve`` (or several processes on one data dir) polls the same queue of
new papers (``follow_inbox``), so two of them can find the same alert due. Before posting, a
replica *claims* the alert's (follow, paper) pairs in ``follow_claims`` (``claim``: one write
transaction under the database's writer lock; a pair already claimed is inserted by nobody else,
the primary key guarantees it, and an expired claim changes hands by a conditional ``UPDATE``).
It posts only the papers it got, then records them announced and drops its claim in one
transaction (``announced``), or gives the claim up after a transient failure (``release``), for
the next pass of any replica to retry.

A claim holds for ``lease`` seconds of the claimer's wall clock (``LEASE_SECONDS``: far longer than
posting one alert takes). A replica that dies between its claim and its record leaves the claim
to expire; the first pass after that, of any replica, takes it over and posts the alert. Papers
another replica still holds are reported as ``held``: the pass leaves their ids queued, so that
they are looked at again should that replica die. What is posted but not yet recorded when a
replica dies is posted again by the replica that takes it over: the one duplicate this cannot
rule out (Slack has no idempotent post), at most one message, since a poster records a long
alert's messages one by one (``bot.slack.alerts``).

Times are wall clocks compared across hosts: keep them in step (NTP), well within the lease.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import Connection, delete, insert, or_, select, update

from retrieval.results import AlertClaim
from retrieval.storage.database import Database
from retrieval.storage.schema import follow_announced, follow_claims, follows

log = logging.getLogger(__name__)

LEASE_SECONDS = 600.0  # how long a claim keeps other replicas off an alert being posted
_CHUNK = 500  # ids per IN (...) list: well under SQLite's limit of bound parameters


class AlertClaims:
    """``follow_claims`` of one database; safe across threads and processes (every call is one
    write transaction under the database's writer lock; failures are typed ``StorageError``)."""

    def __init__(self, database: Database, *, lease: float = LEASE_SECONDS) -> None:
        self.database = database
        self.lease = lease

    def claim(self, follow_id: int, paper_ids: Sequence[str], *, replica: str, now: float) -> AlertClaim:
        """Claim the announcement of ``paper_ids`` for the follow, for ``replica`` until
        ``now + lease``: which papers to post (those not announced yet and not claimed by another
        replica whose claim still holds, in the given order) and which another replica holds.

        A claim of ``replica`` itself (a previous pass or process under the same name) or one whose
        lease ran out is taken over. Nothing is claimed for a follow removed meanwhile. Claims of
        any follow expired for a lease or more are deleted on the way."""
        wanted = list(dict.fromkeys(paper_ids))
        with self.database.writing("claim follow alerts") as db:
            # claims expired a lease ago and never taken over (their papers no longer queued): any
            # expired claim may go, a new claim replaces it; the recent ones stay, to log their take-over
            db.execute(delete(follow_claims).where(follow_claims.c.expires_at <= now - self.lease))
            if not wanted or db.execute(select(follows.c.id).where(follows.c.id == follow_id)).first() is None:
                return AlertClaim(paper_ids=[], held=[])
            done = _announced(db, follow_id, wanted)
            owners: dict[str, tuple[str, float]] = {}
            for chunk in _chunks([paper_id for paper_id in wanted if paper_id not in done]):
                rows = db.execute(select(follow_claims.c.paper_id, follow_claims.c.replica, follow_claims.c.expires_at)
                                  .where(follow_claims.c.follow_id == follow_id, follow_claims.c.paper_id.in_(chunk)))
                owners.update((row.paper_id, (row.replica, row.expires_at)) for row in rows)
            stale = [p for p, (owner, expires) in owners.items() if owner == replica or expires <= now]
            taken = self._take_over(db, follow_id, stale, replica=replica, now=now)
            fresh = [p for p in wanted if p not in done and p not in owners]
            if fresh:
                db.execute(insert(follow_claims), [{"follow_id": follow_id, "paper_id": p, "replica": replica,
                                                    "claimed_at": now, "expires_at": now + self.lease} for p in fresh])
        leavers = sorted({owners[p][0] for p in taken if owners[p][0] != replica})
        if leavers:
            log.info("took over the alert of follow %d (%d paper(s)) left unposted by replica(s) %s",
                     follow_id, len(taken), ", ".join(leavers))
        mine = set(fresh) | taken
        return AlertClaim(paper_ids=[p for p in wanted if p in mine],
                          held=[p for p in wanted if p in owners and p not in taken])

    def announced(self, follow_id: int, paper_ids: Sequence[str], *, replica: str) -> None:
        """Record ``paper_ids`` as announced for the follow (posted, or dropped for good) and drop
        ``replica``'s claims of them; nothing for a follow removed meanwhile."""
        wanted = list(dict.fromkeys(paper_ids))
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        with self.database.writing("record the posted follow alerts") as db:
            self._drop(db, follow_id, wanted, replica)
            if not wanted or db.execute(select(follows.c.id).where(follows.c.id == follow_id)).first() is None:
                return
            done = _announced(db, follow_id, wanted)
            fresh = [{"follow_id": follow_id, "paper_id": p, "announced_at": stamp} for p in wanted if p not in done]
            if fresh:
                db.execute(insert(follow_announced), fresh)

    def release(self, follow_id: int, paper_ids: Sequence[str], *, replica: str) -> None:
        """Give up ``replica``'s claims of ``paper_ids`` (the post failed and is to be retried)."""
        with self.database.writing("release follow alert claims") as db:
            self._drop(db, follow_id, list(paper_ids), replica)

    def _take_over(self, db: Connection, follow_id: int, paper_ids: list[str], *, replica: str, now: float) -> set[str]:
        taken: set[str] = set()
        for chunk in _chunks(paper_ids):
            claimable = (follow_claims.c.follow_id == follow_id, follow_claims.c.paper_id.in_(chunk),
                         or_(follow_claims.c.replica == replica, follow_claims.c.expires_at <= now))
            taken.update(db.execute(update(follow_claims).where(*claimable)
                                    .values(replica=replica, claimed_at=now, expires_at=now + self.lease)
                                    .returning(follow_claims.c.paper_id)).scalars())
        return taken

    @staticmethod
    def _drop(db: Connection, follow_id: int, paper_ids: list[str], replica: str) -> None:
        for chunk in _chunks(paper_ids):
            db.execute(delete(follow_claims).where(follow_claims.c.follow_id == follow_id,
                                                   follow_claims.c.paper_id.in_(chunk),
                                                   follow_claims.c.replica == replica))


def _announced(db: Connection, follow_id: int, paper_ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(paper_ids):
        found.update(db.execute(select(follow_announced.c.paper_id).where(
            follow_announced.c.follow_id == follow_id, follow_announced.c.paper_id.in_(chunk))).scalars())
    return found


def _chunks(values: Sequence[str]) -> list[Sequence[str]]:
    return [values[start:start + _CHUNK] for start in range(0, len(values), _CHUNK)]
