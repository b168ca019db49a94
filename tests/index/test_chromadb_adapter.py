"""``retrieval/index/chromadb_adapter.py`` against the installed chromadb: what each workaround
relies on of chromadb's private names is still there, and still needed.

Each test fails on a chromadb release that moved what the adapter reaches into (the adapter then
warns and does nothing), so an upgrade that breaks it is seen here rather than in the field.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from retrieval.index.chromadb_adapter import bound_requests, forget_system

HANG = 30.0  # seconds the stub hangs on a request that should have timed out long before


def _settings():  # chromadb's own Settings, as dense.py passes them
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False)


def _broken_start(path: Path) -> None:
    """A ``PersistentClient`` of ``path`` fails to start (its SQLite file is not a database)."""
    import chromadb

    path.mkdir()
    (path / "chroma.sqlite3").write_bytes(b"not a database " * 512)
    with pytest.raises(Exception, match="not a database"):
        chromadb.PersistentClient(path=str(path), settings=_settings())
    shutil.rmtree(path)
    path.mkdir()  # a new, empty directory in its place, as PaperIndex.repair makes one


def test_a_failed_start_is_forgotten(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import chromadb

    path = tmp_path / "chroma"
    _broken_start(path)
    with caplog.at_level(logging.WARNING, logger="retrieval.index.chromadb_adapter"):
        forget_system(path)
    assert not caplog.records, "this chromadb keeps its systems elsewhere: update chromadb_adapter.forget_system"
    client: Any = chromadb.PersistentClient(path=str(path), settings=_settings())  # close() is untyped
    try:
        assert client.list_collections() == []
    finally:
        client.close()


def test_chromadb_still_keeps_a_failed_start(tmp_path: Path) -> None:
    """Why ``forget_system`` exists: should this fail, chromadb drops a system that failed to start
    by itself, and the workaround can go."""
    import chromadb

    path = tmp_path / "chroma"
    _broken_start(path)
    try:
        with pytest.raises(AttributeError, match="bindings"):
            chromadb.PersistentClient(path=str(path), settings=_settings())
    finally:
        forget_system(path)


@pytest.fixture
def hanging_heartbeat_url() -> Iterator[str]:
    """A server that answers what ``chromadb.HttpClient()`` asks while it is built (the caller's
    identity, the default tenant and database), then hangs on every heartbeat."""
    release = threading.Event()
    answers = {
        "/api/v2/auth/identity": {"user_id": "", "tenant": "default_tenant", "databases": ["default_database"]},
        "/api/v2/tenants/default_tenant": {"name": "default_tenant"},
        "/api/v2/tenants/default_tenant/databases/default_database": {
            "id": "00000000-0000-0000-0000-000000000001", "name": "default_database", "tenant": "default_tenant"},
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = answers.get(self.path.split("?")[0])
            if answer is None:
                release.wait(HANG)
                return
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_every_request_of_an_http_client_is_bounded(hanging_heartbeat_url: str) -> None:
    import chromadb

    host, port = hanging_heartbeat_url.split(":")
    client: Any = chromadb.HttpClient(host=host, port=int(port), settings=_settings())
    try:
        assert bound_requests(client, 0.3), "this chromadb keeps its session elsewhere: update bound_requests"
        started = time.monotonic()
        with pytest.raises(httpx.TimeoutException):
            client.heartbeat()
        assert time.monotonic() - started < 10.0
    finally:
        client.close()


def test_a_client_without_the_session_is_left_as_it_is(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="retrieval.index.chromadb_adapter"):
        assert bound_requests(object(), 0.3) is False
    assert "PAPERBOT_CHROMA_TIMEOUT is ignored" in caplog.text
