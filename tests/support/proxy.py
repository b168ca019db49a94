"""A small round-robin HTTP load balancer for the cluster tests, on 127.0.0.1.

Each request goes to the next upstream in turn (or to the one a test names with the
``X-Proxy-To`` header: its index), forwarded with its body and Slack's headers; the answer comes
back with ``X-Proxy-Upstream`` naming the upstream's index. An upstream that cannot be reached,
or drops the connection before answering, gives a 502: as with a real load balancer, the caller
(Slack) sees no 200 and sends again. Every exchange is recorded (``exchanges``).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

FORWARDED = ("content-type", "x-slack-request-timestamp", "x-slack-signature", "x-slack-retry-num",
             "x-slack-retry-reason")


@dataclass(frozen=True)
class Exchange:
    upstream: int
    path: str
    status: int  # 502: the upstream did not answer


class RoundRobinProxy:
    def __init__(self, upstreams: list[str], *, timeout: float = 30.0) -> None:
        """``upstreams``: base URLs (``http://127.0.0.1:PORT``)."""
        self.upstreams = list(upstreams)
        self.exchanges: list[Exchange] = []
        self._turns = itertools.count()
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=timeout, trust_env=False,
                                    limits=httpx.Limits(max_connections=256, max_keepalive_connections=64))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.request_queue_size = 512
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> RoundRobinProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def forward(self, method: str, path: str, headers: dict[str, str], body: bytes,
                pinned: int | None) -> tuple[int, int, dict[str, str], bytes]:
        """(upstream index, status, headers, body) of one forwarded request."""
        with self._lock:
            index = pinned if pinned is not None else next(self._turns) % len(self.upstreams)
        try:
            answer = self._client.request(method, self.upstreams[index] + path, headers=headers, content=body)
            status, kept, content = answer.status_code, {"content-type": answer.headers.get("content-type", "")}, answer.content
        except httpx.HTTPError:
            status, kept, content = 502, {}, b""
        with self._lock:
            self.exchanges.append(Exchange(index, path, status))
        return index, status, kept, content

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _relay(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {name: value for name, value in self.headers.items() if name.lower() in FORWARDED}
                pinned = self.headers.get("x-proxy-to")
                index, status, kept, content = proxy.forward(self.command, self.path, headers, body,
                                                             int(pinned) if pinned is not None else None)
                self.send_response(status)
                for name, value in kept.items():
                    if value:
                        self.send_header(name, value)
                self.send_header("X-Proxy-Upstream", str(index))
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = _relay

        return Handler
