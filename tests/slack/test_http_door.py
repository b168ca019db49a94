"""The HTTP door (uvicorn + ``bot/slack/http_door.py``) under hostile HTTP, over real sockets.

Each probe failed on the wsgiref server this door replaced: a body claimed to be 300 MB was
waited for, a slow body held a thread forever, every half-open connection held a thread, a
timestamp of ``²`` or 5,000 digits and a non-numeric ``Content-Length`` were 500s with a
traceback, replayed slash commands and clicks ran again, deeply nested signed JSON and a click
without actions were 500s. The checks of the door's parts without a server come last.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import quote, urlsplit

import httpx
import pytest

from bot.slack.http_door import BackgroundDispatch, DoorLimits
from bot.slack.http_server import MAX_HEADER_BYTES
from bot.slack.signatures import ReplayGuard, SignatureCheck
from retrieval.assistant import Assistant
from retrieval.results import Readiness
from tests.slack.conftest import SECRET, Bot, BotFactory
from tests.slack.helpers import final_answer, server_closed
from tests.slack.slack_requests import signature

slow = pytest.mark.slow  # the app fixture holds the session index (embedding model)
CHALLENGE = "door-challenge-0123456789"


def _challenge() -> bytes:
    return json.dumps({"token": "x", "challenge": CHALLENGE, "type": "url_verification"}).encode()


def _signed(body: bytes, timestamp: str | None = None) -> dict[str, str]:
    ts = timestamp or str(int(time.time()))
    return {"Content-Type": "application/json", "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": signature(SECRET, ts, body)}


def _connect(bot: Bot, timeout: float = 3.0) -> socket.socket:
    parts = urlsplit(bot.sender.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=timeout)


def _head(headers: dict[str, str] | list[tuple[str, str]], *, method: str = "POST", path: str = "/slack/events") -> bytes:
    items = headers.items() if isinstance(headers, dict) else headers
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"] + [f"{name}: {value}" for name, value in items]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def _response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP response read from ``sock`` (raises ``TimeoutError`` if it does not come)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before a response: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(status_line.split()[1]), headers, body



class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def tracebacks(self) -> list[str]:
        return [record.getMessage() for record in self.records
                if record.exc_info or "Traceback" in record.getMessage()]


@pytest.fixture
def records() -> Iterator[_Records]:
    """Every log record while the test runs (the door and uvicorn log through ``logging``)."""
    handler = _Records()
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


def _still_serving(bot: Bot) -> None:
    health = httpx.get(bot.sender.url.replace("/slack/events", "/healthz"), timeout=5, trust_env=False)
    assert health.status_code == 200 and health.text == "ok"


# --- sizes and time ----------------------------------------------------------------------------


@slow
def test_a_300_mb_claim_is_refused_before_the_body_is_read(bot: Bot) -> None:
    with _connect(bot, timeout=2.0) as sock:  # the old server read (and waited for) the 300 MB
        sock.sendall(_head({"Content-Type": "application/json", "Content-Length": "300000000"}) + b"{}")
        started = time.monotonic()
        status, headers, _ = _response(sock)
        assert status == 413 and time.monotonic() - started < 1.0
        assert headers.get("connection") == "close" and server_closed(sock)
    _still_serving(bot)


@slow
@pytest.mark.parametrize(("headers", "expected"), [
    pytest.param({"Transfer-Encoding": "chunked"}, 411, id="chunked"),
    pytest.param({}, 411, id="no-length"),
    pytest.param({"Content-Length": str(1024 * 1024 + 1)}, 413, id="one-byte-over-the-cap"),
])
def test_bodies_without_a_length_or_over_the_cap_are_refused_unread(bot: Bot, headers: dict[str, str],
                                                                     expected: int) -> None:
    body = _challenge()
    with _connect(bot) as sock:
        sock.sendall(_head({**_signed(body), **headers}))  # headers only: the answer must not wait for a body
        status, _, _ = _response(sock)
    assert status == expected


@slow
@pytest.mark.parametrize("body", [
    pytest.param(b"zz\r\nnot-a-chunk\r\n", id="chunk-size-not-hex"),
    pytest.param(b"3\r\nabcXY\r\n", id="chunk-longer-than-its-size"),
])
def test_a_burst_of_invalid_chunked_bodies_logs_no_traceback(bot: Bot, records: _Records,
                                                             capsys: pytest.CaptureFixture[str], body: bytes) -> None:
    """uvicorn answers an invalid chunk with its own 400 while the door has a 411 on its way for
    the same request; the door must not try to answer a request the server already answered."""
    statuses = []
    for _ in range(50):
        with _connect(bot) as sock:  # no signature: anyone on the network can send this
            sock.sendall(_head({"Transfer-Encoding": "chunked"}) + body)
            statuses.append(_response(sock)[0])
            assert server_closed(sock)
    assert set(statuses) <= {400, 411}, statuses
    _still_serving(bot)
    assert records.tracebacks() == [] and "Traceback" not in capsys.readouterr().err
    assert [record.getMessage() for record in records.records if record.levelno >= logging.ERROR] == []


@slow
def test_a_body_slower_than_the_deadline_gets_408_and_the_connection_closed(make_bot: BotFactory) -> None:
    bot = make_bot(limits=DoorLimits(body_deadline_seconds=0.5))
    body = _challenge()
    with _connect(bot, timeout=3.0) as sock:  # the old server had no read timeout at all
        sock.sendall(_head({**_signed(body), "Content-Length": str(len(body))}) + body[:10])
        started = time.monotonic()
        status, _, _ = _response(sock)
        assert status == 408 and 0.4 < time.monotonic() - started < 2.5
        assert server_closed(sock)
    _still_serving(bot)


@slow
def test_headers_that_do_not_arrive_in_time_get_408_and_the_connection_closed(make_bot: BotFactory) -> None:
    bot = make_bot(limits=DoorLimits(head_deadline_seconds=0.5))
    with _connect(bot, timeout=3.0) as sock:  # uvicorn alone keeps such a connection open for ever
        sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        started = time.monotonic()
        status, headers, _ = _response(sock)
        assert status == 408 and headers.get("connection") == "close"
        assert 0.4 < time.monotonic() - started < 2.5 and server_closed(sock)
    with _connect(bot, timeout=3.0) as sock:  # a connection that sends nothing at all: the same
        status, _, _ = _response(sock)
        assert status == 408 and server_closed(sock)
    _still_serving(bot)


@slow
def test_a_head_sent_slowly_but_in_time_is_served_and_kept_alive_requests_get_their_own_deadline(
        make_bot: BotFactory) -> None:
    bot = make_bot(limits=DoorLimits(head_deadline_seconds=1.0))
    health = _head({}, method="GET", path="/healthz")
    with _connect(bot, timeout=5.0) as sock:
        for delay, piece in ((0.0, health[:10]), (0.3, health[10:20]), (0.3, health[20:])):
            time.sleep(delay)  # the head takes 0.6 s in all, inside the deadline
            sock.sendall(piece)
        assert _response(sock)[0] == 200
        time.sleep(0.6)  # 1.2 s after the connection opened: the next request's deadline started afresh
        sock.sendall(health)
        assert _response(sock)[0] == 200


@slow
def test_half_open_connections_hold_no_thread_and_health_still_answers(bot: Bot) -> None:
    _still_serving(bot)  # the server's own threads exist before counting
    threads = threading.active_count()
    held: list[socket.socket] = []
    try:
        for _ in range(200):  # the old server started a thread for each and kept it
            sock = _connect(bot)
            sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
            held.append(sock)
        _still_serving(bot)  # queued after the 200, so all of them were accepted by now
        assert threading.active_count() <= threads + 2, threading.enumerate()
    finally:
        for sock in held:
            sock.close()


@slow
def test_a_header_block_that_never_ends_is_cut_at_the_limit(bot: Bot) -> None:
    """What a half-open connection can hold: at most ``MAX_HEADER_BYTES`` of unfinished headers."""
    with _connect(bot) as sock:
        sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sent = 0
        while sent < 4 * MAX_HEADER_BYTES and not select.select([sock], [], [], 0.01)[0]:  # until it answers
            sock.sendall(b"X-Padding: " + b"a" * 4096 + b"\r\n")
            sent += 4096
        assert sent <= 2 * MAX_HEADER_BYTES
        status, headers, _ = _response(sock)
        assert status == 400 and headers.get("connection") == "close" and server_closed(sock)


# --- malformed headers ---------------------------------------------------------------------------


@slow
@pytest.mark.parametrize("timestamp", [
    pytest.param([b"\xb2"], id="superscript-two-latin-1"),  # "²" once decoded as HTTP headers are
    pytest.param(["²".encode()], id="superscript-two-utf-8"),
    pytest.param([b"1" * 5000], id="5000-digits"),
    pytest.param([], id="missing"),
    pytest.param([b""], id="empty"),
    pytest.param([b"1700000000.5"], id="fraction"),
    pytest.param([b"-1"], id="negative"),
    pytest.param([b"now", b"now"], id="twice"),
])
def test_malformed_timestamps_are_401_without_a_traceback(bot: Bot, records: _Records,
                                                          capsys: pytest.CaptureFixture[str],
                                                          timestamp: list[bytes]) -> None:
    body = _challenge()
    now = str(int(time.time()))
    headers: list[tuple[bytes, bytes]] = [(b"Content-Type", b"application/json"),
                                          (b"X-Slack-Signature", signature(SECRET, now, body).encode())]
    headers += [(b"X-Slack-Request-Timestamp", now.encode() if value == b"now" else value) for value in timestamp]
    response = httpx.post(bot.sender.url, content=body, headers=headers, timeout=5, trust_env=False)
    assert response.status_code == 401, (response.status_code, response.text[:200])
    assert CHALLENGE not in response.text
    assert records.tracebacks() == [] and "Traceback" not in capsys.readouterr().err
    assert [call.method for call in bot.api.calls] == ["auth.test"]  # nothing reached a listener


@slow
@pytest.mark.parametrize("length", ["abc", "²", "1e3", "-1", "0x10"])
def test_a_content_length_that_is_not_a_number_is_400_without_a_traceback(
    bot: Bot, records: _Records, capsys: pytest.CaptureFixture[str], length: str
) -> None:
    with _connect(bot) as sock:
        sock.sendall(_head({"Content-Type": "application/json", "Content-Length": length}) + b"{}")
        status, _, _ = _response(sock)
    assert status == 400
    assert records.tracebacks() == [] and "Traceback" not in capsys.readouterr().err
    _still_serving(bot)


# --- replays -------------------------------------------------------------------------------------


def _top_level(bot: Bot, channel: str = "CGENERAL1") -> list[dict[str, object]]:
    with bot.api._changed:  # the stand-in's lock: its server threads write messages
        return [message for message in bot.api.messages[channel].values() if not message.get("thread_ts")]


@slow
def test_a_replayed_slash_command_runs_once(bot: Bot, records: _Records) -> None:
    first = bot.sender.command("ask which methods use nonequilibrium entropy limiters?")
    again = bot.sender.replay(first)
    assert first.status_code == 200 and again.status_code == 200 and again.text == ""
    bot.api.wait_calls("chat.update", where=lambda call: "paperbot_vote_up" in json.dumps(call.params.get("blocks")))
    bot.idle()
    assert len(_top_level(bot)) == 1, [m.get("text") for m in _top_level(bot)]
    assert any("replayed Slack request" in record.getMessage() and record.levelno == logging.INFO
               for record in records.records)


@slow
def test_a_replayed_button_click_runs_once(bot: Bot) -> None:
    value = '{"answer_id": "ab12cd34ab12cd34"}'
    click = bot.sender.action("paperbot_vote_up", value, response_url=bot.api.response_url("vote"))
    again = bot.sender.replay(click)
    assert click.status_code == 200 and again.status_code == 200
    bot.sender.action("paperbot_vote_up", value, response_url=bot.api.response_url("marker"))  # a new click
    bot.api.wait_calls("respond", where=lambda call: call.path.endswith("/marker"))
    bot.api.wait_calls("respond", where=lambda call: call.path.endswith("/vote"))
    assert len([call for call in bot.api.calls_to("respond") if call.path.endswith("/vote")]) == 1


@slow
def test_a_request_seen_with_another_signature_is_not_a_replay(bot: Bot) -> None:
    body = _challenge()
    ts = int(time.time())
    for timestamp in (ts, ts - 1):  # the same body, signed twice (as Slack re-signs a redelivery)
        response = bot.sender.post(body, "application/json", timestamp=str(timestamp))
        assert response.status_code == 200 and CHALLENGE in response.text


# --- signed bodies that cannot be parsed, clicks without actions -----------------------------------


DEEP = b"[" * 100_000 + b"]" * 100_000


@slow
@pytest.mark.parametrize(("body", "content_type"), [
    pytest.param(b'{"type": "event_callback", "event": ' + DEEP + b"}", "application/json", id="deep-json"),
    pytest.param(b"payload=" + quote(b'{"type": "block_actions", "actions": ' + DEEP + b"}").encode(),
                 "application/x-www-form-urlencoded", id="deep-payload"),
    pytest.param(b'{"type": "event_callback", "text": "\xff\xfe"}', "application/json", id="invalid-utf8"),
    pytest.param(b'[{"type": "event_callback"}]', "application/json", id="json-array"),
    pytest.param(b'"event_callback"', "application/json", id="json-string"),
])
def test_signed_bodies_that_cannot_be_parsed_are_400(bot: Bot, records: _Records, body: bytes,
                                                      content_type: str) -> None:
    response = bot.sender.post(body, content_type)
    assert response.status_code == 400, (response.status_code, response.text[:200])
    assert records.tracebacks() == []
    _still_serving(bot)


def _event_callback(event: object, **top: object) -> bytes:
    return json.dumps({"type": "event_callback", "team_id": "T0TEST", "api_app_id": "A0TEST", "event": event,
                       "event_id": f"EvODD{time.monotonic_ns()}", **top}).encode()


def _click(payload: dict[str, object]) -> bytes:
    return b"payload=" + quote(json.dumps(payload)).encode()


MENTION = {"type": "app_mention", "user": "UALICE01", "text": "<@UBOTPAPER> graphene", "ts": "1690000000.000900",
           "channel": "CGENERAL1", "event_ts": "1690000000.000900"}
CLICK = {"type": "block_actions", "user": {"id": "UALICE01"}, "team": {"id": "T0TEST"}, "api_app_id": "A0TEST",
         "container": {"type": "message", "channel_id": "CGENERAL1", "message_ts": "1700000000.000001"},
         "actions": [{"action_id": "paperbot_vote_up", "block_id": "b1", "value": '{"answer_id": "ab12cd34ab12cd34"}'}],
         "response_url": "http://127.0.0.1:9/unused"}
JSON, FORM = "application/json", "application/x-www-form-urlencoded"


@slow
@pytest.mark.parametrize(("body", "content_type", "status"), [
    pytest.param(_event_callback(None), JSON, 400, id="event-null"),  # was a 500 (AttributeError in Bolt)
    pytest.param(_click({"type": "view_submission", "user": {"id": "UALICE01"}, "view": {"id": "V1"}}), FORM,
                 200, id="view-submission"),  # was a 500 (KeyError: 'type' in Bolt)
    pytest.param(_event_callback([MENTION]), JSON, 400, id="event-a-list"),
    pytest.param(_event_callback("app_mention"), JSON, 400, id="event-a-string"),
    pytest.param(_event_callback({**MENTION, "type": None}), JSON, 400, id="event-type-null"),
    pytest.param(_event_callback({**MENTION, "text": 42}), JSON, 400, id="text-a-number"),
    pytest.param(_event_callback({**MENTION, "text": {"text": "graphene"}}), JSON, 400, id="text-an-object"),
    pytest.param(_event_callback({**MENTION, "channel": ["CGENERAL1"]}), JSON, 400, id="channel-a-list"),
    pytest.param(_event_callback({**MENTION, "user": {"id": "UALICE01"}}), JSON, 400, id="user-an-object"),
    pytest.param(_event_callback({**MENTION, "ts": 1690000000.0009}), JSON, 400, id="ts-a-number"),
    pytest.param(_event_callback({**MENTION, "type": "message", "channel_type": "im", "channel": ["D1"]}), JSON,
                 400, id="dm-channel-a-list"),
    pytest.param(_event_callback(MENTION, team_id=["T0TEST"]), JSON, 400, id="team-a-list"),
    pytest.param(_event_callback(MENTION, authorizations={"team_id": "T0TEST"}), JSON, 400, id="authorizations-an-object"),
    pytest.param(_event_callback({**MENTION, "type": "reaction_added"}), JSON, 200, id="an-event-we-do-not-handle"),
    pytest.param(json.dumps({"type": "app_rate_limited", "team_id": "T0TEST"}).encode(), JSON, 200, id="app-rate-limited"),
    pytest.param(json.dumps({"type": "url_verification", "challenge": 42}).encode(), JSON, 400, id="challenge-a-number"),
    pytest.param(_click({**CLICK, "actions": "paperbot_vote_up"}), FORM, 400, id="actions-a-string"),
    pytest.param(_click({**CLICK, "actions": [{"value": "x"}]}), FORM, 400, id="action-without-id"),
    pytest.param(_click({**CLICK, "actions": [None]}), FORM, 400, id="action-null"),
    pytest.param(_click({**CLICK, "user": "UALICE01"}), FORM, 400, id="click-user-a-string"),
    pytest.param(_click({**CLICK, "container": ["CGENERAL1"]}), FORM, 400, id="click-container-a-list"),
    pytest.param(_click({**CLICK, "type": "shortcut", "callback_id": "x"}), FORM, 200, id="shortcut"),
    pytest.param(_click({**CLICK, "type": "message_action", "callback_id": "x"}), FORM, 200, id="message-action"),
    pytest.param(b"command=%2Fpaperbot&text=help&channel_id=CGENERAL1", FORM, 400, id="command-without-user"),
    pytest.param(b"ssl_check=1&token=x", FORM, 200, id="ssl-check"),
])
def test_signed_payloads_of_other_shapes_reach_nothing(bot: Bot, records: _Records, capsys: pytest.CaptureFixture[str],
                                                      body: bytes, content_type: str, status: int) -> None:
    """Never a 500 and never a traceback for what a signed request carries. A Slack payload of a
    type paperbot does not handle is acknowledged (200), a malformed one (a handled type with
    fields of the wrong type) is a 400; neither reaches a listener."""
    response = bot.sender.post(body, content_type)
    assert response.status_code == status and response.text == "", (response.status_code, response.text[:200])
    marker = bot.sender.command("help")  # answered after it: whatever it started has run by now
    assert marker.status_code == 200 and "/paperbot summarize" in marker.text
    bot.idle()
    assert [call.method for call in bot.api.calls] == ["auth.test"]  # nothing reached a listener
    assert records.tracebacks() == [] and "Traceback" not in capsys.readouterr().err
    assert [record.getMessage() for record in records.records if record.levelno >= logging.WARNING] == []


@slow
def test_fields_paperbot_does_not_read_are_dropped_before_bolt(bot: Bot, records: _Records) -> None:
    """Bolt 1.30 reads ``enterprise`` (and fails on a list); paperbot does not, so it never gets there."""
    response = bot.sender.post(_event_callback(MENTION, enterprise=["E1"], event_context=None), JSON)
    assert response.status_code == 200
    assert "Graphene" in final_answer(bot.api).text()
    assert records.tracebacks() == []


@slow
def test_a_mention_without_text_is_read_as_empty(bot: Bot, records: _Records) -> None:
    """``text: null`` is read as no text (an empty mention gets the help), not as a crash."""
    response = bot.sender.post(_event_callback({**MENTION, "text": None}), JSON)
    assert response.status_code == 200
    [reply] = bot.api.wait_calls("chat.postMessage")
    assert "/paperbot summarize" in reply.text() and reply.params["thread_ts"] == MENTION["ts"]
    assert records.tracebacks() == []


@slow
def test_a_click_without_actions_is_a_400_and_nothing_is_done(bot: Bot, records: _Records) -> None:
    response = bot.sender.action("paperbot_vote_up", "", actions=[], response_url=bot.api.response_url("empty"))
    assert response.status_code == 400 and response.text == ""  # Bolt 1.30 failed on it (IndexError): a 500
    bot.sender.action("paperbot_vote_up", '{"answer_id": "ab12cd34ab12cd34"}',
                      response_url=bot.api.response_url("marker"))  # a real click, answered after it
    bot.api.wait_calls("respond", where=lambda call: call.path.endswith("/marker"))
    assert [call.method for call in bot.api.calls] == ["auth.test", "respond"]
    assert records.tracebacks() == []


# --- acknowledgement before dispatch --------------------------------------------------------------


@slow
def test_an_event_is_acknowledged_before_its_dispatch(bot: Bot, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a burst, dispatching an event waited seconds for the Slack state file (the event's
    claim, once the dedupe middleware's write), and the acknowledgement waited for the dispatch
    (issue #30 item 9). On SQLite the claim is made after the acknowledgement: here the dispatch
    is held inside the claim until the answer has arrived."""
    held, release, done = threading.Event(), threading.Event(), threading.Event()
    deliveries = bot.runtime.deps.deliveries
    begin = deliveries.begin

    def held_begin(body: dict) -> object:
        held.set()
        release.wait(15)
        done.set()
        return begin(body)

    monkeypatch.setattr(deliveries, "begin", held_begin)
    try:
        response, ts = bot.sender.mention("graphene magnetophonon resonance")
        assert response.status_code == 200 and response.text == ""
        assert not done.is_set()  # answered while its dispatch was still held
        assert held.wait(10) and bot.server.door.pending_events() == 1
    finally:
        release.set()
    final = final_answer(bot.api)  # dispatched once released, and answered
    assert "Graphene" in final.text() and bot.api.messages["CGENERAL1"][final.params["ts"]]["thread_ts"] == ts
    bot.idle()
    assert bot.server.door.pending_events() == 0


