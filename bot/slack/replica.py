"""One replica of ``paperbot serve`` among several sharing a database: heartbeat, sweep, log name.

:class:`ReplicaLoop` joins ``cluster_members`` when the replica starts, and every
``PAPERBOT_CLUSTER_HEARTBEAT_SECONDS``: moves its heartbeat forward, then looks for events
claimed by a replica that stopped (no heartbeat for ``MISSED_BEATS`` heartbeats) and not done
(``SlackStore.open_claims``), takes each over (a conditional update: one replica wins) and
answers it from its stored payload on a thread of its own. It leaves the table when it stops.
A failed heartbeat or sweep is logged and tried again on the next beat; it never stops the loop.

:func:`name_replica_in_logs` puts the replica's id into every log line of the process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bot.slack.deliveries import Deliveries, Delivery
from retrieval.errors import StorageError
from retrieval.storage.members import ClusterMembers, Member

log = logging.getLogger(__name__)

LOG_FORMAT = "%(levelname)s %(name)s [%(replica)s]: %(message)s"

Redispatch = Callable[[dict[str, Any], Delivery], None]


class ReplicaLoop:
    """The heartbeat and the sweep of one replica (module docstring); ``start``/``stop``."""

    def __init__(self, members: ClusterMembers, member: Member, deliveries: Deliveries, redispatch: Redispatch, *,
                 every: float, clock: Callable[[], float] = time.time, threads: int = 2,
                 also: Callable[[float], int] | None = None) -> None:
        """``also(now)``: more of stopped replicas' work to take over on each beat (the Slack
        messages of queued syncs: ``sync_jobs.resume_orphaned_syncs``); returns how many."""
        self.members = members
        self.member = member
        self.deliveries = deliveries
        self.every = every
        self._redispatch = redispatch
        self._also = also
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paperbot-resume")

    def start(self) -> None:
        """Join the members and start beating (a failed join is logged; the first beat retries)."""
        try:
            self.members.join(self.member.model_copy(update={"last_seen": self._clock()}))
        except StorageError as exc:
            log.warning("cannot join the replicas' table: %s", exc.user_message)
        log.info("replica %s (%s, pid %d) joined; heartbeat every %g s", self.member.id, self.member.host,
                 self.member.pid, self.every)
        self._thread = threading.Thread(target=self._run, name="paperbot-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating, finish the dispatches of taken-over events already started (a dispatch only
        queues the answer), drop those not started, and leave the members (never raises)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.every + 5)
        self._pool.shutdown(wait=True, cancel_futures=True)
        try:
            self.members.leave(self.member.id)
        except StorageError as exc:
            log.warning("cannot leave the replicas' table: %s", exc.user_message)

    def tick(self) -> int:
        """One heartbeat and one sweep; returns how many events were taken over."""
        now = self._clock()
        try:
            self.members.beat(self.member, now=now)
        except StorageError as exc:
            log.warning("heartbeat not recorded: %s", exc.user_message)
            return 0  # not known alive: taking others' events over now could answer twice
        return self.sweep(now)

    def sweep(self, now: float) -> int:
        """Take over and answer the open claims of stopped replicas; returns how many."""
        store = self.deliveries.store
        try:
            store.expire_claims(now=now)
            stale = store.open_claims(now=now, dead_after=self.deliveries.dead_after, replica=self.deliveries.replica,
                                      started=self.deliveries.started)
        except StorageError as exc:
            log.warning("cannot look for unanswered events: %s", exc.user_message)
            return 0
        taken = self._take_others(now)
        for claim in stale:
            resumed = self.deliveries.resume(claim.key, from_replica=claim.replica)
            if resumed is None:
                continue
            delivery, payload = resumed
            self._pool.submit(self._redispatch, payload, delivery)
            taken += 1
        return taken

    def _take_others(self, now: float) -> int:
        if self._also is None:
            return 0
        try:
            return self._also(now)
        except StorageError as exc:
            log.warning("cannot look for stopped replicas' syncs: %s", exc.user_message)
        except Exception:  # a bug there must not keep the events from being taken over
            log.exception("taking over stopped replicas' syncs failed")
        return 0

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.tick()
            except Exception:  # a bug must not stop the heartbeat: logged, tried on the next beat
                log.exception("replica heartbeat failed")


class _ReplicaName(logging.Filter):
    def __init__(self, replica: str) -> None:
        super().__init__()
        self.replica = replica

    def filter(self, record: logging.LogRecord) -> bool:
        record.replica = self.replica
        return True


def name_replica_in_logs(replica: str) -> None:
    """Every handler of the root logger writes ``[<replica>]`` after the logger's name."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(existing, _ReplicaName) for existing in handler.filters):
            handler.addFilter(_ReplicaName(replica))
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
