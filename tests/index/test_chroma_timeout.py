"""A Chroma server that accepts connections but never answers: bounded waits, clear errors, recovery.

chromadb 1.5.9's HTTP client has no timeout of its own (see ``retrieval.index.dense``).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from retrieval.config import load_settings
from retrieval.errors import ConfigError, IndexUnavailableError
from retrieval.index.dense import DenseStore
from retrieval.index.paper_index import PaperIndex

from .conftest import ChromaServer, HashEncoder, make_settings

TIMEOUT = 0.5


SAFETY = 30.0  # should a regression leave a call unbounded, end the hang so the test fails instead


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A listening socket that is never accepted from: the kernel completes every TCP handshake
    (up to the backlog) and requests are sent, but no byte ever comes back."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    safety = threading.Timer(SAFETY, sock.close)  # a hung client then sees a reset, not a timeout
    safety.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        safety.cancel()
        sock.close()


def test_the_timeout_is_a_setting(monkeypatch):
    monkeypatch.delenv("PAPERBOT_CHROMA_TIMEOUT", raising=False)
    assert load_settings(_env_file=None).chroma_timeout == 10.0
    monkeypatch.setenv("PAPERBOT_CHROMA_TIMEOUT", "2.5")
    assert load_settings(_env_file=None).chroma_timeout == 2.5
    monkeypatch.setenv("PAPERBOT_CHROMA_TIMEOUT", "0")
    with pytest.raises(ConfigError, match="PAPERBOT_CHROMA_TIMEOUT"):
        load_settings(_env_file=None)


def test_a_server_that_never_answers_fails_within_the_timeout(tmp_path, silent_url, arxiv_papers):
    settings = make_settings(tmp_path / "data", silent_url, chroma_timeout=TIMEOUT)
    index = PaperIndex.open(settings, HashEncoder())
    try:
        for _ in range(2):  # and again on the next question: each call is bounded
            started = time.monotonic()
            with pytest.raises(IndexUnavailableError) as failure:
                index.search("discrete dipole approximation", k=3)
            assert time.monotonic() - started < 10 * TIMEOUT
            assert failure.value.user_message == f"The Chroma server at {silent_url} did not answer within 0.5 s."
            assert "PAPERBOT_CHROMA_TIMEOUT" in str(failure.value)
        with pytest.raises(IndexUnavailableError, match="did not answer"):
            index.upsert(arxiv_papers[:3])
        assert index.count() == 0  # nothing recorded as indexed
        with pytest.raises(IndexUnavailableError, match="did not answer"):
            index.check_consistency()
    finally:
        index.close()


@pytest.mark.slow
def test_every_request_of_a_connected_client_is_bounded(tmp_path):
    server = ChromaServer(tmp_path / "server")
    server.start()
    try:
        dense = DenseStore(make_settings(tmp_path / "data", server.url, chroma_timeout=TIMEOUT))
        dense.ping()
        session = dense._client._server._session  # where chromadb 1.5.9 keeps its httpx client
        assert session.timeout == httpx.Timeout(TIMEOUT)
    finally:
        server.stop()


@pytest.mark.slow
def test_a_server_that_hangs_after_connecting_times_out_and_is_used_again_when_it_resumes(tmp_path, arxiv_papers):
    server = ChromaServer(tmp_path / "server")
    server.start()
    settings = make_settings(tmp_path / "data", server.url, chroma_timeout=TIMEOUT)
    index = PaperIndex.open(settings, HashEncoder())
    assert server.process is not None  # started above
    try:
        index.upsert(arxiv_papers[:10])
        before = [hit.paper.id for hit in index.search("discrete dipole approximation", k=3)]
        os.kill(server.process.pid, signal.SIGSTOP)  # the server hangs: connections open, no answer
        safety = threading.Timer(SAFETY, os.kill, (server.process.pid, signal.SIGCONT))
        safety.start()
        try:
            started = time.monotonic()
            with pytest.raises(IndexUnavailableError, match=r"did not answer within 0\.5 s"):
                index.search("discrete dipole approximation", k=3)
            assert time.monotonic() - started < 10 * TIMEOUT
            with pytest.raises(IndexUnavailableError, match="did not answer"):
                index.upsert(arxiv_papers[10:12])
            assert index.count() == 10
        finally:
            safety.cancel()
            os.kill(server.process.pid, signal.SIGCONT)
        assert [hit.paper.id for hit in index.search("discrete dipole approximation", k=3)] == before
        assert index.upsert(arxiv_papers[10:12]).added == [p.id for p in arxiv_papers[10:12]]
        assert index.check_consistency().ok
    finally:
        index.close()
        server.stop()


@pytest.fixture
def heartbeat_only_url() -> Iterator[str]:
    """A server that answers the heartbeat and then hangs on every other request."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/api/v2/heartbeat"):
                body = b'{"nanosecond heartbeat": 1}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            release.wait(SAFETY)  # hang: what HttpClient() asks next never gets an answer

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_a_server_that_hangs_while_the_client_is_built_fails_within_the_timeout(tmp_path, heartbeat_only_url):
    index = PaperIndex.open(make_settings(tmp_path / "data", heartbeat_only_url, chroma_timeout=TIMEOUT), HashEncoder())
    try:
        for _ in range(2):
            started = time.monotonic()
            with pytest.raises(IndexUnavailableError, match=r"did not answer within 0\.5 s"):
                index.search("discrete dipole approximation", k=3)
            assert time.monotonic() - started < 10 * TIMEOUT
    finally:
        index.close()
