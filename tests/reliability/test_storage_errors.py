"""A disk that is really full (ENOSPC), in both doors: reads answer, writes fail in one clear line.

The data dir lives on a small tmpfs mounted for the test and filled to the last byte, the way a
disk fills up in production: no mock, no size limit (``test_disk_full.py`` covers EFBIG through
``RLIMIT_FSIZE``). Mounting needs root (CI runs as root); elsewhere, or where the kernel refuses
the mount (an unprivileged container), the tests skip and say why. The model cache stays a link
to the session's export outside the tmpfs, as an operator's would be on a disk of its own.

What is checked:

* ``Database.writing`` (``storage.database``): the caller gets the write's own error as a ``DiskFullError``, not
  the failure of the ``ROLLBACK`` after it (SQLite has already rolled back by then).
* ``paperbot search`` / ``ask`` in a new process answer from the existing index although no
  WAL file can be opened normally and Chroma cannot write its open-time row.
* ``paperbot ingest`` fails with one line naming the disk, PAPERBOT_DATA_DIR and what to do,
  leaves the index as it was, and works once space is freed.
* Slack: the running bot (state file, index and Chroma already open, as under ``paperbot
  serve``) still answers a mention, and says in the thread that the answer could not be saved.
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Column, LargeBinary, MetaData, Table, insert, select
from sqlalchemy.engine import URL

from retrieval.assistant import Assistant
from retrieval.errors import DiskFullError, StorageError
from retrieval.storage.database import Database, close_databases
from tests.reliability.helpers import (
    bib_entries,
    link_model_cache,
    make_settings,
    paperbot,
    query,
    run_main,
    stored_records,
)
from tests.slack.conftest import BotFactory, make_bot, stand_in  # noqa: F401 - the Slack harness's fixtures
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.slow

DISK_SIZE = "48m"  # holds the ~2 MB base index many times over; filled to the last byte anyway
ROSENBROCK = "Which papers study Rosenbrock methods?"


@dataclass
class FullDisk:
    """A tmpfs mounted at ``mount``; ``fill`` uses up every free byte, ``free`` gives it back."""

    mount: Path

    @property
    def filler(self) -> Path:
        return self.mount / "filler"

    def available(self) -> int:
        stats = os.statvfs(self.mount)
        return stats.f_bavail * stats.f_frsize

    def fill(self) -> None:
        """Append to the filler until the kernel says ENOSPC, down to single bytes."""
        with self.filler.open("ab", buffering=0) as handle:
            for size in (1 << 20, 1 << 12, 1):
                chunk = b"\0" * size
                while True:
                    try:
                        handle.write(chunk)
                    except OSError as exc:
                        assert exc.errno == errno.ENOSPC, exc
                        break
        assert self.available() == 0

    def free(self) -> None:
        self.filler.unlink()
        assert self.available() > 1 << 20

    def copy_index(self, source: Path) -> Path:
        """A copy of a data dir on this disk (the model cache stays a link)."""
        target = self.mount / "data"
        shutil.copytree(source, target, symlinks=True)
        return target


@contextmanager
def _mounted(mount: Path) -> Iterator[FullDisk]:
    """A small tmpfs at ``mount``, unmounted afterwards; skips where it cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip("a real full disk needs a tmpfs mount, which needs root (CI runs as root)")
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make a small tmpfs with")
    mount.mkdir(parents=True)
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE},mode=0755", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.strip() or made.returncode})")
    try:
        yield FullDisk(mount)
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[FullDisk]:
    with _mounted(tmp_path / "disk") as mounted:
        yield mounted


def _vector_count(data_dir: Path) -> int:
    return int(query(data_dir / "chroma" / "chroma.sqlite3", "SELECT COUNT(*) FROM embeddings")[0][0])


# --- the SQLite wrapper -------------------------------------------------------------------------


def test_a_transaction_on_a_full_disk_reports_the_write_error_not_the_rollback(disk: FullDisk) -> None:
    path = disk.mount / "records.sqlite3"
    database = Database(URL.create("sqlite+pysqlite", database=str(path)), data_dir=disk.mount)
    items = Table("items", MetaData(), Column("value", LargeBinary, nullable=False))
    with database.writing("make the test table") as connection:
        items.create(connection)
    disk.fill()

    with pytest.raises(StorageError) as failure:
        with database.writing("update the test table") as connection:
            connection.execute(insert(items).values(value=b"x" * (1 << 20)))

    error = failure.value
    assert isinstance(error, DiskFullError), error
    assert "cannot rollback" not in str(error).lower()
    assert str(path) in error.user_message and "the disk is full" in error.user_message
    assert "PAPERBOT_DATA_DIR" in error.user_message and "nothing was lost" in str(error)
    cause = error.__cause__
    assert cause is not None and isinstance(getattr(cause, "orig", None), sqlite3.Error), cause
    assert "cannot rollback" not in str(cause), cause

    disk.free()
    with database.writing("update the test table") as connection:  # usable again, nothing half-done remains
        connection.execute(insert(items).values(value=b"y"))
    with database.reading() as connection:
        assert connection.execute(select(items.c.value)).all() == [(b"y",)]
    database.dispose()


