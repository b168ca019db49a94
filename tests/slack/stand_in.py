"""A local stand-in for the Slack Web API that records every call and can be scripted.

Serves ``/api/<method>`` (JSON, form and query encodings, as slack_sdk sends them), the
``upload_url`` of ``files.getUploadURLExternal`` and ``response_url`` posts, on 127.0.0.1.
Messages posted and updated are kept per channel so tests can read the final state of each.
``fail_next`` scripts HTTP errors (429 with ``Retry-After``, 500) or ``ok: false`` answers, now or
after a number of calls answered as usual.
Tests wait on recorded calls with a deadline (a condition variable, no sleeps).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.support.patience import patience


@dataclass
class Call:
    method: str  # Web API method, or "upload" / "respond"
    params: dict[str, Any]
    token: str | None
    status: int
    path: str = ""
    body: bytes = b""

    def text(self) -> str:
        """All text of the call (top-level text and every block text), for assertions."""
        return json.dumps({k: self.params.get(k) for k in ("text", "blocks", "view")}, ensure_ascii=False)


@dataclass
class Script:
    status: int  # 0: answer as usual (a call let through before the scripted failures)
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class SlackStandIn:
    def __init__(self, *, bot_user_id: str = "UBOTPAPER", bot_id: str = "BBOTPAPER", team_id: str = "T0TEST") -> None:
        self.bot_user_id, self.bot_id, self.team_id = bot_user_id, bot_id, team_id
        self.calls: list[Call] = []
        self.messages: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        self.uploads: dict[str, bytes] = {}
        self.socket_url: str | None = None
        self.on_record: Callable[[Call], None] | None = None  # runs while the caller awaits the answer
        self._scripts: dict[str, deque[Script]] = defaultdict(deque)
        self._ts = itertools.count(1)
        self._files = itertools.count(1)
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> SlackStandIn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        return self.url + "/api"

    def response_url(self, name: str) -> str:
        return f"{self.url}/respond/{name}"

    # --- scripting and inspection ------------------------------------------------------------

    def fail_next(self, method: str, *, status: int = 429, error: str = "ratelimited", times: int = 1,
                  retry_after: int | None = 0, after: int = 0) -> None:
        """The next ``times`` calls of ``method`` fail, once ``after`` more have been answered as usual."""
        headers = {"Retry-After": str(retry_after)} if status == 429 and retry_after is not None else {}
        for _ in range(after):
            self._scripts[method].append(Script(0, {}))
        for _ in range(times):
            self._scripts[method].append(Script(status, {"ok": False, "error": error}, headers))

    def calls_to(self, method: str) -> list[Call]:
        with self._changed:
            return [call for call in self.calls if call.method == method]

    def wait_for(self, predicate: Callable[[], Any], *, timeout: float = 20.0, what: str = "condition") -> Any:
        """Block until ``predicate()`` is truthy (re-checked on every recorded call)."""
        with self._changed:
            result = self._changed.wait_for(predicate, patience(timeout))
        if not result:
            summary = "\n".join(f"  {c.method} {c.status} {c.text()[:300]}" for c in self.calls)
            raise AssertionError(f"timed out waiting for {what}; calls so far:\n{summary}")
        return result

    def wait_calls(self, method: str, count: int = 1, *, where: Callable[[Call], bool] = lambda call: True,
                   timeout: float = 20.0) -> list[Call]:
        def found() -> list[Call] | None:
            matching = [c for c in self.calls if c.method == method and c.status == 200 and where(c)]
            return matching if len(matching) >= count else None

        return self.wait_for(found, timeout=timeout, what=f"{count} x {method}")

    def final_texts(self, channel: str) -> list[str]:
        """Each message of the channel as it looks now (after updates), in posting order."""
        with self._changed:
            return [json.dumps({"text": m.get("text"), "blocks": m.get("blocks")}, ensure_ascii=False)
                    for m in self.messages[channel].values()]

    def channel_messages(self, channel: str) -> list[dict[str, Any]]:
        """A copy of every message of the channel as it looks now, in posting order."""
        with self._changed:
            return [dict(message) for message in self.messages[channel].values()]

    def add_user_message(self, channel: str, ts: str, user: str, text: str, thread_ts: str | None = None) -> None:
        with self._changed:
            self.messages[channel][ts] = {"ts": ts, "user": user, "text": text, "thread_ts": thread_ts}

    # --- the Web API -------------------------------------------------------------------------

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"ok": True, "url": "https://test.slack.com/", "team": "Test", "user": "paperbot",
                    "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id}
        if method == "chat.postMessage":
            channel = params.get("channel", "")
            if channel.startswith("CNOTMEMBER"):
                return {"ok": False, "error": "not_in_channel"}
            ts = f"1700000000.{next(self._ts):06d}"
            message = {"ts": ts, "text": params.get("text"), "blocks": params.get("blocks"),
                       "thread_ts": params.get("thread_ts"), "bot_id": self.bot_id, "user": self.bot_user_id}
            self.messages[channel][ts] = message
            return {"ok": True, "channel": channel, "ts": ts, "message": message}
        if method == "chat.update":
            channel, ts = params.get("channel", ""), params.get("ts", "")
            if ts not in self.messages[channel]:
                return {"ok": False, "error": "message_not_found"}
            self.messages[channel][ts].update(text=params.get("text"), blocks=params.get("blocks"))
            return {"ok": True, "channel": channel, "ts": ts, "text": params.get("text")}
        if method in ("reactions.add", "reactions.remove", "chat.postEphemeral"):
            return {"ok": True}
        if method == "views.publish":
            return {"ok": True, "view": {"id": "V1", **(params.get("view") or {})}}
        if method == "conversations.replies":
            channel, ts = params.get("channel", ""), params.get("ts", "")
            thread = [m for m in self.messages[channel].values() if m["ts"] == ts or m.get("thread_ts") == ts]
            return {"ok": True, "messages": thread, "has_more": False, "response_metadata": {"next_cursor": ""}}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._files):08d}"
            return {"ok": True, "upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            files = params.get("files") or []
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title")} for f in files]}
        if method == "apps.connections.open":
            if not self.socket_url:
                return {"ok": False, "error": "socket_mode_not_configured_in_test"}
            return {"ok": True, "url": self.socket_url}
        return {"ok": False, "error": "unknown_method"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self._handle()

            def do_POST(self) -> None:
                self._handle()

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                auth = self.headers.get("Authorization") or ""
                token = auth.removeprefix("Bearer ") or None
                if parts.path.startswith("/upload/"):
                    file_id = parts.path.rsplit("/", 1)[-1]
                    stand_in._record(Call("upload", {"file_id": file_id}, token, 200, parts.path, raw))
                    stand_in.uploads[file_id] = raw
                    self._send(200, b"OK - " + str(len(raw)).encode(), "text/plain")
                    return
                params = dict(parse_qsl(parts.query, keep_blank_values=True))
                content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                if raw and content_type == "application/json":
                    params.update(json.loads(raw))
                elif raw:
                    params.update(dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True)))
                for key in ("blocks", "files", "view", "attachments"):
                    if isinstance(params.get(key), str):
                        params[key] = json.loads(params[key])
                if parts.path.startswith("/respond/"):
                    stand_in._record(Call("respond", params, token, 200, parts.path, raw))
                    self._send(200, b"ok", "text/plain")
                    return
                method = parts.path.removeprefix("/api/")
                with stand_in._changed:
                    script = stand_in._scripts[method].popleft() if stand_in._scripts[method] else None
                    if script is None or script.status == 0:
                        status, body, headers = 200, stand_in._answer(method, params), {}
                    else:
                        status, body, headers = script.status, script.body, script.headers
                stand_in._record(Call(method, params, token, status, parts.path, raw))
                self._send(status, json.dumps(body).encode(), "application/json", headers)

            def _send(self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        return Handler

    def _record(self, call: Call) -> None:
        if self.on_record is not None:
            self.on_record(call)
        with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
