"""``bot/slack/uvicorn_adapter.py`` against the installed uvicorn: the request-head deadline and the
one-answer rule still work, and what the subclass overrides is still uvicorn's.

A uvicorn release that renames a hook, stops creating the attributes read there or changes when
it calls them fails here, in about a second, with a plain ASGI app (the door's own tests of the
same guarantees, with the whole Slack app, are slow: ``tests/slack/test_http_door.py``).
"""

from __future__ import annotations

import inspect
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from bot.slack.http_door import DoorLimits, Message, Receive, Scope, Send
from bot.slack.http_server import bind, uvicorn_config
from bot.slack.uvicorn_adapter import PROTOCOL_HOOKS, HeadDeadlineProtocol
from tests.slack.helpers import server_closed

DEADLINE = 0.4


@dataclass
class EchoApp:
    """Reads the whole body, then answers 200 with its length; 411 at once for a chunked body
    (as the door does, before reading it)."""

    limits: DoorLimits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        if headers.get(b"transfer-encoding") == b"chunked":
            await self._answer(send, 411, b"")
            return
        size, more = 0, True
        while more:
            message: Message = await receive()
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        await self._answer(send, 200, str(size).encode())

    @staticmethod
    async def _answer(send: Send, status: int, body: bytes) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture
def address() -> Iterator[tuple[str, int]]:
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn_config(EchoApp(DoorLimits(head_deadline_seconds=DEADLINE))))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        thread.join(0.01)
    try:
        yield sock.getsockname()[:2]
    finally:
        server.should_exit = True
        thread.join(10)


def _connect(address: tuple[str, int]) -> socket.socket:
    return socket.create_connection(address, timeout=5.0)


def _request(body: bytes = b"hello") -> bytes:
    return b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def _responses(sock: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """``count`` responses read from ``sock`` (each with a Content-Length), as (status, body)."""
    data, found = b"", list[tuple[int, bytes]]()
    while len(found) < count:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            lines = head.decode("latin-1").split("\r\n")
            length = next((int(line.split(":")[1]) for line in lines if line.lower().startswith("content-length")), 0)
            if len(rest) >= length:
                found.append((int(lines[0].split()[1]), rest[:length]))
                data = rest[length:]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"closed after {found}: {data!r}")
        data += chunk
    return found



def test_the_hooks_overridden_are_uvicorns_own() -> None:
    for name in PROTOCOL_HOOKS:
        ours, theirs = vars(HeadDeadlineProtocol)[name], getattr(H11Protocol, name, None)
        assert callable(theirs), f"uvicorn's H11Protocol has no {name} any more: update bot/slack/uvicorn_adapter.py"
        assert list(inspect.signature(theirs).parameters) == list(inspect.signature(ours).parameters), name
    assert set(PROTOCOL_HOOKS) == {name for name in vars(HeadDeadlineProtocol)
                                   if callable(getattr(H11Protocol, name, None)) and not name.startswith("__")}


def test_a_head_that_does_not_arrive_in_time_gets_408(address: tuple[str, int]) -> None:
    with _connect(address) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Le")
        started = time.monotonic()
        assert _responses(sock, 1) == [(408, b"")]
        assert DEADLINE * 0.8 < time.monotonic() - started < DEADLINE + 3 and server_closed(sock)
    with _connect(address) as sock:  # nothing sent at all: the same
        assert _responses(sock, 1) == [(408, b"")] and server_closed(sock)


def test_a_kept_alive_connection_gets_a_new_deadline_after_each_response(address: tuple[str, int]) -> None:
    with _connect(address) as sock:
        time.sleep(DEADLINE * 0.6)
        sock.sendall(_request(b"one") + _request(b"three"))  # pipelined: both answered, in order
        assert _responses(sock, 2) == [(200, b"3"), (200, b"5")]
        time.sleep(DEADLINE * 0.3)
        sock.sendall(_request(b"")[:20])
        time.sleep(DEADLINE * 0.3)  # past the deadline counted from the connection's start ...
        sock.sendall(_request(b"")[20:])  # ... but not from the last response's end
        assert _responses(sock, 1) == [(200, b"0")]
        started = time.monotonic()
        assert _responses(sock, 1) == [(408, b"")]  # idle again: the deadline runs afresh
        assert time.monotonic() - started > DEADLINE * 0.5 and server_closed(sock)


def test_a_request_the_server_answered_itself_gets_no_second_answer(address: tuple[str, int],
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    chunked = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot-a-chunk\r\n"
    statuses = []
    for _ in range(20):
        with _connect(address) as sock:
            sock.sendall(chunked)
            statuses.append(_responses(sock, 1)[0][0])
            assert server_closed(sock)
    assert set(statuses) <= {400, 411} and 400 in statuses, statuses
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], caplog.text
