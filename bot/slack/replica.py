"""One replica of ``paperbot serve`` among several sharing a database: heartbeat, sweep, log name.

:class:`ReplicaLoop` joins ``cluster_members`` when the replica starts, and every
``PAPERBOT_CLUSTER_HEARTBEAT_SECONDS``: moves its heartbeat forward, then looks for events
claimed by a replica that stopped (no heartbeat for ``MISSED_BEATS`` heartbeats) and not done
(``SlackStore.open_claims``), takes each over (a conditional update: one replica wins) and
answers it from its stored payload on a thread of its own. It leaves the table when it stops.
A failed heartbeat or sweep is logged and tried again on the next beat; it never stops the loop.

A replica whose answers make no progress (events open here and none finished for
``stall_after`` seconds: ``Deliveries.without_progress``; answer threads hung on a call that never
returns) stops heart-beating and sweeping until one finishes, so that the others take its events
over by the same stop rule; a busy replica with a long queue finishes events as it goes and keeps
beating.

:func:`with_heartbeat` adds the heartbeat to ``/readyz``: a replica whose heartbeat has not been
recorded for longer than the stop rule (``MISSED_BEATS`` heartbeats) counts as stopped for the
others, which take its claims over; it answers 503 so that the load balancer sends it no events.
A hung replica answers 503 at once, and so does its ``/healthz`` (``ReplicaLoop.liveness_check``):
a liveness probe restarts it, which nothing inside a hung process can do.

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
from retrieval.results import Readiness
from retrieval.storage.members import ClusterMembers, Member

log = logging.getLogger(__name__)

LOG_FORMAT = "%(levelname)s %(name)s [%(replica)s]: %(message)s"

Redispatch = Callable[[dict[str, Any], Delivery], None]


class ReplicaLoop:
    """The heartbeat and the sweep of one replica (module docstring); ``start``/``stop``."""

    def __init__(self, members: ClusterMembers, member: Member, deliveries: Deliveries, redispatch: Redispatch, *,
                 every: float, clock: Callable[[], float] = time.time, threads: int = 2,
                 also: Callable[[float], int] | None = None, stall_after: float | None = None) -> None:
        """``also(now)``: more of stopped replicas' work to take over on each beat (the Slack
        messages of queued syncs: ``sync_jobs.resume_orphaned_syncs``); returns how many.
        ``stall_after``: seconds with events open and none finished after which this replica
        counts as hung (module docstring); None: never."""
        self.members = members
        self.member = member
        self.deliveries = deliveries
        self.every = every
        self._redispatch = redispatch
        self._also = also
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started: float | None = None  # clock time of ``start``
        self._recorded: float | None = None  # clock time of the last heartbeat recorded
        self._failure = ""  # why the last heartbeat was not recorded ("" once one is)
        self.stall_after = stall_after
        self._hung = False  # whether the last beat was withheld for answers without progress
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paperbot-resume")

    def start(self) -> None:
        """Join the members and start beating (a failed join is logged; the first beat retries)."""
        self._started = now = self._clock()
        try:
            self.members.join(self.member.model_copy(update={"last_seen": now}))
            self._recorded = now
        except StorageError as exc:
            self._failure = exc.user_message
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
        hung = self.hung()
        if hung is not None:
            if not self._hung:
                log.error("answers hung: %s", hung)
            self._hung, self._failure = True, f"answers hung: {hung}"
            return 0  # not beating: the others take this replica's events over; nor taking theirs
        if self._hung:
            log.warning("answers finish again: heart-beating again")
            self._hung = False
        try:
            self.members.beat(self.member, now=now)
        except StorageError as exc:
            self._failure = exc.user_message
            log.warning("heartbeat not recorded: %s", exc.user_message)
            return 0  # not known alive: taking others' events over now could answer twice
        self._recorded, self._failure = now, ""
        return self.sweep(now)

    def hung(self) -> str | None:
        """Why this replica counts as hung (events open and none finished for longer than
        ``stall_after``), or None."""
        if self.stall_after is None:
            return None
        open_events, quiet = self.deliveries.without_progress()
        if not open_events or quiet <= self.stall_after:
            return None
        return (f"{open_events} event(s) open here and none finished for {quiet:.0f} s (more than "
                f"{self.stall_after:g} s): not heart-beating, so that other replicas take them over")

    def liveness_check(self) -> str | None:
        """``/healthz``'s reason to say this process should be restarted: "answers hung: ..." once
        started and ``hung``; None otherwise (a replica only slow to heart-beat, or whose
        database is down, is alive: restarting it would not help)."""
        if self._started is None:
            return None
        hung = self.hung()
        return None if hung is None else f"answers hung: {hung}"

    def heartbeat_check(self) -> str | None:
        """``/readyz``'s line for the heartbeat: "ok: ..." while the last one recorded (or the start,
        before any) is within the stop rule (``Deliveries.dead_after``) and its answers are not
        hung, else why this replica counts as hung or stopped; None before ``start`` (nothing
        beats, nothing to say)."""
        if self._started is None:
            return None
        hung = self.hung()
        if hung is not None:
            return f"answers hung: {hung}"
        silent = self._clock() - (self._recorded if self._recorded is not None else self._started)
        failing = f"; the last failed: {self._failure}" if self._failure else ""
        if silent <= self.deliveries.dead_after:
            when = f"recorded {silent:.0f} s ago" if self._recorded is not None else f"none yet, started {silent:.0f} s ago"
            return f"ok: {when} (every {self.every:g} s){failing}"
        return (f"heartbeat not recorded for {silent:.0f} s (more than {self.deliveries.dead_after:g} s): other "
                f"replicas take over this replica's events{failing}")

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


def with_heartbeat(readiness: Callable[[], Readiness], loop: ReplicaLoop) -> Callable[[], Readiness]:
    """``readiness`` (the core's checks) with the ``heartbeat`` check of ``loop`` added once it has
    started: not ready while its heartbeat fails for longer than the stop rule (module docstring)."""

    def check() -> Readiness:
        report = readiness()
        line = loop.heartbeat_check()
        if line is None:
            return report
        return Readiness(ready=report.ready and line.startswith("ok: "), checks={**report.checks, "heartbeat": line})

    return check


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
