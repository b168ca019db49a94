"""The HTTP door: ``POST /slack/events``, ``GET /healthz`` and ``GET /readyz``, an ASGI application served by uvicorn.

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
6. Parsing (``inbound.parse_body``, on the event loop: a signed body of at most 1 MiB): a body
   that is not UTF-8, not an object, or too deeply nested (``RecursionError``) -> 400.
7. The payload's shape (``inbound.read_payload``): a Slack payload of a type paperbot does not
   handle (``view_submission``, other events) -> an empty 200; a malformed one (no type, or
   fields of the wrong type: an ``event`` that is ``null``, a ``channel`` that is a list) ->
   400. Neither reaches Bolt; each is logged in one line.
8. Bolt's synchronous ``App.dispatch`` of the payload's validated fields (re-encoded as JSON:
   Bolt's own signature check is off, as it could only check that re-encoding), in a worker
   thread. An event (``event_callback``) is acknowledged with an empty 200 *before* its
   dispatch, which runs on ``event_threads`` threads of its own (``BackgroundDispatch``): Bolt
   answers every event with an empty 200 anyway, and its dispatch waits for the Slack state
   file (the dedupe middleware writes the event id there), which a burst makes slow enough for
   an acknowledgement waiting on it to miss Slack's 3 s (``docs/performance.md``). Commands,
   clicks and URL checks, whose answer is Bolt's, wait for it on ``dispatch_threads`` threads; an
   unexpected exception there is logged with a reference -> 500.
9. Claims (``bot/slack/deliveries.py``): every event is claimed in the database before its
   dispatch, and a repeat (done, or being answered by a live replica) is not dispatched. On a
   server database (PostgreSQL: several replicas) the claim is made *before* the acknowledgement
   (``claim_first``), so an event whose 200 went out is always claimed, with its payload, and is
   answered by another replica if this one stops; an event acknowledged before a failure to claim
   it is answered without a claim. On SQLite (one host) the claim is made after the
   acknowledgement, in the event's dispatch thread, as the dedupe always was.

Nothing in the door raises on malformed input and nothing it logs for a refused request carries a
traceback; refusals are logged at debug, a malformed signed payload at info.

Size cap (``max_body_bytes``, 1 MiB): Slack documents no maximum request size. The largest it
sends us are ``block_actions`` clicks, which carry the whole message clicked: paperbot's own
messages (the only ones with our buttons) hold at most 50 blocks of 3,000 characters plus a
2,900-character fallback, and such a click on a message of ASCII text is 160 KB once JSON- and
form-encoded (computed). A 40,000-character message event (Slack's text limit) with its rich-text
copy stays under 0.5 MB even with every character JSON-escaped. Only a click on a message filled
to the block cap with non-ASCII text (0.9-1.4 MB, by how Slack escapes it) would get a 413.

Served by uvicorn with the settings of ``bot/slack/http_server.py``; the signature check and the
replay memory are ``bot/slack/signatures.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from slack_bolt import App, BoltRequest, BoltResponse

from bot.slack.deliveries import Deliveries, Delivery
from bot.slack.inbound import Accepted, Ignored, parse_body, read_payload
from bot.slack.jobs import new_reference
from bot.slack.signatures import ReplayGuard, SignatureCheck

if TYPE_CHECKING:
    from retrieval.results import Readiness

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
READY_CACHE_SECONDS = 2.0  # a load balancer probing every second costs one check per 2 s

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
T = TypeVar("T")

_LENGTH = re.compile(r"[0-9]{1,18}")
_RETRY_HEADERS = ("x-slack-retry-num", "x-slack-retry-reason")


@dataclass(frozen=True)
class DoorLimits:
    """What one request may cost the door."""

    max_body_bytes: int = 1024 * 1024
    body_deadline_seconds: float = 10.0  # for the whole body, from the end of the headers
    head_deadline_seconds: float = 10.0  # for the request line and headers (``HeadDeadlineProtocol``)
    dispatch_threads: int = 32  # Bolt's dispatch of what is answered after it: commands, clicks, URL checks
    event_threads: int = 8  # Bolt's dispatch of events, which are acknowledged before it
    ready_cache_seconds: float = READY_CACHE_SECONDS  # ``/readyz`` answers from one check for this long


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
_PLAIN_NO_STORE = (("content-type", "text/plain; charset=utf-8"), ("cache-control", "no-store"))


class SlackDoor:
    """The ASGI application; ``close()`` stops its dispatch threads."""

    def __init__(self, app: App, signing_secret: str, *, limits: DoorLimits = DoorLimits(),
                 clock: Callable[[], float] = time.time, readiness: Callable[[], Readiness] | None = None,
                 liveness: Callable[[], str | None] | None = None,
                 deliveries: Deliveries | None = None, claim_first: bool = False) -> None:
        """``deliveries``: the event claims (step 9), made before the acknowledgement when
        ``claim_first``; None: events are dispatched unclaimed (the dedupe middleware drops repeats).
        ``liveness``: why the process should be restarted, or None while it should not (``/healthz``
        is 503 with the reason, else 200 ``ok``); None: 200 while HTTP is served."""
        self.app = app
        self._liveness = liveness
        self._deliveries = deliveries
        self._claim_first = claim_first and deliveries is not None
        self._readiness = readiness
        self._ready_lock = threading.Lock()
        self._ready_answer: tuple[float, _Answer] | None = None  # (monotonic time, answer) of the last check
        self.limits = limits
        self.signatures = SignatureCheck(signing_secret, clock=clock)
        self.replays = ReplayGuard(clock=clock)
        self._pool = ThreadPoolExecutor(max_workers=limits.dispatch_threads, thread_name_prefix="paperbot-http")
        self._events: BackgroundDispatch[_Request] = BackgroundDispatch(self._dispatch_event,
                                                                        threads=limits.event_threads)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._events.close()

    def pending_events(self) -> int:
        """Events acknowledged whose dispatch has not finished."""
        return self._events.pending()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":  # lifespan and websockets are switched off in uvicorn_config
            return
        path, method = scope.get("path"), scope.get("method")
        answer: _Answer | None
        if path == HEALTH_PATH and method in ("GET", "HEAD"):
            answer = self._health()
        elif path == READY_PATH and method in ("GET", "HEAD") and self._readiness is not None:
            answer = await asyncio.get_running_loop().run_in_executor(self._pool, self._ready)
        elif path == EVENTS_PATH and method == "POST":
            answer = await self._post(scope, receive)
            if answer is None:  # the client went away
                return
        elif path == EVENTS_PATH:
            answer = _Answer(405, headers=(("allow", "POST"),), close=True)
        else:
            answer = _Answer(404, close=True)
        await _send(send, answer)

    def _health(self) -> _Answer:
        """``/healthz``: 200 ``ok``, or 503 ``not live: <why>`` when ``liveness`` names a reason to
        restart (a check that fails is logged and counts as alive: a probe must not restart a
        process over a bug in the check)."""
        reason = None
        if self._liveness is not None:
            try:
                reason = self._liveness()
            except Exception:
                log.exception("liveness check failed [ref %s]", new_reference())
        if reason is None:
            return _Answer(200, b"ok", _PLAIN_NO_STORE)
        return _Answer(503, f"not live: {reason}".encode(), _PLAIN_NO_STORE)

    def _ready(self) -> _Answer:
        """``/readyz``: 200 when the core can answer (``Assistant.upkeep.readiness``), else 503; JSON with
        each check's line. Checked at most once per ``limits.ready_cache_seconds`` (probes share it)."""
        assert self._readiness is not None
        with self._ready_lock:
            now = time.monotonic()
            if self._ready_answer is not None and now - self._ready_answer[0] < self.limits.ready_cache_seconds:
                return self._ready_answer[1]
            try:
                report = self._readiness()
                body = report.model_dump_json().encode()
                status = 200 if report.ready else 503
            except Exception:  # a probe answers, whatever broke: logged with a reference
                reference = new_reference()
                log.exception("readiness check failed [ref %s]", reference)
                failed = {"ready": False, "checks": {"readiness": f"the check failed (reference {reference})"}}
                body = json.dumps(failed).encode()
                status = 503
            answer = _Answer(status, body, (("content-type", "application/json"), ("cache-control", "no-store")))
            self._ready_answer = (now, answer)
            return answer

    async def _post(self, scope: Scope, receive: Receive) -> _Answer | None:
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

        fields = _as_dict(headers)
        sorted_ = _sort(raw, fields)
        if isinstance(sorted_, _Answer):
            answer = sorted_
        else:
            request = _Request(sorted_, bytes(scope.get("query_string") or b"").decode("latin-1"), fields)
            if sorted_.kind == "event":  # its answer is empty whatever Bolt does: acknowledged first
                if self._claim_first:
                    assert self._deliveries is not None
                    claimed = await asyncio.get_running_loop().run_in_executor(
                        self._pool, self._deliveries.begin, sorted_.body)
                    if claimed is None:
                        _log_repeat(sorted_.body, fields)
                        return _EMPTY_200
                    request = replace(request, delivery=claimed)
                self._events.submit(request)
                return _EMPTY_200
            answer = await asyncio.get_running_loop().run_in_executor(self._pool, self._dispatch, request)
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

    def _dispatch_event(self, request: _Request) -> int:
        """An acknowledged event: claimed (unless the door claimed it), dispatched, its dispatch's
        hold released; Bolt's status (200 for a repeat); never raises."""
        delivery = request.delivery
        if delivery is None and self._deliveries is not None:
            try:
                delivery = self._deliveries.begin(request.payload.body)
            except Exception:
                reference = new_reference()
                log.exception("unexpected error claiming a Slack event [ref %s]", reference)
                return 500
            if delivery is None:
                _log_repeat(request.payload.body, request.headers)
                return 200
        try:
            return self._dispatch(request).status
        finally:
            if delivery is not None:
                delivery.release()

    def _dispatch(self, request: _Request) -> _Answer:
        """Bolt's dispatch, in a worker thread (Bolt's ``App`` is synchronous); never raises."""
        try:
            response = self.app.dispatch(bolt_request(request.payload, query=request.query, headers=request.headers))
        except Exception:
            reference = new_reference()
            log.exception("unexpected error dispatching a Slack request [ref %s]", reference)
            return _Answer(500, close=True)
        return _from_bolt(response)


