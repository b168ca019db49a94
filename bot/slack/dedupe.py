"""Drop Slack's re-deliveries: each event id (and each user message) is handled once.

Slack re-sends an event when it did not see a 2xx within 3 s (headers ``X-Slack-Retry-Num``
and ``X-Slack-Retry-Reason``; in Socket Mode Bolt mirrors the envelope's ``retry_attempt``
into the same headers). Bolt itself does nothing with them, so the middleware here remembers
every ``event_id`` for an hour (Slack retries for ~6 minutes) and answers a repeat with an
empty 200, which also tells Slack to stop retrying.

The same message can also arrive as two *different* events (``app_mention`` and
``message.channels`` for a mention inside a followed thread); listeners call
:meth:`first` with a ``channel:ts`` key for that.

Events claimed by a door (``bot/slack/deliveries.py``: the claim is the event's dedupe, shared
by the replicas, and taken over when a replica stops) pass this middleware as they are; it
drops repeats of any other ``event_id``.

``StoredDeduper`` keeps the keys in the Slack state file, so a restarted process, or a second
process on the same data dir, drops the repeats too. When that file cannot be written (a full
disk), a delivery counts as new: answering a repeat twice is better than dropping a question
in silence, and the reply itself says what could not be saved.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from slack_bolt import BoltRequest, BoltResponse

from bot.slack.deliveries import Deliveries
from bot.slack.store import SlackStore
from retrieval.errors import StorageError

log = logging.getLogger(__name__)


DEDUPE_TTL = 3600.0  # seconds; Slack retries for about six minutes


class StoredDeduper:
    """Remembers keys for ``ttl`` seconds in the Slack state file (shared by processes, kept over restarts)."""

    def __init__(self, store: SlackStore, ttl: float = DEDUPE_TTL, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._ttl = ttl
        self._clock = clock  # wall clock: expiry times outlive the process

    def first(self, key: str) -> bool:
        """True the first time ``key`` is offered within the TTL, by this process or another.

        True as well when the key cannot be stored (module docstring).
        """
        try:
            return self._store.first_delivery(key, now=self._clock(), ttl=self._ttl)
        except StorageError as exc:
            log.warning("cannot remember delivery %s, handling it anyway: %s", key, exc.user_message)
            return True


def retry_number(request: BoltRequest) -> int:
    """``X-Slack-Retry-Num`` as an int (0 on first delivery; Socket Mode may send "0")."""
    raw = request.headers.get("x-slack-retry-num", ["0"])[0] or "0"
    try:
        return int(raw)
    except ValueError:
        return 0


def dedupe_middleware(deduper: StoredDeduper, deliveries: Deliveries | None = None) -> Callable[..., Any]:
    """Bolt middleware: a second delivery of an ``event_id`` gets an empty 200 and no listener
    (an event claimed by this replica's door is not a repeat: its claim was the check)."""

    def drop_repeats(body: dict[str, Any], request: BoltRequest, next: Callable[[], Any]) -> Any:
        if deliveries is not None and deliveries.active(body) is not None:
            return next()
        event_id = body.get("event_id")
        if isinstance(event_id, str) and event_id and not deduper.first(f"event:{event_id}"):
            log.info(
                "dropped repeated delivery of %s (retry %d, reason %s)",
                event_id, retry_number(request), request.headers.get("x-slack-retry-reason", ["-"])[0],
            )
            return BoltResponse(status=200, body="")
        return next()

    return drop_repeats
