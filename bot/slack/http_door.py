"""The HTTP door: ``POST /slack/events`` and ``GET /healthz``, an ASGI application served by uvicorn.

Order of work for ``POST /slack/events``, cheapest refusal first, nothing read that is not needed:

1. ``Content-Length`` (before any body byte is read): missing or chunked -> 411, not a number or
   given twice -> 400, over ``max_body_bytes`` -> 413. These answers carry ``Connection: close``
   so a body nobody will read is never drained.
2. The signature headers, by shape only: one ``X-Slack-Request-Timestamp`` of ASCII digits inside
   the five-minute window and one ``X-Slack-Signature`` shaped ``v0=<64 hex>``, else 401 and the
   connection closed. So an unsigned request costs no body read either.
3. The body, within ``body_deadline_seconds`` in all and never more than the declared length or
   the cap -> 408 (too slow, connection closed) or 413.
4. The v0 HMAC over the raw bytes -> 401 when it does not match.
5. Replays: a (timestamp, signature) already seen inside the window is answered with an empty
   200 and not dispatched (logged at info), so a replayed slash command or click does not run
   twice. Kept in process memory, expiring with the window (one worker process).
6. Parsing (in a worker thread, ``inbound.parse_body``): a body that is not UTF-8, not an
   object, or too deeply nested (``RecursionError``) -> 400.
7. The payload's shape (``inbound.read_payload``): a Slack payload of a type paperbot does not
   handle (``view_submission``, other events) -> an empty 200; a malformed one (no type, or
   fields of the wrong type: an ``event`` that is ``null``, a ``channel`` that is a list) ->
   400. Neither reaches Bolt; each is logged in one line.
8. Bolt's synchronous ``App.dispatch`` of the payload's validated fields (re-encoded as JSON:
   Bolt's own signature check is off, as it could only check that re-encoding), on a bounded
   pool of ``dispatch_threads``; an unexpected exception there is logged with a reference -> 500.

Nothing in the door raises on malformed input and nothing it logs for a refused request carries a
traceback; refusals are logged at debug.

Size cap (``max_body_bytes``, 1 MiB): Slack documents no maximum request size. The largest it
sends us are ``block_actions`` clicks, which carry the whole message clicked: paperbot's own
messages (the only ones with our buttons) hold at most 50 blocks of 3,000 characters plus a
2,900-character fallback, and such a click on a message of ASCII text is 160 KB once JSON- and
form-encoded (computed). A 40,000-character message event (Slack's text limit) with its rich-text
copy stays under 0.5 MB even with every character JSON-escaped. Only a click on a message filled
to the block cap with non-ASCII text (0.9-1.4 MB, by how Slack escapes it) would get a 413.

Server settings (``uvicorn_config``), with reasons:

* h11, not httptools: h11 bounds the header block (``h11_max_incomplete_event_size``, 16 KiB here;
  Slack's headers are under 2 KB); the httptools parser has no such bound. h11 also rejects a
  non-numeric ``Content-Length`` itself (400, a one-line warning, no traceback).
* ``limit_concurrency=512``: open connections (idle ones too) or running requests; above it uvicorn
  answers 503 (Slack retries). Room for a 200-event burst (``bench/load.py``) and Slack's kept-alive
  connections; below the common soft limit of 1,024 file descriptors, so a flood gets quick 503s
  rather than failed accepts. With the 1 MiB cap, request bodies in memory stay under 512 MiB.
* ``backlog=2048``: Slack delivers in bursts; the kernel caps it at ``net.core.somaxconn``.
* ``timeout_keep_alive=5``: an idle kept-alive connection is closed after 5 s.
* ``http=HeadDeadlineProtocol``: uvicorn 0.54 has no timeout for a request whose headers never
  finish (its keep-alive timer only starts after a first response, and stops at the first byte
  of the next request), so our h11 protocol adds one: the request line and headers must be
  complete ``DoorLimits.head_deadline_seconds`` (10 s) after the connection opened or the
  previous response ended, or the client gets a 408 and the connection is closed. Until then a
  half-sent request costs an asyncio transport, about 4.4 KB measured (5,000 of them: +17 MiB
  RSS, no thread), plus at most 16 KiB of unfinished headers; ``limit_concurrency`` bounds how
  many are open at once.
* ``timeout_graceful_shutdown=10``: on SIGINT/SIGTERM requests in flight get 10 s to finish.
* No access log, no ``Server`` header, no proxy headers trusted, no lifespan, no websockets; the
  asyncio event loop (no uvloop dependency); one worker process (replay memory is per process).
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import hmac
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from slack_bolt import App, BoltRequest, BoltResponse
from uvicorn.protocols.http.h11_impl import H11Protocol

from bot.slack.inbound import Accepted, Ignored, parse_body, read_payload
from bot.slack.jobs import new_reference

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
REPLAY_WINDOW = 60 * 5  # seconds; Slack's documented limit for a request's timestamp

# uvicorn's settings (see the module docstring for the reasons)
LIMIT_CONCURRENCY = 512
BACKLOG = 2048
KEEP_ALIVE_SECONDS = 5
MAX_HEADER_BYTES = 16 * 1024
GRACEFUL_SHUTDOWN_SECONDS = 10

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_DIGITS = re.compile(r"[0-9]{1,10}")  # ASCII only (str.isdigit accepts "²"); 10 digits reach year 2286
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")
_LENGTH = re.compile(r"[0-9]{1,18}")
_RETRY_HEADERS = ("x-slack-retry-num", "x-slack-retry-reason")


@dataclass(frozen=True)
class DoorLimits:
    """What one request may cost the door."""

    max_body_bytes: int = 1024 * 1024
    body_deadline_seconds: float = 10.0  # for the whole body, from the end of the headers
    head_deadline_seconds: float = 10.0  # for the request line and headers (``HeadDeadlineProtocol``)
    dispatch_threads: int = 32  # Bolt's dispatch: middleware, then the ack; a command waits there for a listener thread


# --- signatures and replays ------------------------------------------------------------------


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


# --- from bytes to a Bolt request --------------------------------------------------------------


def bolt_request(payload: Accepted, *, query: str, headers: Mapping[str, Sequence[str]]) -> BoltRequest:
    """The Bolt request for an accepted payload: its validated fields as a JSON body, with
    Slack's retry headers (``bot/slack/dedupe.py`` reads them) and no others."""
    kept: dict[str, str | Sequence[str]] = {name: list(headers[name]) for name in _RETRY_HEADERS if name in headers}
    kept["content-type"] = "application/json"
    return BoltRequest(body=json.dumps(payload.body), query=query, headers=kept)