@dataclass(frozen=True)
class _Request:
    """A verified request of a handled shape, ready for Bolt."""

    payload: Accepted
    query: str
    headers: dict[str, list[str]]
    delivery: Delivery | None = None  # an event claimed by the door (step 9)


def _log_repeat(body: Mapping[str, Any], headers: Mapping[str, Sequence[str]]) -> None:
    log.info("dropped repeated delivery of %s (retry %s, reason %s)", body.get("event_id"),
             (headers.get("x-slack-retry-num") or ["0"])[0], (headers.get("x-slack-retry-reason") or ["-"])[0])


def _sort(raw: bytes, headers: Mapping[str, Sequence[str]]) -> Accepted | _Answer:
    """Parse and sort a verified body (``bot/slack/inbound.py``): the payload, or the answer."""
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
    return payload


class BackgroundDispatch(Generic[T]):
    """Dispatches of requests already answered, on ``threads`` threads of their own.

    ``dispatch`` returns Bolt's status and never raises (the door's ``_dispatch`` logs an
    exception with a reference and returns 500). The answer has been sent, so a failure is
    logged and not retried: any other status from 300 up is logged here. ``close`` drops the
    dispatches not started yet and logs how many were unfinished.
    """

    def __init__(self, dispatch: Callable[[T], int], *, threads: int) -> None:
        self._dispatch = dispatch
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paperbot-events")
        self._lock = threading.Lock()
        self._pending = 0

    def submit(self, request: T) -> None:
        with self._lock:
            self._pending += 1
        self._pool.submit(self._dispatch, request).add_done_callback(self._done)

    def pending(self) -> int:
        """Requests submitted whose dispatch has not finished."""
        with self._lock:
            return self._pending

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        unfinished = self.pending()
        if unfinished:
            log.warning("%d acknowledged Slack event(s) not dispatched, or being dispatched, at shutdown", unfinished)

    def _done(self, future: Future[int]) -> None:
        if future.cancelled():  # by ``close``: still counted, so reported
            return
        with self._lock:
            self._pending -= 1
        status = future.result()
        if status >= 300 and status != 500:
            log.warning("an acknowledged Slack event was not handled (Bolt answered %d)", status)


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
