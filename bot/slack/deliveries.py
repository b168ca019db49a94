"""Each Slack event answered exactly once, by whichever replica gets it, however often it comes.

Every event is *claimed* in the database before it is answered (``SlackStore.claim_event``, one
transaction under the writer lock): the claim names the replica answering it and keeps the
event's payload. Of the replicas offered one event (Slack's re-deliveries, two doors), exactly
one gets the claim; the others acknowledge and drop it. The claim is *done* once the answer has
been posted (or nothing was to be posted). A replica that stopped (no heartbeat for
``dead_after`` seconds: ``retrieval.storage.members``) leaves its unfinished claims to the
others: a re-delivery takes the claim over, and every replica's heartbeat looks for such claims
and answers them from the stored payload (``replica.ReplicaLoop``). A replica that takes an
event over answers into the Slack message the first one had posted for it, when there was one
(``Delivery.reply_ts``), so the thread shows one answer.

When an event is done is counted with *holds* (``Delivery.hold``/``release``): the dispatch
holds it, the listener holds it (taken in Bolt's middleware, while the dispatch still holds), a
queued job holds it until its reply is finished; the claim is settled when the last is released.
A hold never released (a job dropped at shutdown) leaves the claim open, for another replica.

A replica thought stopped (its heartbeats late, not its process) may still be answering an event
another took over: a queued job checks that its replica still owns the event before it starts
(``Delivery.still_ours``) and leaves it to the new owner otherwise. Between that check and the
first post the two may both answer; the heartbeat runs under a lock of its own so that a busy
replica is not taken for a stopped one.

When the claim cannot be stored (the database is unreachable, a full disk), the event is
answered anyway without one, as ``dedupe.StoredDeduper`` does: answering a repeat twice is
better than dropping a question in silence.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from bot.slack.store import SlackStore
from retrieval.errors import StorageError
from retrieval.storage.members import MISSED_BEATS

log = logging.getLogger(__name__)

CLAIM_TTL = 3600.0  # seconds a claim is kept (Slack retries for about six minutes)


def event_key(body: dict[str, Any]) -> str | None:
    """``event:<event_id>`` of an event payload; None when it has no event id."""
    event_id = body.get("event_id")
    return f"event:{event_id}" if isinstance(event_id, str) and event_id else None


class Delivery:
    """One event this replica answers; settled in the database when its last hold is released."""

    def __init__(self, deliveries: Deliveries | None, key: str | None, *, reply_ts: str | None = None) -> None:
        """``key`` None: an event handled without a claim (no event id, or the claim failed)."""
        self.key = key
        self.reply_ts = reply_ts
        self._deliveries = deliveries
        self._holds = 1  # the dispatch's
        self._lock = threading.Lock()

    def hold(self) -> None:
        """Another part of the answer (the listener, a queued job) is under way."""
        with self._lock:
            self._holds += 1

    def release(self) -> None:
        """One part finished; the last one settles the claim."""
        with self._lock:
            self._holds -= 1
            last = self._holds == 0
        if last and self._deliveries is not None and self.key is not None:
            self._deliveries.settle(self)

    def still_ours(self) -> bool:
        """False when another replica took the event over (this one was thought stopped): the
        answer is theirs. True without a claim, or when the claim cannot be read; never raises."""
        if self._deliveries is None or self.key is None:
            return True
        return self._deliveries.owns(self)

    def remember_reply(self, reply_ts: str) -> None:
        """The Slack message the answer goes into; never raises."""
        self.reply_ts = reply_ts
        if self._deliveries is not None and self.key is not None:
            self._deliveries.remember_reply(self, reply_ts)


class Deliveries:
    """The claims of this replica: taken, looked up by the listeners, settled; thread-safe."""

    def __init__(self, store: SlackStore, replica: str, *, heartbeat_seconds: float, ttl: float = CLAIM_TTL,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.replica = replica
        self.ttl = ttl
        self.dead_after = heartbeat_seconds * MISSED_BEATS
        self._clock = clock  # wall clock: claims are compared across processes and hosts
        self.started = clock()  # claims of this replica id older than this are a previous process's
        self._active: dict[str, Delivery] = {}
        self._progress = self.started  # when an event last left ``_active``, or work began after none was open
        self._lock = threading.Lock()

    def begin(self, body: dict[str, Any]) -> Delivery | None:
        """Claim an event payload: its ``Delivery`` (holding the dispatch), or None for a repeat."""
        key = event_key(body)
        if key is None:
            return Delivery(None, None)
        try:
            claim = self.store.claim_event(key, replica=self.replica, payload=json.dumps(body), now=self._clock(),
                                           ttl=self.ttl, dead_after=self.dead_after, started=self.started)
        except StorageError as exc:
            log.warning("cannot claim %s, answering it anyway: %s", key, exc.user_message)
            return Delivery(None, None)
        if claim.state == "repeat":
            return None
        if claim.state == "taken_over":
            log.info("took over %s from a stopped replica", key)
        return self._activate(Delivery(self, key, reply_ts=claim.reply_ts))

    def resume(self, key: str, *, from_replica: str) -> tuple[Delivery, dict[str, Any]] | None:
        """Take over a stopped replica's open claim: the delivery and the payload to dispatch, or
        None when another replica took it first (or it cannot be read)."""
        try:
            taken = self.store.take_over(key, from_replica=from_replica, replica=self.replica, now=self._clock())
        except StorageError as exc:
            log.warning("cannot take over %s: %s", key, exc.user_message)
            return None
        if taken is None:
            return None
        try:
            payload = json.loads(taken.payload)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):  # stored by this code as JSON of an object: never expected
            log.error("the stored payload of %s is not an event; settling it unanswered", key)
            self.store.settle(key, replica=self.replica, now=self._clock())
            return None
        log.info("answering %s, left unanswered by stopped replica %s", key, from_replica)
        return self._activate(Delivery(self, key, reply_ts=taken.reply_ts)), payload

    def active(self, body: dict[str, Any]) -> Delivery | None:
        """The delivery of this event payload being answered here, if any."""
        key = event_key(body)
        with self._lock:
            return self._active.get(key) if key else None

    def first_message(self, key: str, delivery: Delivery | None) -> bool | None:
        """Whether message ``key`` is this event's to answer (``SlackStore.claim_message``); None
        when the delivery has no claim (the caller falls back to the deduper)."""
        if delivery is None or delivery.key is None:
            return None
        try:
            return self.store.claim_message(key, event_key=delivery.key, now=self._clock(), ttl=self.ttl)
        except StorageError as exc:
            log.warning("cannot claim %s, answering it anyway: %s", key, exc.user_message)
            return True

    def owns(self, delivery: Delivery) -> bool:
        assert delivery.key is not None
        try:
            owner = self.store.claim_owner(delivery.key)
        except StorageError as exc:
            log.warning("cannot read the claim of %s, answering it: %s", delivery.key, exc.user_message)
            return True
        if owner == self.replica:
            return True
        self._finished(delivery.key)
        log.warning("%s was taken over by replica %s; not answered here", delivery.key, owner)
        return False

    def settle(self, delivery: Delivery) -> None:
        assert delivery.key is not None
        self._finished(delivery.key)
        try:
            if not self.store.settle(delivery.key, replica=self.replica, now=self._clock()):
                log.warning("%s was answered here after another replica took it over", delivery.key)
        except StorageError as exc:
            log.warning("cannot mark %s answered: %s", delivery.key, exc.user_message)

    def remember_reply(self, delivery: Delivery, reply_ts: str) -> None:
        assert delivery.key is not None
        try:
            self.store.remember_reply(delivery.key, replica=self.replica, reply_ts=reply_ts)
        except StorageError as exc:
            log.warning("cannot remember the reply of %s: %s", delivery.key, exc.user_message)

    def without_progress(self) -> tuple[int, float]:
        """(events being answered here, seconds since one of them last finished or, when none
        had been open, since the first began); (0, 0.0) while none is open. A busy replica
        finishes events as it goes, however long its queue; one whose answer threads hang does not."""
        with self._lock:
            if not self._active:
                return 0, 0.0
            return len(self._active), max(0.0, self._clock() - self._progress)

    def _finished(self, key: str) -> None:
        with self._lock:
            if self._active.pop(key, None) is not None:
                self._progress = self._clock()

    def _activate(self, delivery: Delivery) -> Delivery:
        assert delivery.key is not None
        with self._lock:
            if not self._active:
                self._progress = self._clock()
            self._active[delivery.key] = delivery
        return delivery
