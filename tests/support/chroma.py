"""A real ``chroma run`` server for the tests: a subprocess on 127.0.0.1 and a free port.

``ChromaServer`` starts, stops and restarts one on the same port and path; the index tests
(``tests/index/conftest.py``: ``chroma_server``) and the cluster tests share it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Self

import httpx

from tests.support.patience import patience

CHROMA_BIN = Path(sys.executable).parent / "chroma"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ChromaServer:
    """``chroma run`` as a subprocess on 127.0.0.1; start/stop/restart on the same port and path."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = path
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        self.process = subprocess.Popen(
            [str(CHROMA_BIN), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        )
        timeout = patience(timeout)  # a slow or emulated host starts it slower
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma run exited with status {self.process.returncode}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)  # readiness poll of a subprocess, not a test delay
        self.stop()
        raise RuntimeError(f"chroma run did not answer on {self.url} within {timeout:.0f} s")

    def __enter__(self) -> Self:
        """Started; stopped when the ``with`` block ends (a fixture's ``yield`` inside it)."""
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        self.process = None