# --- the ASGI application ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    close: bool = False


_EMPTY_200 = _Answer(200)


class SlackDoor:
    """The ASGI application; ``close()`` stops its dispatch threads."""

    def __init__(self, app: App, signing_secret: str, *, limits: DoorLimits = DoorLimits(),
                 clock: Callable[[], float] = time.time) -> None:
        self.app = app
        self.limits = limits
        self.signatures = SignatureCheck(signing_secret, clock=clock)
        self.replays = ReplayGuard(clock=clock)
        self._pool = ThreadPoolExecutor(max_workers=limits.dispatch_threads, thread_name_prefix="paperbot-http")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":  # lifespan and websockets are switched off in uvicorn_config
            return
        path, method = scope.get("path"), scope.get("method")
        answer: _Answer | None
        if path == HEALTH_PATH and method in ("GET", "HEAD"):
            answer = _Answer(200, b"ok", (("content-type", "text/plain; charset=utf-8"),))
        elif path == EVENTS_PATH and method == "POST":
            answer = await self._events(scope, receive)
            if answer is None:  # the client went away
                return
        elif path == EVENTS_PATH:
            answer = _Answer(405, headers=(("allow", "POST"),), close=True)
        else:
            answer = _Answer(404, close=True)
        await _send(send, answer)

    async def _events(self, scope: Scope, receive: Receive) -> _Answer | None:
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or [])
        lengths = _count(headers, b"content-length")
        if lengths == 0:
            return _refuse(411, "no Content-Length")  # chunked, or no body at all
        if lengths > 1:
            return _refuse(400, "several Content-Length headers")
        length = _one(headers, b"content-length")
        if length is None or not _LENGTH.fullmatch(length):
            return _refuse(400, "a Content-Length that is not a number")
        declared = int(length)
        if declared > self.limits.max_body_bytes:
            return _refuse(413, f"a declared body of {declared} bytes")

        timestamp, signature = _one(headers, b"x-slack-request-timestamp"), _one(headers, b"x-slack-signature")
        if timestamp is None or signature is None or not self.signatures.plausible(timestamp, signature):
            return _refuse(401, "no well-formed signature inside the window")  # its body is never read

        raw = await self._read(receive, declared)
        if isinstance(raw, _Answer) or raw is None:
            return raw
        if not self.signatures.valid(timestamp, signature, raw):
            return _refuse(401, "a signature that does not match", close=False)
        if not self.replays.first_sight(timestamp, signature):
            log.info("a replayed Slack request (timestamp %s) was acknowledged and not run again", timestamp)
            return _EMPTY_200

        query = bytes(scope.get("query_string") or b"").decode("latin-1")
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(self._pool, self._dispatch, raw, query, _as_dict(headers))
        if answer.status >= 300:  # not handled: a redelivery by Slack is not a replay
            self.replays.forget(timestamp, signature)
        return answer

    async def _read(self, receive: Receive, declared: int) -> bytes | _Answer | None:
        """The body, at most ``declared`` bytes, within the deadline; ``None`` when the client left."""
        body = bytearray()
        try:
            async with asyncio.timeout(self.limits.body_deadline_seconds):
                more = True
                while more:
                    message = await receive()
                    if message.get("type") == "http.disconnect":
                        return None
                    body += message.get("body") or b""
                    if len(body) > declared:
                        return _refuse(413, "a body longer than its Content-Length")
                    more = bool(message.get("more_body"))
        except TimeoutError:
            return _refuse(408, f"a body not received within {self.limits.body_deadline_seconds:g} s")
        if len(body) != declared:
            return _refuse(400, "a body shorter than its Content-Length")
        return bytes(body)

    def _dispatch(self, raw: bytes, query: str, headers: dict[str, list[str]]) -> _Answer:
        """Parse, sort and dispatch in a worker thread (Bolt's ``App`` is synchronous)."""
        content_type = (headers.get("content-type") or [""])[0].split(";")[0].strip().lower() or None
        body = parse_body(raw, content_type)
        if body is None:
            return _refuse(400, "a signed body that cannot be parsed", close=False)
        payload = read_payload(body)
        if isinstance(payload, Ignored) and payload.malformed:
            log.info("Slack door: 400 for %s", payload.reason)
            return _Answer(400)
        if isinstance(payload, Ignored):
            log.debug("Slack door: acknowledged and ignored %s", payload.reason)
            return _EMPTY_200
        try:
            response = self.app.dispatch(bolt_request(payload, query=query, headers=headers))
        except Exception:
            reference = new_reference()
            log.exception("unexpected error dispatching a Slack request [ref %s]", reference)
            return _Answer(500, close=True)
        return _from_bolt(response)


