"""Two writers on one data dir: the second waits for the first, and nothing is lost.

Every write path (ingest, sync, doctor --repair) reads stored records, merges and writes them
back; ``retrieval.storage.locks`` lets one process at a time do that per data dir. Checked here
from outside, through the real ``paperbot`` command:

* two ``paperbot ingest`` runs started together on one data dir, with files sharing 60
  records whose provenance differs: both exit 0, every shared record carries both runs'
  provenance, the stored (id, provenance sources) equal those of the same two runs one after
  the other (in this process, from the embedding cache the two runs filled: the vectors do not
  enter that comparison), and every record has its vector (``doctor``);
* a run that cannot get the lock within PAPERBOT_WRITER_WAIT_SECONDS exits 2 with one line
  naming the holder's pid and what it does, having said once that it waits, and changes nothing;
  readers (stats, export) never wait;
* a holder killed with SIGKILL does not block the next ingest (the OS drops its lock);
* the same two runs from two data dirs sharing one PostgreSQL database: the database's writer
  lock serialises them, and the records equal those of the two runs one after the other;
* in this process: the wait policy (one notice, then ``BusyError`` naming the holder), re-entry
  by the holding thread, and another thread waiting its turn.

The runs with the real encoder are ``slow``; the others start no encoder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from importlib import resources
from pathlib import Path

import pytest

from bench.common import clean_env
from retrieval.errors import BusyError
from retrieval.ingest.pipeline import BATCH_SIZE
from retrieval.storage.database import database_url as storage_url
from retrieval.storage.locks import Holder, ServerWriterLock, hold_writer_lock, read_holder
from tests.reliability.helpers import (
    ROOT,
    count_records,
    link_model_cache,
    make_settings,
    paperbot,
    poll,
    run_main,
    spawn,
    stored_papers,
)
from tests.support.patience import patience

FIRST, SECOND, SHARED = slice(0, 120), slice(60, 180), 60  # records 60..119 are in both files
KILLED = slice(0, 350)  # more records than one ingest batch: the kill comes between two commits


def _sample_lines() -> list[dict]:
    path = Path(str(resources.files("retrieval.sample") / "arxiv_sample.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _run_file(folder: Path, name: str, records: list[dict]) -> Path:
    """The records as paperbot JSONL whose only provenance is the run ``name``."""
    path = folder / f"{name}.jsonl"
    lines = []
    for record in records:
        source_id = record.get("arxiv_id") or record["title"]
        lines.append(json.dumps({**record, "provenance": [{"source": name, "source_id": source_id}]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _sources(data_dir: Path, url: str = "") -> dict[str, frozenset[str]]:
    """``id -> provenance sources`` of every stored record (SQLite in the data dir, or ``url``)."""
    return {pid: frozenset(entry["source"] for entry in record.get("provenance", []))
            for pid, record in stored_papers(data_dir, url).items()}


@pytest.fixture(scope="module")
def run_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    lines = _sample_lines()
    folder = tmp_path_factory.mktemp("runs")
    return _run_file(folder, "run-a", lines[FIRST]), _run_file(folder, "run-b", lines[SECOND])


@pytest.fixture(scope="module")
def killed_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert KILLED.stop - KILLED.start > BATCH_SIZE
    return _run_file(tmp_path_factory.mktemp("killed"), "run-k", _sample_lines()[KILLED])


def _seed_embedding_cache(source: Path, target: Path) -> None:
    """Copy ``source``'s embedding cache (vectors keyed by encoder and text hash) into ``target``."""
    for path in (source / "cache").glob("embeddings.sqlite3*"):
        shutil.copy2(path, target / "cache" / path.name)


@pytest.mark.slow
def test_two_ingests_at_once_equal_two_in_a_row(tmp_path: Path, model_cache: Path, run_files: tuple[Path, Path],
                                                database_url: str | None, postgres_databases) -> None:
    """On SQLite, and on PostgreSQL with one data dir (the writer lock is then the database's)."""
    first, second = run_files
    url = database_url or ""  # blank: SQLite in the data dir
    in_a_row_url = postgres_databases() if database_url else ""
    together = link_model_cache(tmp_path / "together", model_cache)
    runs = [spawn("ingest", str(path), "--json", data_dir=together, PAPERBOT_DATABASE_URL=url) for path in (first, second)]
    outcomes = [process.communicate(timeout=patience(600)) for process in runs]
    for process, (_, stderr) in zip(runs, outcomes, strict=True):
        assert process.returncode == 0, stderr[-2000:]
        assert "Traceback" not in stderr

    in_a_row = link_model_cache(tmp_path / "in-a-row", model_cache)
    _seed_embedding_cache(together, in_a_row)
    for path in (first, second):
        run = run_main("ingest", str(path), "--json", data_dir=in_a_row, PAPERBOT_DATABASE_URL=in_a_row_url)
        assert run.code == 0, run.stderr

    expected = _sources(in_a_row, in_a_row_url)
    both = {pid for pid, sources in expected.items() if {"run-a", "run-b"} <= sources}
    assert len(both) == SHARED
    reports = [json.loads(stdout) for stdout, _ in outcomes]  # counted under the lock: no stale figures
    assert sum(report["added"] for report in reports) == len(expected)
    assert sum(report["updated"] for report in reports) == SHARED
    got = _sources(together, url)
    lost = sorted(pid for pid in both if not {"run-a", "run-b"} <= got.get(pid, frozenset()))
    assert not lost, f"{len(lost)} of {SHARED} shared records lost a run's provenance, e.g. {lost[:3]}"
    assert got == expected
    doctor = run_main("doctor", "--json", data_dir=together, PAPERBOT_DATABASE_URL=url)  # the vectors follow
    assert doctor.code == 0, doctor.stderr
    found = doctor.json()
    assert found["records"] == found["vectors"] == len(expected)
    assert found["missing_vectors"] == found["stale_vectors"] == found["orphan_vectors"] == []