# --- the CLI --------------------------------------------------------------------------------------


def test_search_and_ask_answer_from_the_index_while_the_disk_is_full(disk: FullDisk, base_index: Path) -> None:
    data_dir = disk.copy_index(base_index)
    before = stored_records(data_dir)
    disk.fill()

    found = paperbot("search", "Rosenbrock methods", "--k", "3", "--json", data_dir=data_dir)
    assert found.code == 0, found.stderr
    assert "Traceback" not in found.stderr
    assert any("Rosenbrock" in hit["title"] for hit in found.json()["results"]), found.stdout
    warnings = [line for line in found.stderr.splitlines() if "is full" in line]
    assert len(warnings) == 1 and "PAPERBOT_DATA_DIR" in warnings[0], found.stderr  # said once, not per store

    disk.fill()  # whatever the search process released
    answered = paperbot("ask", ROSENBROCK, "--json", data_dir=data_dir)
    assert answered.code == 0, answered.stderr
    result = answered.json()
    assert result["citations"], result
    assert any("Rosenbrock" in citation["title"] for citation in result["citations"]), result

    disk.free()
    assert stored_records(data_dir) == before


def test_ingest_on_a_full_disk_fails_in_one_line_and_works_once_space_is_freed(
    disk: FullDisk, base_index: Path, tmp_path: Path
) -> None:
    data_dir = disk.copy_index(base_index)
    more = tmp_path / "more.bib"
    more.write_text(bib_entries(30, start=1000), encoding="utf-8")
    before = stored_records(data_dir)
    vectors = _vector_count(data_dir)
    disk.fill()

    failed = paperbot("ingest", str(more), data_dir=data_dir)

    assert failed.code == 2, (failed.stdout, failed.stderr)
    assert "Traceback" not in failed.stderr
    line = failed.last_error_line
    assert line.startswith("paperbot: "), failed.stderr
    assert "the disk is full" in line and f"PAPERBOT_DATA_DIR, {data_dir}" in line, line
    assert "Free some disk space and retry; nothing was lost." in line, line

    disk.free()
    assert stored_records(data_dir) == before  # the failed ingest left no record ...
    assert _vector_count(data_dir) == vectors  # ... and no vector behind
    doctor = run_main("doctor", "--json", data_dir=data_dir)
    assert doctor.code == 0, doctor.stdout + doctor.stderr
    assert doctor.json()["records"] == len(before)

    again = paperbot("ingest", str(more), "--json", data_dir=data_dir)
    assert again.code == 0, again.stderr
    added = again.json()["added"]
    assert added > 0
    assert len(stored_records(data_dir)) == len(before) + added
    clean = run_main("doctor", "--json", data_dir=data_dir)
    assert clean.code == 0 and clean.json()["records"] == len(before) + added, clean.stdout


@pytest.mark.postgres
def test_ingest_when_the_database_servers_disk_is_full_fails_in_one_line_and_works_once_space_is_freed(
    postgres_server: PostgresServer, corpus: list[Path], model_cache: Path, tmp_path: Path
) -> None:
    """The same on PostgreSQL, with the server's disk full: the test database lives in a tablespace
    on the tmpfs (its tables, indexes and catalog), the data dir on the ordinary disk; the server
    answers the write with SQLSTATE 53100 (disk_full), which the store reports as the server's disk.
    The tmpfs is mounted in the cluster's own directory, which the server's user can reach."""
    name = f"full_{os.getpid()}_{tmp_path.name}"[:60]
    disks = postgres_server.root / "disks"
    disks.mkdir(exist_ok=True)
    disks.chmod(0o755)  # made under the tests' umask (0o077 at times): the server's user must pass
    with _mounted(disks / name) as disk:
        space = disk.mount / "tablespace"
        space.mkdir()
        if postgres_server.user is not None:  # the cluster runs as another user (as root: nobody)
            entry = pwd.getpwnam(postgres_server.user)
            os.chown(space, entry.pw_uid, entry.pw_gid)
        postgres_server.execute(f"CREATE TABLESPACE \"{name}\" LOCATION '{space}'")
        url = postgres_server.new_database(tablespace=name)
        try:
            _server_disk_full(disk, url, corpus, model_cache, tmp_path, postgres_server)
        finally:
            close_databases()
            postgres_server.drop_database(url)
            postgres_server.execute(f'DROP TABLESPACE IF EXISTS "{name}"')


