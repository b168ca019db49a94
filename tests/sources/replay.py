"""Replay recorded HTTP responses: an ``httpx.MockTransport`` handler and a local server.

Recordings are the ``{url, status_code, body}`` JSON files under ``tests/fixtures/`` (real
API responses, re-wrapped). A request is answered by the recording whose method, path
(percent-decoded) and query (as a sorted multiset of pairs, minus ``ignore_params``) match;
the host is ignored, so the same recordings serve a ``MockTransport`` aimed at the real API
host and a ``ReplayServer`` on 127.0.0.1. Several recordings for one request are served in
order, the last one repeating (a 429 then a 200, or a 503 that stays down).

Bodies: a dict/list body is served as JSON. A string body is served as UTF-8, except that
some recorders stored the raw UTF-8 bytes decoded as Latin-1 (the arXiv recordings show
"WÃ¼bben" for "Wübben"); such text is turned back into the original bytes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx

from retrieval.config import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

#: (method, percent-decoded path, sorted query pairs): what a request must match.
RequestKey = tuple[str, str, tuple[tuple[str, str], ...]]


def body_bytes(body: Any) -> tuple[bytes, str]:
    """(bytes to serve, content type) for a recorded body."""
    if isinstance(body, (dict, list)):
        return json.dumps(body).encode("utf-8"), "application/json"
    if isinstance(body, bytes):
        raw = body
    else:
        raw = body.encode("utf-8")
        if all(ord(ch) < 256 for ch in body):
            latin = body.encode("latin-1")
            try:
                latin.decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                raw = latin  # the recorder had decoded UTF-8 bytes as Latin-1
    text = raw.lstrip()[:100]
    if text[:1] in (b"{", b"["):
        kind = "application/json"
    else:
        kind = "application/atom+xml" if text[:1] == b"<" else "text/plain"
    return raw, kind


@dataclass
class Recording:
    """One response to serve for one request."""

    url: str
    status_code: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "GET"

    def key(self, ignore: frozenset[str]) -> RequestKey:
        return request_key(self.method, self.url, ignore)


def recording(url: str, body: Any, status_code: int = 200, headers: Mapping[str, str] | None = None,
              method: str = "GET") -> Recording:
    """A recording from parts (a real recorded body re-served at another URL/status/header)."""
    raw, kind = body_bytes(body)
    return Recording(url=url, status_code=status_code, body=raw,
                     headers={"Content-Type": kind, **(headers or {})}, method=method)


def load(path: str | Path, **changes: Any) -> Recording:
    """A recorded ``{url, status_code, body}`` file, optionally re-keyed (``url=``) or altered
    (``status_code=``, ``headers=``): used where no recording of that exact case exists."""
    path = Path(path)
    if not path.is_absolute():
        path = FIXTURES / path
    data = json.loads(path.read_text(encoding="utf-8"))
    return recording(
        changes.get("url", data["url"]),
        changes.get("body", data["body"]),
        changes.get("status_code", data["status_code"]),
        changes.get("headers"),
    )


def request_key(method: str, url: str, ignore: frozenset[str] = frozenset()) -> RequestKey:
    """(method, percent-decoded path, sorted query pairs minus ``ignore``): what must match."""
    parts = urlsplit(url)
    query = tuple(sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ignore))
    return method.upper(), unquote(parts.path), query


class Replay:
    """Serves recordings by request; remembers every request it saw."""

    def __init__(self, recordings: Iterable[Recording], *, ignore_params: Iterable[str] = ()) -> None:
        self.ignore = frozenset(ignore_params)
        self._queues: dict[RequestKey, list[Recording]] = {}
        for rec in recordings:
            self._queues.setdefault(rec.key(self.ignore), []).append(rec)
        self.requests: list[httpx.Request] = []
        self.unmatched: list[str] = []
        self._lock = threading.Lock()

    def lookup(self, method: str, url: str) -> Recording | None:
        with self._lock:
            queue = self._queues.get(request_key(method, url, self.ignore))
            if not queue:
                self.unmatched.append(f"{method} {url}")
                return None
            return queue.pop(0) if len(queue) > 1 else queue[0]

    # --- httpx.MockTransport ---------------------------------------------------------------

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        rec = self.lookup(request.method, str(request.url))
        if rec is None:
            raise AssertionError(f"no recording for {request.method} {request.url}")
        return httpx.Response(rec.status_code, headers=rec.headers, content=rec.body, request=request)

    def client(self) -> httpx.Client:
        """An ``httpx.Client`` whose transport is this replay (never touches the network)."""
        return httpx.Client(transport=httpx.MockTransport(self.handler), follow_redirects=True)

    @property
    def params(self) -> list[dict[str, str]]:
        """Query parameters of every request seen, in order."""
        return [dict(request.url.params) for request in self.requests]


class ReplayServer:
    """``with ReplayServer(replay) as server:`` a real HTTP server on 127.0.0.1 serving it."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.paths.append(self.path)
                rec = outer.replay.lookup("GET", self.path)
                if rec is None:
                    body, status, headers = b"no recording for this request", 501, {"Content-Type": "text/plain"}
                else:
                    body, status, headers = rec.body, rec.status_code, rec.headers
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address: (host, port)
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# --- test doubles shared by the connector tests ------------------------------------------------


class FakeClock:
    """A monotonic clock that only moves when ``sleep`` is called; records every wait."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def make_settings(**overrides: Any) -> Settings:
    """Settings for connector tests: no .env, every value the connectors read set explicitly."""
    values: dict[str, Any] = {
        "arxiv_url": "https://export.arxiv.org/api/query",
        "openalex_url": "https://api.openalex.org",
        "crossref_url": "https://api.crossref.org",
        "contact_email": None,
        "arxiv_delay": 3.0,
        "http_timeout": 5.0,
        "http_max_retries": 3,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)