def _database_sources(url: str) -> dict[str, frozenset[str]]:
    """``id -> provenance sources`` of every record in the PostgreSQL database ``url``."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT id, record FROM papers")).all()
    finally:
        engine.dispose()
    return {pid: frozenset(entry["source"] for entry in json.loads(record).get("provenance", []))
            for pid, record in rows}


@pytest.mark.slow
@pytest.mark.postgres
def test_two_ingests_from_two_data_dirs_on_one_postgresql_lose_nothing(
        tmp_path: Path, model_cache: Path, run_files: tuple[Path, Path], postgres_server) -> None:
    """The same two runs from two data dirs sharing one PostgreSQL database (issue #31): the
    database's writer lock serialises them, so the records equal those of the runs in a row."""
    first, second = run_files
    url = postgres_server.new_database()
    try:
        data_dirs = [link_model_cache(tmp_path / name, model_cache) for name in ("host-a", "host-b")]
        runs = [spawn("ingest", str(path), "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
                for path, data_dir in zip((first, second), data_dirs, strict=True)]
        outcomes = [process.communicate(timeout=patience(600)) for process in runs]
        for process, (_, stderr) in zip(runs, outcomes, strict=True):
            assert process.returncode == 0, stderr[-2000:]
            assert "Traceback" not in stderr
        got = _database_sources(url)
    finally:
        postgres_server.drop_database(url)

    in_a_row = link_model_cache(tmp_path / "in-a-row", model_cache)
    _seed_embedding_cache(data_dirs[0], in_a_row)  # run-a's texts; run-b's others are encoded again
    for path in (first, second):
        run = run_main("ingest", str(path), "--json", data_dir=in_a_row)
        assert run.code == 0, run.stderr
    expected = _sources(in_a_row)
    both = {pid for pid, sources in expected.items() if {"run-a", "run-b"} <= sources}
    assert len(both) == SHARED
    reports = [json.loads(stdout) for stdout, _ in outcomes]
    assert sum(report["added"] for report in reports) == len(expected)
    assert sum(report["updated"] for report in reports) == SHARED
    assert got == expected


HOLDER = textwrap.dedent(
    """
    import sys, time
    from retrieval.assistant import Assistant
    from retrieval.config import load_settings
    from retrieval.storage.locks import hold_writer_lock

    settings = load_settings()
    Assistant(settings)  # opens (and secures) the data dir, as every door does
    with hold_writer_lock(settings, "ingest"):
        print("held", flush=True)
        time.sleep(600)
    """
)


def _hold(data_dir: Path, url: str = "") -> subprocess.Popen[str]:
    """A process holding the writer lock (as an ingest would) until it is killed: the data dir's,
    or with ``url`` the PostgreSQL database's."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=ROOT,
                               env=clean_env(data_dir, PAPERBOT_DATABASE_URL=url),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.strip() == "held", process.stderr.read() if process.stderr else ""
    return process


def _where(data_dir: Path, url: str) -> str:
    """How messages name the PostgreSQL database ``url`` (without its password)."""
    return storage_url(make_settings(data_dir, database_url=url)).render_as_string(hide_password=True)


def _holder(data_dir: Path, url: str) -> Holder:
    """Who holds the writer lock: ``writer.json`` of the data dir, or the database's lock holder."""
    settings = make_settings(data_dir, database_url=url or None)
    return ServerWriterLock(settings, "ingest").holder() if url else read_holder(settings)


SINCE = r"since (\d{4}-\d\d-\d\d )?\d\d:\d\d"  # the date only when it is not today


def test_a_waiter_gives_up_naming_the_holder_and_changes_nothing(tmp_path: Path, run_files: tuple[Path, Path],
                                                                database_url: str | None) -> None:
    data_dir = tmp_path / "data"  # the waiter gives up before it would load the encoder
    url = database_url or ""
    where = "this data dir" if not url else "the database " + _where(data_dir, url)
    since = rf", {SINCE}" if not url else ""  # the database's holder says its pid, not since when
    holder = _hold(data_dir, url)
    try:
        run = paperbot("ingest", str(run_files[0]), data_dir=data_dir, PAPERBOT_WRITER_WAIT_SECONDS="1",
                       PAPERBOT_DATABASE_URL=url)
        assert run.code == 2, run.stderr
        assert re.fullmatch(
            rf"paperbot: Another paperbot ingest is still running on {re.escape(where)} \(pid {holder.pid}{since}\) "
            r"after 1 s of waiting\. Wait for it to finish, or stop it; nothing was changed\.",
            run.last_error_line,
        ), run.stderr
        waiting = [line for line in run.stderr.splitlines() if line.startswith("Waiting for")]
        assert len(waiting) == 1 and f"pid {holder.pid}" in waiting[0], run.stderr
        assert "Traceback" not in run.stderr
        assert count_records(data_dir, url) == 0  # nothing was written

        # readers never take the lock
        stats = run_main("stats", "--json", data_dir=data_dir, PAPERBOT_WRITER_WAIT_SECONDS="0", PAPERBOT_DATABASE_URL=url)
        assert stats.code == 0 and stats.json()["papers"] == 0, stats.stderr
        export = run_main("export", data_dir=data_dir, PAPERBOT_WRITER_WAIT_SECONDS="0", PAPERBOT_DATABASE_URL=url)
        assert export.code == 0, export.stderr
    finally:
        holder.kill()
        holder.communicate()


@pytest.mark.slow
def test_a_sigkilled_holder_does_not_block_the_next_ingest(tmp_path: Path, model_cache: Path,
                                                          killed_file: Path, database_url: str | None) -> None:
    """On SQLite the OS drops the file lock; on PostgreSQL the server ends the killed session and
    its advisory lock with it."""
    data_dir = link_model_cache(tmp_path / "data", model_cache)
    url = database_url or ""
    process = spawn("ingest", str(killed_file), "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    stderr = process.stderr
    assert stderr is not None  # piped
    try:
        def writing() -> int | None:
            assert process.poll() is None, f"ingest ended before it was seen writing: {stderr.read()}"
            return count_records(data_dir, url) or None

        poll(writing, timeout=240, what="the first committed batch")
        holder = _holder(data_dir, url)
        assert (holder.pid, holder.activity) == (process.pid, "ingest")
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL
    if not url:
        left = {path.name: stat.S_IMODE(path.stat().st_mode) for path in data_dir.glob("records.sqlite3*")}
        assert "records.sqlite3-wal" in left and set(left.values()) == {0o600}, left  # private, -wal/-shm too

    run = paperbot("ingest", str(killed_file), "--json", data_dir=data_dir, PAPERBOT_WRITER_WAIT_SECONDS="0",
                   PAPERBOT_DATABASE_URL=url)
    assert run.code == 0, run.stderr
    assert "Waiting for" not in run.stderr
    assert run.json()["added"] + run.json()["unchanged"] == KILLED.stop - KILLED.start
    if not url:
        assert os.path.exists(data_dir / "writer.lock") and not (data_dir / "writer.json").exists()


# --- the policy, in this process ------------------------------------------------------------------


def test_the_wait_is_announced_once_then_busy_names_the_holder(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", writer_wait_seconds=0.3)
    holder = _hold(settings.data_dir)
    try:
        assert read_holder(settings).pid == holder.pid
        notices: list[str] = []
        started = time.monotonic()
        with pytest.raises(BusyError) as caught:
            with hold_writer_lock(settings, "sync", notice=notices.append):
                raise AssertionError("the lock was taken while another process holds it")
        assert time.monotonic() - started >= 0.3
        assert (caught.value.pid, caught.value.activity) == (holder.pid, "ingest")
        assert caught.value.hint == "Wait for it to finish, or stop it; nothing was changed."
        assert len(notices) == 1
        assert re.fullmatch(rf"Waiting for another paperbot ingest on this data dir \(pid {holder.pid}, {SINCE}\) "
                            r"to finish \(giving up after 0\.3 s\) \.\.\.", notices[0]), notices
        with pytest.raises(BusyError):  # no wait: no "waiting" notice either
            with hold_writer_lock(settings, "sync", notice=notices.append, wait=0):
                pass
        assert len(notices) == 1
    finally:
        holder.kill()
        holder.communicate()
    with hold_writer_lock(settings, "sync", wait=0):  # the killed holder's lock is gone at once
        assert read_holder(settings).activity == "sync"
    assert not settings.writer_holder_path.exists()


def test_the_holding_thread_reenters_and_other_threads_wait_their_turn(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", writer_wait_seconds=5)
    order: list[str] = []
    inside = threading.Event()

    def other() -> None:
        inside.wait(5)
        with hold_writer_lock(settings, "sync", notice=lambda text: order.append("waiting")):
            order.append("other")

    thread = threading.Thread(target=other)
    thread.start()
    with hold_writer_lock(settings, "ingest"):
        with hold_writer_lock(settings, "repair", wait=0):  # re-entry: no deadlock, no wait
            inside.set()
            poll(lambda: order or None, timeout=5, what="the other thread to find the lock taken")
            order.append("first")
        assert read_holder(settings).activity == "ingest"
    thread.join(10)
    assert order == ["waiting", "first", "other"]