@slow
def test_a_command_is_still_answered_by_its_dispatch(bot: Bot) -> None:
    """A slash command's answer is Bolt's (the help, an error): it waits for the dispatch."""
    response = bot.sender.command("summarize --since 20x")
    assert response.status_code == 200 and "--since takes a year" in response.text


# --- the parts, without a server -------------------------------------------------------------------


def test_background_dispatch_counts_what_is_unfinished_and_logs_failures(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    started: list[str] = []

    def dispatch(name: str) -> int:
        started.append(name)
        release.wait(10)
        return {"ok": 200, "unmatched": 404, "crashed": 500}[name]

    background: BackgroundDispatch[str] = BackgroundDispatch(dispatch, threads=1)
    with caplog.at_level(logging.WARNING, logger="bot.slack.http_door"):
        for name in ("ok", "unmatched", "crashed"):
            background.submit(name)
        assert background.pending() == 3
        release.set()
        stuck = threading.Event()
        timer = threading.Timer(10, stuck.set)
        timer.start()
        while background.pending() and not stuck.wait(0.01):  # polled; a stuck dispatch ends it after 10 s
            pass
        timer.cancel()
        assert background.pending() == 0 and started == ["ok", "unmatched", "crashed"]
        assert [r.getMessage() for r in caplog.records] == ["an acknowledged Slack event was not handled (Bolt answered 404)"]
        caplog.clear()
        release.clear()
        for name in ("ok", "ok", "ok"):
            background.submit(name)
        background.close()  # one running, two never started
        assert [r.getMessage() for r in caplog.records] == [
            "3 acknowledged Slack event(s) not dispatched, or being dispatched, at shutdown"]
        release.set()



class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("timestamp", "sig"), [
    ("²", "v0=" + "0" * 64), ("1" * 5000, "v0=" + "0" * 64), ("", "v0=" + "0" * 64), (" 1000", "v0=" + "0" * 64),
    ("1000", ""), ("1000", "v1=" + "0" * 64), ("1000", "v0=" + "0" * 63), ("1000", "v0=" + "G" * 64),
    ("1000", "v0=" + "0" * 64 + "\n"),
])
def test_signature_check_never_raises_on_malformed_headers(timestamp: str, sig: str) -> None:
    check = SignatureCheck("secret", clock=_Clock(1000))
    assert check.plausible(timestamp, sig) is False
    assert check.valid(timestamp, sig, b"{}") is False


