"""Fixtures of the job-queue tests: a deployment of real parts, and worker processes.

* ``chroma``: a real ``chroma run`` server for this module (``tests/index/conftest.ChromaServer``);
* ``Deployment``: the environment of one deployment (a PostgreSQL database of its own from
  ``postgres_databases``, a collection of its own on the Chroma server, the queue on) with
  ``worker()`` starting a ``paperbot worker`` subprocess in a data dir of its own (workers
  share the database and Chroma, never a filesystem) and ``cli()`` running a command to its end.

Processes run ``python -m bot.cli`` with ``PYTHONPATH`` at this checkout, so that a worktree's
code is what runs (the console script may belong to another checkout).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.common import clean_env
from tests.index.conftest import ChromaServer
from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with ChromaServer(tmp_path_factory.mktemp("jobs-chroma")) as server:
        yield server


@dataclass
class Deployment:
    """One deployment's settings as environment variables, and the processes started in it."""

    root: Path
    database_url: str
    chroma_url: str
    model_cache: Path
    extra: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen[str]] = field(default_factory=list)
    collection: str = field(default_factory=lambda: f"jobs-{uuid.uuid4().hex[:10]}")

    def env(self, data_dir: Path, **more: str) -> dict[str, str]:
        data_dir.mkdir(parents=True, exist_ok=True)
        values = {"PYTHONPATH": str(ROOT), "PAPERBOT_DATABASE_URL": self.database_url,
                  "PAPERBOT_CHROMA_URL": self.chroma_url, "PAPERBOT_COLLECTION": self.collection,
                  "PAPERBOT_JOB_QUEUE": "true", "PAPERBOT_WORKER_HEARTBEAT_SECONDS": "1",
                  "PAPERBOT_ENCODER_CACHE_DIR": str(self.model_cache), **self.extra, **more}
        return clean_env(data_dir, **values)

    def worker(self, name: str, *args: str) -> subprocess.Popen[str]:
        """``paperbot worker`` in a data dir of its own; its stderr goes to ``<root>/<name>.log``."""
        data_dir = self.root / name
        log = (self.root / f"{name}.log").open("w")
        process = subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", *args], cwd=self.root,
                                   env=self.env(data_dir), stdout=subprocess.DEVNULL, stderr=log, text=True)
        self.processes.append(process)
        return process

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(encoding="utf-8", errors="replace")

    def cli(self, *args: str, data_dir: str = "submitter", timeout: float = 300, **more: str) -> tuple[int, str, str]:
        """``paperbot ARGS`` to its end, within ``timeout`` seconds times the host's
        ``PAPERBOT_TESTS_TIME_SCALE``: (exit status, stdout, stderr)."""
        done = subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=self.root,
                              env=self.env(self.root / data_dir, **more), capture_output=True, text=True,
                              timeout=patience(timeout), check=False)
        return done.returncode, done.stdout, done.stderr

    def cli_json(self, *args: str) -> dict:
        code, out, err = self.cli(*args)
        assert code == 0, err[-3000:]
        return json.loads(out)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=patience(60))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def deployment(tmp_path: Path, postgres_databases: Callable[[], str], chroma: ChromaServer,
               model_cache: Path) -> Iterator[Deployment]:
    made = Deployment(tmp_path, postgres_databases(), chroma.url, model_cache)
    try:
        yield made
    finally:
        made.stop()
        for process in made.processes:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
