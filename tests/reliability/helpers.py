"""Helpers of the reliability suite: run the real CLI, slice fixtures, read stores from outside.

An installation is looked at the way an operator would: through the ``paperbot`` command (the
console script as a subprocess with its own environment, or ``run_main``, the same entry point
in this process when no process boundary is needed) and by reading the data dir's files
read-only, never through the objects of the code under test.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

from bench.common import clean_env
from retrieval.config import Settings
from tests.support.model_cache import link_model_cache  # noqa: F401 - the suite's helpers import it from here
from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[2]
PAPERBOT = Path(sys.executable).with_name("paperbot")
FILES = ROOT / "tests" / "fixtures" / "files"

#: Fake secrets set on the processes under test; no output or log may ever contain them.
FAKE_SECRETS = {
    "OPENAI_API_KEY": "sk-reliability-FAKE-7c1d0e5b9a43f2e8",
    "SLACK_BOT_TOKEN": "xoxb-4242-4242-reliabilityFAKEtoken9q",
    "SLACK_SIGNING_SECRET": "reliability-FAKE-signing-5e3a1b77c0d2",
    "SLACK_APP_TOKEN": "xapp-1-A0REL-4242-reliabilityFAKEapp",
}

T = TypeVar("T")


@dataclass(frozen=True)
class Run:
    """A finished CLI run."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def last_error_line(self) -> str:
        """The last non-empty stderr line (progress bars come before it)."""
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    """In-process settings isolated from the environment's keys and any ``.env`` file."""
    values: dict[str, Any] = {"data_dir": data_dir, "openai_api_key": None, "openai_base_url": None,
                              "slack_api_url": None, "chroma_url": None}
    values.update(overrides)
    return Settings(_env_file=None, **values)


def _limit_file_size(limit: int) -> Callable[[], None]:
    """``preexec_fn``: files may not grow past ``limit`` bytes; writes then fail with EFBIG."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail the write instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def spawn(*args: str, data_dir: Path, file_size_limit: int | None = None, **env: str) -> subprocess.Popen[str]:
    """Start ``paperbot ARGS`` in the background (working dir: the data dir's parent, no .env)."""
    return subprocess.Popen(
        [str(PAPERBOT), *args],
        cwd=data_dir.parent,
        env=clean_env(data_dir, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_limit_file_size(file_size_limit) if file_size_limit is not None else None,
    )


def paperbot(*args: str, data_dir: Path, timeout: float = 300, file_size_limit: int | None = None,
             **env: str) -> Run:
    """Run ``paperbot ARGS`` to completion."""
    process = spawn(*args, data_dir=data_dir, file_size_limit=file_size_limit, **env)
    timeout = patience(timeout)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise AssertionError(
            f"paperbot {' '.join(args)} did not finish in {timeout:.0f} s:\n{stderr[-2000:]}"
        ) from None
    return Run(process.returncode, stdout, stderr)


def run_main(*args: str, data_dir: Path, **env: str) -> Run:
    """``bot.cli.main(ARGS)`` in this process, with the environment a subprocess would get.

    The same entry point as the console script, minus the interpreter start-up: for checks
    that do not need a process boundary (doctor, search, ask) in a suite that must stay fast.
    Log records are not in ``stderr`` here (pytest owns the root logger): use ``caplog``.
    """
    from bot.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    with mock.patch.dict(os.environ, clean_env(data_dir, **env), clear=True):
        os.chdir(data_dir.parent)  # no .env file is read from here
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(list(args))
        finally:
            os.chdir(previous)
    return Run(code, stdout.getvalue(), stderr.getvalue())


def poll(check: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.02) -> T:
    """Re-check ``check()`` until it returns something other than None (readiness polling), for
    ``timeout`` seconds times the host's ``PAPERBOT_TESTS_TIME_SCALE``."""
    timeout = patience(timeout)
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)  # polling another process's state, not a test delay


# --- fixtures and data dirs ------------------------------------------------------------------

_ENTRY = re.compile(r"(?m)^@")


def bib_entries(count: int, start: int = 0) -> str:
    """``count`` consecutive entries of the real PETSc BibTeX file, from entry ``start``."""
    text = (FILES / "petsc.bib").read_text(encoding="utf-8")
    starts = [match.start() for match in _ENTRY.finditer(text)] + [len(text)]
    end = min(start + count, len(starts) - 1)
    return text[starts[start] : starts[end]]


def query(path: Path, sql: str) -> list[tuple]:
    """Rows of ``sql`` from a SQLite file another process may be writing (opened read-only)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def database_query(data_dir: Path, sql: str, database_url: str | None = None) -> list[tuple]:
    """Rows of ``sql`` from the installation's database, as another process sees it: the data dir's
    ``records.sqlite3`` (read-only), or the PostgreSQL database ``database_url`` (its own connection)."""
    if not database_url:
        return query(data_dir / "records.sqlite3", sql)
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(database_url.replace("postgresql://", "postgresql+psycopg://", 1), poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text(sql))]
    finally:
        engine.dispose()


def _no_store(data_dir: Path, database_url: str | None) -> bool:
    return not database_url and not (data_dir / "records.sqlite3").exists()


def stored_records(data_dir: Path, database_url: str | None = None) -> dict[str, str]:
    """``id -> content_hash`` of every record in the record store (SQLite, or ``database_url``)."""
    if _no_store(data_dir, database_url):
        return {}
    return dict(database_query(data_dir, "SELECT id, content_hash FROM papers", database_url))


def stored_papers(data_dir: Path, database_url: str | None = None) -> dict[str, dict[str, Any]]:
    """``id -> record`` (the stored JSON) of every record in the record store."""
    rows = database_query(data_dir, "SELECT id, record FROM papers", database_url)
    return {paper_id: json.loads(record) for paper_id, record in rows}


def count_records(data_dir: Path, database_url: str | None = None) -> int:
    """Records committed so far (0 while the store does not exist or is not migrated yet)."""
    if _no_store(data_dir, database_url):
        return 0
    from sqlalchemy.exc import DBAPIError

    try:
        return int(database_query(data_dir, "SELECT COUNT(*) FROM papers", database_url)[0][0])
    except (sqlite3.Error, DBAPIError):
        return 0


def lexical_documents(data_dir: Path) -> int | None:
    """How many documents the persisted BM25 index holds (None when there is none)."""
    try:
        manifest = json.loads((data_dir / "lexical" / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest.get("documents")


def files_under(data_dir: Path, *, skip: Sequence[str] = ("cache",)) -> dict[str, int]:
    """``relative path -> size`` of every regular file of a data dir (the model cache aside)."""
    sizes = {}
    for path in data_dir.rglob("*"):
        relative = path.relative_to(data_dir)
        if relative.parts and relative.parts[0] in skip:
            continue
        if path.is_file() and not path.is_symlink():
            sizes[str(relative)] = path.stat().st_size
    return sizes


def secrets_found(texts: dict[str, str], secrets: Sequence[str] = tuple(FAKE_SECRETS.values())) -> list[str]:
    """``"where: which secret"`` for every text that contains a secret (or a long part of one)."""
    found = []
    for where, text in texts.items():
        for secret in secrets:
            pieces = {secret, secret[:16], secret[-16:]}
            if any(piece in text for piece in pieces):
                found.append(f"{where}: {secret[:8]}...")
    return found


def log_texts(data_dir: Path) -> dict[str, str]:
    """Every log-like file of a data dir (logs/, *.log), decoded leniently."""
    texts = {}
    for path in data_dir.rglob("*"):
        if path.is_file() and not path.is_symlink() and ("logs" in path.parts or path.suffix == ".log"):
            texts[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    return texts
