"""uvicorn serving the HTTP door (``bot/slack/http_door.py``): a listening socket and the settings.

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
* ``http=HeadDeadlineProtocol`` (``bot/slack/uvicorn_adapter.py``): uvicorn has no timeout for a
  request whose headers never finish (its keep-alive timer only starts after a first response,
  and stops at the first byte of the next request), so its h11 protocol, extended there, adds
  one: the request line and headers must be complete ``DoorLimits.head_deadline_seconds`` (10 s)
  after the connection opened or the previous response ended, or the client gets a 408 and the
  connection is closed. Until then a
  half-sent request costs an asyncio transport, about 4.4 KB measured (5,000 of them: +17 MiB
  RSS, no thread), plus at most 16 KiB of unfinished headers; ``limit_concurrency`` bounds how
  many are open at once.
* ``timeout_graceful_shutdown=10``: on SIGINT/SIGTERM requests in flight get 10 s to finish.
* No access log, no ``Server`` header, no proxy headers trusted, no lifespan, no websockets; the
  asyncio event loop (no uvloop dependency); one worker process (replay memory is per process).
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn

from bot.slack.http_door import EVENTS_PATH, ASGIApp, DoorLimits, SlackDoor
from bot.slack.uvicorn_adapter import with_head_deadline

# uvicorn's settings (see the module docstring for the reasons)
LIMIT_CONCURRENCY = 512
BACKLOG = 2048
KEEP_ALIVE_SECONDS = 5
MAX_HEADER_BYTES = 16 * 1024
GRACEFUL_SHUTDOWN_SECONDS = 10


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (``OSError`` when the address is taken or not ours)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=BACKLOG)


def uvicorn_config(app: ASGIApp) -> uvicorn.Config:
    limits = getattr(app, "limits", None)
    head_deadline = limits.head_deadline_seconds if isinstance(limits, DoorLimits) else DoorLimits.head_deadline_seconds
    return uvicorn.Config(
        app,
        http=with_head_deadline(head_deadline),
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
        self.door = door
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
