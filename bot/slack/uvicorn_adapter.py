"""The one place the HTTP door extends uvicorn past its public settings: a request-head deadline.

uvicorn (0.55 here) has no timeout for a request whose line and headers never finish: its
keep-alive timer starts only after a first response and stops at the first byte of the next
request. Its settings take the class of the HTTP protocol to run (``Config(http=...)``), and
``HeadDeadlineProtocol`` is uvicorn's own h11 protocol with that deadline added. A subclass
depends on what uvicorn's protocol does and keeps (the hooks overridden below, its ``loop``,
``transport``, ``cycle`` and h11 connection ``conn``, the cycle's ``response_complete`` and
``disconnected``), none of it documented; it is kept here alone, so that a uvicorn upgrade is
reviewed in this module, and ``tests/slack/test_uvicorn_adapter.py`` fails on a release that no
longer fits it (the door's own tests of the deadline are in ``tests/slack/test_http_door.py``).
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

#: What the subclass overrides or reads of uvicorn's protocol and its request-response cycle.
PROTOCOL_HOOKS = ("connection_made", "connection_lost", "on_response_complete", "send_400_response")
CYCLE_FIELDS = ("response_complete", "disconnected")


class HeadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's line and headers, and one answer
    per request.

    The deadline runs from the connection's start, and again from the end of each response on a
    kept-alive connection; it is met once h11 has parsed a whole request head. A connection that
    misses it gets a 408 written directly (h11 cannot answer a request it has not parsed) and is
    closed.
    ``head_deadline_seconds`` is set per server (``with_head_deadline``).

    One answer: when a request's head is valid but what follows is not (an invalid chunk of a
    ``Transfer-Encoding: chunked`` body), uvicorn answers 400 itself and closes, while the door,
    already started for that request, still sends its own answer (a 411 for a chunked body): h11
    refuses a second response, and uvicorn logged that as "Exception in ASGI application" with a
    traceback, for a request anyone can send. Here the request in flight is marked disconnected
    as soon as that 400 is written, as uvicorn itself marks it once the connection is lost a
    moment later: the door's answer is then dropped without a word.
    """

    head_deadline_seconds: float = 10.0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_deadline()  # the next request on this connection gets its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        super().send_400_response(msg)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the server answered it: the app's answer goes nowhere

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_timer = self.loop.call_later(self.head_deadline_seconds, self._head_deadline_passed)

    def _cancel_head_deadline(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_deadline_passed(self) -> None:
        self._head_timer = None
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            return  # the head arrived (the body has a deadline of its own) or it is closing anyway
        log.info("closed a connection whose request headers did not arrive within %g s", self.head_deadline_seconds)
        self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        self.transport.close()


def with_head_deadline(seconds: float) -> type[HeadDeadlineProtocol]:
    """``HeadDeadlineProtocol`` whose head deadline is ``seconds``, for one server's ``Config(http=...)``."""
    return type("HeadDeadlineProtocol", (HeadDeadlineProtocol,), {"head_deadline_seconds": seconds})