def _refuse(status: int, why: str, *, close: bool = True) -> _Answer:
    log.debug("Slack door: %d for %s", status, why)
    return _Answer(status, close=close)


def _from_bolt(response: BoltResponse) -> _Answer:
    headers = tuple((name, value) for name, values in response.headers.items() if name != "content-length"
                    for value in values)
    return _Answer(response.status, (response.body or "").encode("utf-8"), headers)


def _count(headers: list[tuple[bytes, bytes]], name: bytes) -> int:
    return sum(1 for key, _ in headers if key == name)


def _one(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The value of a header sent exactly once, as ASCII; ``None`` otherwise."""
    values = [value for key, value in headers if key == name]
    if len(values) != 1:
        return None
    try:
        return values[0].decode("ascii").strip()
    except UnicodeDecodeError:
        return None


def _as_dict(headers: list[tuple[bytes, bytes]]) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    for key, value in headers:
        result.setdefault(key.decode("latin-1"), []).append(value.decode("latin-1"))
    return result


async def _send(send: Send, answer: _Answer) -> None:
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers]
    headers.append((b"content-length", str(len(answer.body)).encode("ascii")))
    if answer.close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body, "more_body": False})


# --- the server --------------------------------------------------------------------------------


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (``OSError`` when the address is taken or not ours)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=BACKLOG)


ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class HeadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's line and headers, and one answer
    per request.

    The deadline runs from the connection's start, and again from the end of each response on a
    kept-alive connection; it is met once h11 has parsed a whole request head. A connection that
    misses it gets a 408 written directly (h11 cannot answer a request it has not parsed) and is
    closed. ``head_deadline_seconds`` is set per server by ``uvicorn_config``.

    One answer: when a request's head is valid but what follows is not (an invalid chunk of a
    ``Transfer-Encoding: chunked`` body), uvicorn 0.55 answers 400 itself and closes, while the
    door, already started for that request, still sends its own answer (a 411 for a chunked
    body): h11 refuses a second response, and uvicorn logged that as "Exception in ASGI
    application" with a traceback, for a request anyone can send. Here the request in flight is
    marked disconnected as soon as that 400 is written, as uvicorn itself marks it once the
    connection is lost a moment later: the door's answer is then dropped without a word.
    """

    head_deadline_seconds: float = DoorLimits.head_deadline_seconds
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


def uvicorn_config(app: ASGIApp) -> uvicorn.Config:
    limits = getattr(app, "limits", None)
    head_deadline = limits.head_deadline_seconds if isinstance(limits, DoorLimits) else DoorLimits.head_deadline_seconds
    protocol = type("HeadDeadlineProtocol", (HeadDeadlineProtocol,), {"head_deadline_seconds": head_deadline})
    return uvicorn.Config(
        app,
        http=protocol,
        loop="asyncio",
        ws="none",
        lifespan="off",
        interface="asgi3",
        workers=1,
        reload=False,
        access_log=False,
        log_config=None,  # our logging set-up stays; uvicorn's own lines go through it
        proxy_headers=False,
        server_header=False,
        limit_concurrency=LIMIT_CONCURRENCY,
        backlog=BACKLOG,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )


class RunningServer:
    """uvicorn serving a door on a socket of its own, in a background thread (tests, benches)."""

    def __init__(self, door: SlackDoor, sock: socket.socket, *, start_timeout: float = 10.0) -> None:
        self.host, self.port = sock.getsockname()[:2]
        self._server = uvicorn.Server(uvicorn_config(door))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="paperbot-uvicorn", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + start_timeout
        while not self._server.started:  # the socket already listens; this only surfaces a failure
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the HTTP server did not start")
            self._thread.join(0.01)

    def url(self, path: str = "") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"

    @property
    def events_url(self) -> str:
        return self.url(EVENTS_PATH)

    def shutdown(self, timeout: float = 15.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
