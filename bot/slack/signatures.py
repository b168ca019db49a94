"""Slack's request signatures and the memory of requests already seen (the HTTP door's checks).

``SignatureCheck`` computes the v0 signature over the raw bytes and never raises on malformed
headers; ``ReplayGuard`` remembers every verified (timestamp, signature) while the five-minute
window accepts it, so a replayed request is recognised (``bot/slack/http_door.py``).
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import re
import threading
import time
from collections.abc import Callable

REPLAY_WINDOW = 60 * 5  # seconds; Slack's documented limit for a request's timestamp

_DIGITS = re.compile(r"[0-9]{1,10}")  # ASCII only (str.isdigit accepts "²"); 10 digits reach year 2286
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


class SignatureCheck:
    """Slack's v0 signature: ``v0=hex(HMAC-SHA256(secret, "v0:{timestamp}:{body}"))``.

    Computed on bytes (slack_sdk's verifier decodes the body as UTF-8 first and raises on a body
    that is not text). Never raises: anything that is not one well-formed header is ``False``.
    """

    def __init__(self, secret: str, *, window: int = REPLAY_WINDOW, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret.encode("utf-8")
        self._window = window
        self._clock = clock

    def plausible(self, timestamp: str, signature: str) -> bool:
        """Both headers well formed and the timestamp inside the window (no body needed)."""
        if not _DIGITS.fullmatch(timestamp) or not _SIGNATURE.fullmatch(signature):
            return False
        return abs(self._clock() - int(timestamp)) <= self._window

    def valid(self, timestamp: str, signature: str, body: bytes) -> bool:
        if not self.plausible(timestamp, signature):
            return False
        digest = hmac.new(self._secret, b"v0:" + timestamp.encode("ascii") + b":" + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(f"v0={digest}", signature)


class ReplayGuard:
    """Every verified (timestamp, signature) until the window no longer accepts it.

    An entry lives until ``timestamp + window`` (a timestamp may be up to ``window`` ahead), so
    memory is bounded by the signed requests of at most ten minutes; only the holder of the
    signing secret can add one. In process: one uvicorn worker, and a restart forgets.
    """

    def __init__(self, *, window: int = REPLAY_WINDOW, clock: Callable[[], float] = time.time) -> None:
        self._window = window
        self._clock = clock
        self._seen: set[tuple[str, str]] = set()
        self._expiry: list[tuple[int, str, str]] = []
        self._lock = threading.Lock()

    def first_sight(self, timestamp: str, signature: str) -> bool:
        """Record the pair; ``False`` when it was already recorded (a replay)."""
        now = self._clock()
        with self._lock:
            while self._expiry and self._expiry[0][0] < now:
                _, old_ts, old_sig = heapq.heappop(self._expiry)
                self._seen.discard((old_ts, old_sig))
            key = (timestamp, signature)
            if key in self._seen:
                return False
            self._seen.add(key)
            heapq.heappush(self._expiry, (int(timestamp) + self._window, timestamp, signature))
            return True

    def forget(self, timestamp: str, signature: str) -> None:
        """The request was not handled (5xx, crash): a redelivery must not be taken for a replay."""
        with self._lock:
            self._seen.discard((timestamp, signature))

    def __len__(self) -> int:
        with self._lock:
            return len(self._seen)