def test_signature_check_window_edges() -> None:
    clock = _Clock(10_000)
    check = SignatureCheck("secret", clock=clock)
    for offset, accepted in ((0, True), (300, True), (-300, True), (301, False), (-301, False)):
        ts = str(10_000 + offset)
        assert check.valid(ts, signature("secret", ts, b"{}"), b"{}") is accepted, offset
    assert check.valid("10000", signature("other", "10000", b"{}"), b"{}") is False
    assert check.valid("10000", signature("secret", "10000", b"{}"), b"{ }") is False


def test_replay_guard_remembers_for_the_window_then_forgets() -> None:
    clock = _Clock(10_000)
    guard = ReplayGuard(clock=clock)
    assert guard.first_sight("10000", "v0=a") is True
    assert guard.first_sight("10000", "v0=a") is False
    assert guard.first_sight("10000", "v0=b") is True
    assert guard.first_sight("10200", "v0=c") is True  # ahead of the clock: kept until 10500
    clock.now = 10_301  # the first two can no longer pass the window check: expired
    assert guard.first_sight("10300", "v0=d") is True
    assert len(guard) == 2
    guard.forget("10300", "v0=d")  # not handled: a redelivery is not a replay
    assert guard.first_sight("10300", "v0=d") is True


# --- readiness ---------------------------------------------------------------------------------