def _server_disk_full(disk: FullDisk, url: str, corpus: list[Path], model_cache: Path, tmp_path: Path,
                      server: PostgresServer) -> None:
    """The ingest, search, repair and ingest again of the test above, on ``url`` whose disk is ``disk``."""
    data_dir = link_model_cache(tmp_path / "data", model_cache)
    base = paperbot("ingest", *map(str, corpus), "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert base.code == 0, base.stderr
    # 100 records, one ingest batch, cannot fit in the free space left in the tables' last pages
    # once VACUUM has given back the empty pages PostgreSQL extends a table by ahead of need (a run
    # that filled the disk after such an extension ingested 30 records without an error)
    more = tmp_path / "more.bib"
    more.write_text(bib_entries(100, start=1000), encoding="utf-8")
    before = stored_records(data_dir, url)
    server.vacuum_tables(url)
    disk.fill()

    failed = paperbot("ingest", str(more), data_dir=data_dir, PAPERBOT_DATABASE_URL=url)

    assert failed.code == 2, (failed.stdout, failed.stderr)
    assert "Traceback" not in failed.stderr
    line = failed.last_error_line
    assert line.startswith("paperbot: "), failed.stderr
    assert "the disk is full (the database server's disk)" in line, line
    assert "Free some disk space and retry; nothing was lost." in line, line

    found = paperbot("search", "Rosenbrock methods", "--k", "3", "--json", data_dir=data_dir,
                     PAPERBOT_DATABASE_URL=url)
    if found.code == 0:  # reads still answer while the server's disk is full ...
        assert any("Rosenbrock" in hit["title"] for hit in found.json()["results"]), found.stdout
    else:  # ... unless the server refuses the new connection itself (it must rewrite its relation cache
        # init file there, "could not write init file"): then one line that says so, never "no connection"
        assert found.code == 2 and "Traceback" not in found.stderr, found.stderr
        assert "the disk is full (the database server's disk)" in found.last_error_line, found.stderr

    disk.free()
    # read once space is back: a new connection to a server whose disk is full can be refused
    # (it rewrites the relation cache's init file), and only paperbot's own commands are under test
    assert stored_records(data_dir, url) == before  # the failed batch left no record
    repaired = run_main("doctor", "--repair", "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert repaired.code == 0, repaired.stdout + repaired.stderr
    assert repaired.json()["records"] == len(before)
    again = paperbot("ingest", str(more), "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert again.code == 0, again.stderr
    added = again.json()["added"]
    assert added > 0 and len(stored_records(data_dir, url)) == len(before) + added
    clean = run_main("doctor", "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert clean.code == 0, clean.stdout + clean.stderr
    report = clean.json()
    assert report["records"] == report["vectors"] == len(before) + added
    assert report["missing_vectors"] == report["stale_vectors"] == report["orphan_vectors"] == []


# --- the Slack door ------------------------------------------------------------------------------
# The Slack harness of tests/slack (the app served on 127.0.0.1, signed requests, the Web API
# stand-in recording every call), with the bot's data dir (``tmp_path / "bot0"``, where
# ``make_bot`` puts the first bot) on a tmpfs of its own, and the index on it too.


@pytest.fixture
def bot_disk(tmp_path: Path) -> Iterator[FullDisk]:
    with _mounted(tmp_path / "bot0") as disk:
        yield disk


@pytest.fixture
def assistant(bot_disk: FullDisk, base_index: Path) -> Iterator[Assistant]:
    """The core the bot answers with, over a copy of the base index on the bot's disk, warmed up
    as ``paperbot serve`` does before taking questions (``make_bot`` uses this fixture)."""
    core = Assistant(make_settings(bot_disk.copy_index(base_index)), chat_model=None)
    core.index.warm_up()
    yield core
    core.index.close()


def test_slack_answers_a_question_on_a_full_disk_and_says_what_was_not_saved(
    bot_disk: FullDisk, make_bot: BotFactory  # noqa: F811 - the fixture imported from tests.slack.conftest
) -> None:
    bot = make_bot()
    state = bot.settings.database_path  # the database holding the Slack state
    assert os.stat(state).st_dev == os.stat(bot_disk.mount).st_dev  # the Slack state is on the full disk
    bot_disk.fill()

    response, ts = bot.sender.mention(ROSENBROCK)
    assert response.status_code == 200

    [note] = bot.api.wait_calls("chat.postMessage", where=lambda call: call.params.get("thread_ts") == ts
                                and "disk is full" in call.text(), timeout=60)
    answers = [call for call in bot.api.calls_to("chat.update")
               if call.params.get("channel") == "CGENERAL1" and "Implementation of Rosenbrock methods" in call.text()]
    assert answers, [call.text()[:300] for call in bot.api.calls]  # answered, not dropped
    assert "paperbot_vote_up" not in json.dumps(answers[-1].params.get("blocks"))  # no buttons to a lost answer
    text = note.text()
    assert "PAPERBOT_DATA_DIR" in text and "nothing was lost" in text and "not saved" in text, text
    assert "Sorry, something went wrong" not in "".join(call.text() for call in bot.api.calls)
