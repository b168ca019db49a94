"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests (stdlib only).

Serves ``POST /v1/chat/completions`` (and ``GET /v1/models``). Each request takes the next
scripted ``StubReply`` (the last one, or ``default``, repeats once the script runs out):

* 200 with ``text``: a ``chat.completion`` JSON, or, when the request asks ``stream: true``,
  SSE ``chat.completion.chunk`` events (one per word, or the given ``chunks``) then
  ``data: [DONE]``;
* any other ``status``: an OpenAI-style error body, with ``headers`` such as
  ``{"retry-after-ms": "5"}`` (the openai SDK honours it, so retry tests stay fast);
* ``delay`` seconds before answering (released early by ``stop()``), for timeout tests;
* ``stall`` seconds of silence after the headers, before piece ``stall_at`` of a stream (released
  early by ``stop()``; with ``pings``, an SSE comment every ``PING_EVERY`` seconds meanwhile): a
  server still reading the prompt (``stall_at=0``), or one that stopped writing mid-reply;
* ``raw_body`` to send bytes verbatim (garbage, truncated JSON).

Other POST paths answer 404, except ``/tokenize`` when the server is made with ``tokenize=True``
(llama.cpp's endpoint: ``{"content": text}`` -> ``{"tokens": [...]}``, one token per word here).

Every request is recorded (method, path, lowercased headers, parsed JSON body) in
``server.requests``; ``server.chat_requests`` keeps the chat completions only.

    with OpenAIStubServer([StubReply(status=500), StubReply(text="Hi [1].")]) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="test", ...)
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

PING_EVERY = 0.02  # seconds between the SSE pings of a stall with ``pings``


@dataclass(frozen=True)
class StubReply:
    """One scripted response."""

    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunks: tuple[str, ...] | None = None  # explicit stream pieces; default: words of ``text``
    raw_body: bytes | None = None  # sent verbatim with ``status`` instead of any JSON
    error_message: str = "scripted failure"
    finish_reason: str = "stop"  # "length": the reply hit max_tokens
    cut: bool = False  # the stream ends after the pieces: no finish chunk, no [DONE]
    piece_delay: float = 0.0  # seconds between streamed pieces (an SSE ping comment in between)
    stall_at: int | None = None  # the streamed piece before which the server goes silent ...
    stall: float = 0.0  # ... for this long (released by stop())
    pings: bool = False  # ... sending SSE ping comments meanwhile


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lowercased names
    body: Any  # parsed JSON, or the raw text when it is not JSON


class OpenAIStubServer:
    """Start with ``start()`` or a ``with`` block; ``base_url`` ends in ``/v1``."""

    def __init__(self, replies: Iterable[StubReply] = (), *, default: StubReply | None = None,
                 model: str = "stub-model", tokenize: bool = False) -> None:
        self._script = list(replies)
        self.tokenize = tokenize
        self._default = default
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.model = model
        self.requests: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> Self:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="openai-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()  # wake delayed handlers so shutdown is immediate
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address: (host, port)
        return f"http://{host}:{port}/v1"

    # --- script ----------------------------------------------------------------------------
    def script(self, *replies: StubReply) -> None:
        """Append replies to the queue."""
        with self._lock:
            self._script.extend(replies)

    def _next_reply(self) -> StubReply:
        with self._lock:
            if len(self._script) > 1 or (self._script and self._default is not None):
                return self._script.pop(0)
            if self._script:
                return self._script[0]
            return self._default or StubReply(text="")

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._release.wait(seconds)

    def _stall(self, seconds: float, ping: Callable[[], None] | None) -> None:
        """Silence for ``seconds`` (until ``stop()``), calling ``ping`` every ``PING_EVERY`` s."""
        end = time.monotonic() + seconds
        while not self._release.is_set() and time.monotonic() < end:
            self._release.wait(PING_EVERY if ping else seconds)
            if ping is not None:
                ping()


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text) or [""]


def _make_handler(server: OpenAIStubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _headers(self) -> dict[str, str]:
            return {key.lower(): value for key, value in self.headers.items()}

        def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            server._record(RecordedRequest("GET", self.path, self._headers(), None))
            self._send_json(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = raw.decode("utf-8", "replace")
            server._record(RecordedRequest("POST", self.path, self._headers(), body))
            if not self.path.endswith("/chat/completions"):
                content = body.get("content") if isinstance(body, dict) else None
                if self.path == "/tokenize" and server.tokenize and isinstance(content, str):
                    self._send_json(200, {"tokens": list(range(len(content.split())))})
                else:
                    self._send_json(404, {"error": {"message": "not found", "code": "404"}})
                return
            reply = server._next_reply()
            server._wait(reply.delay)
            with suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                self._respond(reply, body if isinstance(body, dict) else {})

        def _respond(self, reply: StubReply, body: dict[str, Any]) -> None:
            if reply.raw_body is not None:
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(reply.raw_body)))
                self.end_headers()
                self.wfile.write(reply.raw_body)
                return
            if reply.status != 200:
                error = {"error": {"message": reply.error_message, "type": "server_error", "code": str(reply.status)}}
                self._send_json(reply.status, error, reply.headers)
                return
            created = int(time.time())
            model = body.get("model") or server.model
            if body.get("stream"):
                self._stream(reply, model, created)
                return
            completion = {
                "id": "chatcmpl-stub",
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                             "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 10, "completion_tokens": len(reply.text.split()),
                          "total_tokens": 10 + len(reply.text.split())},
            }
            self._send_json(200, completion, reply.headers)

        def _stream(self, reply: StubReply, model: str, created: int) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            pieces = list(reply.chunks) if reply.chunks is not None else _words(reply.text)
            for i, piece in enumerate(pieces):
                if reply.stall_at == i:
                    self.wfile.flush()
                    server._stall(reply.stall, self._ping if reply.pings else None)
                if reply.piece_delay and i:
                    time.sleep(reply.piece_delay)  # a slow model; the ping keeps per-read timeouts quiet
                    self.wfile.write(b": ping\n\n")
                    self.wfile.flush()
                delta: dict[str, Any] = {"content": piece}
                if i == 0:
                    delta["role"] = "assistant"
                self._event({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": created,
                             "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            if reply.cut:
                self.wfile.flush()
                return
            self._event({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": created,
                         "model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _ping(self) -> None:
            self.wfile.write(b": ping\n\n")
            self.wfile.flush()

        def _event(self, payload: dict[str, Any]) -> None:
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            self.wfile.flush()

    return Handler
