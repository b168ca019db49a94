"""The processes sharing one database, each heart-beating in ``cluster_members``.

A replica of ``paperbot serve`` joins when it starts (one row: its id, role, host, pid and start
time), moves its ``last_seen`` forward every heartbeat and deletes its row when it stops cleanly.
A replica whose ``last_seen`` is older than ``dead_after`` seconds (``MISSED_BEATS`` heartbeats)
counts as stopped: what it
claimed and did not finish may be taken over (``bot/slack/deliveries.py``).

Times are the wall clock of the replica writing them (``time.time()``): replicas on several
hosts need clocks kept in step (NTP), well within ``dead_after``. Every write is one short
transaction under a lock of its own (``database.MEMBERS``: a heartbeat never waits behind other
writers on PostgreSQL); every failure is a typed ``StorageError``.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime

from pydantic import BaseModel
from sqlalchemy import delete, insert, select, update

from retrieval.config import Settings
from retrieval.storage.database import MEMBERS, Database
from retrieval.storage.schema import cluster_members

_DOING = "record this replica's heartbeat"
MISSED_BEATS = 3  # heartbeats a replica may miss before it counts as stopped (its claims are taken over)


class Member(BaseModel):
    """One running process of the installation."""

    id: str
    role: str
    host: str
    pid: int
    started_at: str
    last_seen: float


def replica_id(settings: Settings) -> str:
    """This process's name among the replicas: ``PAPERBOT_REPLICA_ID``, else ``<host>-<pid>``."""
    return settings.replica_id or f"{socket.gethostname()}-{os.getpid()}"


def this_member(settings: Settings, *, role: str, now: float) -> Member:
    """The row this process writes when it joins."""
    return Member(id=replica_id(settings), role=role, host=socket.gethostname(), pid=os.getpid(),
                  started_at=datetime.now(UTC).isoformat(timespec="milliseconds"), last_seen=now)


class ClusterMembers:
    """``cluster_members`` of one database; thread-safe (each call takes a pooled connection)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def join(self, member: Member) -> None:
        """Write ``member``'s row (replacing one of the same id: a restarted replica keeps its id)."""
        with self.database.writing(_DOING, lock=MEMBERS) as db:
            db.execute(delete(cluster_members).where(cluster_members.c.id == member.id))
            db.execute(insert(cluster_members).values(**member.model_dump()))

    def beat(self, member: Member, *, now: float) -> None:
        """Move ``member``'s ``last_seen`` to ``now`` (its row is written again if it was removed)."""
        with self.database.writing(_DOING, lock=MEMBERS) as db:
            moved = db.execute(update(cluster_members).where(cluster_members.c.id == member.id)
                               .values(last_seen=now)).rowcount
            if not moved:
                db.execute(insert(cluster_members).values(**{**member.model_dump(), "last_seen": now}))

    def leave(self, member_id: str) -> None:
        """Remove the row: this replica stopped cleanly."""
        with self.database.writing(_DOING, lock=MEMBERS) as db:
            db.execute(delete(cluster_members).where(cluster_members.c.id == member_id))

    def live(self, *, now: float, dead_after: float) -> list[Member]:
        """The members heard from within ``dead_after`` seconds of ``now``, by id."""
        query = (select(cluster_members).where(cluster_members.c.last_seen >= now - dead_after)
                 .order_by(cluster_members.c.id))
        with self.database.reading("read the replicas' heartbeats") as db:
            return [Member(**row) for row in db.execute(query).mappings()]

    def seen(self) -> list[Member]:
        """Every row, alive or not (``paperbot doctor``), by id; a ``StorageError`` when the database cannot be read."""
        with self.database.reading("read the replicas' heartbeats") as db:
            return [Member(**row) for row in db.execute(select(cluster_members).order_by(cluster_members.c.id)).mappings()]