def _ready(bot: Bot) -> httpx.Response:
    return httpx.get(bot.sender.url.replace("/slack/events", "/readyz"), timeout=30, trust_env=False)


@slow
def test_readyz_reports_each_check_and_a_burst_of_probes_costs_one_check(
        make_bot: BotFactory, assistant: Assistant, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.slack.conftest import make_settings

    facade = Assistant(make_settings(tmp_path / "ready"), index=assistant.index, chat_model=None)
    checked: list[Readiness] = []
    real = facade.upkeep.readiness

    def counted() -> Readiness:
        checked.append(real())
        return checked[-1]

    monkeypatch.setattr(facade.upkeep, "readiness", counted)
    bot = make_bot(core=facade)
    response = _ready(bot)
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    report = response.json()
    assert report["ready"] is True and set(report["checks"]) == {"database", "vector_index"}
    assert all(line.startswith("ok: ") for line in report["checks"].values())
    assert "schema" in report["checks"]["database"] and "vectors" in report["checks"]["vector_index"]
    for _ in range(5):  # a load balancer's probes: one check per READY_CACHE_SECONDS
        assert _ready(bot).status_code == 200
    assert len(checked) == 1
    assert httpx.head(bot.sender.url.replace("/slack/events", "/readyz"), timeout=5, trust_env=False).status_code == 200


@slow
def test_readyz_is_503_naming_what_is_down_while_healthz_stays_200(make_bot: BotFactory, tmp_path) -> None:
    from tests.index.conftest import free_port
    from tests.slack.conftest import make_settings

    url = f"http://127.0.0.1:{free_port()}"  # a Chroma server that is not there
    core = Assistant(make_settings(tmp_path / "down", chroma_url=url), chat_model=None)
    bot = make_bot(core=core)
    response = _ready(bot)
    assert response.status_code == 503
    report = response.json()
    assert report["ready"] is False
    assert report["checks"]["vector_index"].startswith(f"Cannot reach the Chroma server at {url}.")
    assert report["checks"]["database"].startswith("ok: ")  # the records do not need the server
    _still_serving(bot)  # alive, not ready: the balancer sends its traffic elsewhere
