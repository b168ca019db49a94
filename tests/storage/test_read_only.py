"""A read-only data dir: told apart from a writable one, read without a write, written to never.

The detection (``config.unwritable_reason``) and SQLite's read-only opens (``open_read_only``)
run in a subprocess for which the directory really is read-only (``tests/support/read_only.py``:
a read-only bind mount for root, no write permission for anyone else). The stores' reactions
to a read-only dir (the record store, the writer lock, the roster, the follows, the Slack state) are
checked in this process with the detection saying "read-only"; the whole of it, through the
real CLI, is ``tests/reliability/test_read_only_data_dir.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.slack.store import SlackStore
from retrieval.alerts.follows import FollowStore
from retrieval.config import Settings, unwritable_reason
from retrieval.errors import DataDirReadOnlyError
from retrieval.records.paper import Author, Paper
from retrieval.storage.locks import hold_writer_lock
from retrieval.storage.records import RecordStore
from retrieval.storage.roster import Roster
from tests.support.legacy_records import as_legacy_store
from tests.support.patience import patience
from tests.support.read_only import read_only_runner, tree_state

ROOT = Path(__file__).resolve().parents[2]
REASON = "a read-only file system"


def _run_python(wrap, code: str) -> dict:
    """Run ``code`` (which prints one JSON object) in a subprocess wrapped by ``wrap``; its output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(wrap([sys.executable, "-c", textwrap.dedent(code)]), capture_output=True, text=True,
                          timeout=patience(120), env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _settings(data_dir: Path) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, chroma_url=None, openai_api_key=None, openai_base_url=None)


def _papers(count: int) -> list[Paper]:
    return [Paper(title=f"Read-only study {n} of sparse solvers", year=2000 + n, authors=[Author(name="Ada Lovelace")],
                  doi=f"10.1000/ro.{n}") for n in range(count)]


# --- telling a read-only dir apart ------------------------------------------------------------


def test_a_writable_dir_and_what_can_be_created_in_it_are_writable(tmp_path: Path) -> None:
    assert unwritable_reason(tmp_path) is None
    assert unwritable_reason(tmp_path / "not" / "made" / "yet") is None


def test_a_read_only_dir_says_why(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "cache").mkdir(parents=True)
    (data_dir / "records.sqlite3").write_bytes(b"")
    before = tree_state(data_dir)
    with read_only_runner(data_dir) as wrap:
        found = _run_python(wrap, f"""
            import json
            from pathlib import Path
            from retrieval.config import unwritable_reason
            data = Path({str(data_dir)!r})
            print(json.dumps({{name: unwritable_reason(data / name) for name in (".", "records.sqlite3", "cache",
                                                                         "lexical/manifest.json")}}))
        """)
    expected = REASON if os.geteuid() == 0 else "no write permission for "
    assert set(found) == {".", "records.sqlite3", "cache", "lexical/manifest.json"}
    for name, reason in found.items():
        assert reason is not None and reason.startswith(expected), (name, reason)
    assert tree_state(data_dir) == before


def test_opening_a_read_only_data_dir_leaves_it_as_it_is_and_says_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    os.chmod(data_dir, 0o755)  # open to others: a writable one would be made private, with a notice
    before = tree_state(data_dir)
    with read_only_runner(data_dir) as wrap:
        found = _run_python(wrap, f"""
            import json
            from pathlib import Path
            from retrieval.config import Settings, open_data_dir
            told = []
            settings = Settings(_env_file=None, data_dir=Path({str(data_dir)!r}))
            open_data_dir(settings, notice=told.append)
            print(json.dumps({{"told": told, "mode": Path({str(data_dir)!r}).stat().st_mode & 0o777}}))
        """)
    assert found["told"] == []
    assert found["mode"] & 0o777 == (0o755 if os.geteuid() == 0 else 0o555)
    assert tree_state(data_dir) == before


# --- SQLite files in a read-only dir ----------------------------------------------------------


def _wal_file(folder: Path, *, keep_log: bool) -> None:
    """A WAL-mode file with 3 rows in ``folder``: closed cleanly (everything in the main file), or
    copied while its connection was open (the rows still in its -wal, with its -shm)."""
    folder.mkdir(parents=True)
    source = folder.parent / f"{folder.name}-source"
    source.mkdir()
    db = sqlite3.connect(source / "x.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE t (n INTEGER)")
    db.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    if keep_log:
        for item in source.iterdir():
            shutil.copy(item, folder / item.name)
    db.close()
    if not keep_log:
        shutil.copy(source / "x.sqlite3", folder / "x.sqlite3")
    shutil.rmtree(source)


def test_sqlite_files_are_read_in_a_read_only_dir_without_a_write(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _wal_file(data_dir / "clean", keep_log=False)
    _wal_file(data_dir / "logged", keep_log=True)
    _wal_file(data_dir / "no-shm", keep_log=True)
    (data_dir / "no-shm" / "x.sqlite3-shm").unlink()
    assert (data_dir / "logged" / "x.sqlite3-wal").stat().st_size > 0  # the rows are in the log
    before = tree_state(data_dir)
    with read_only_runner(data_dir) as wrap:
        found = _run_python(wrap, f"""
            import json
            from pathlib import Path
            from retrieval.errors import DataDirReadOnlyError
            from retrieval.storage.sqlite import open_read_only, unwritable
            data = Path({str(data_dir)!r})
            found = {{}}
            for case in ("clean", "logged", "no-shm", "missing"):
                path = data / case / "x.sqlite3"
                try:
                    db = open_read_only(path, label=f"the test file {{path}}", data_dir=data, reason=unwritable(path))
                    found[case] = db.execute("SELECT COUNT(*) FROM t").fetchone()[0]
                except DataDirReadOnlyError as exc:
                    found[case] = str(exc)
            print(json.dumps(found))
        """)
    assert found["clean"] == 3 and found["logged"] == 3
    assert "x.sqlite3-wal" in found["no-shm"] and "x.sqlite3-shm" in found["no-shm"]
    assert found["missing"].startswith(f"Cannot create the test file {data_dir / 'missing' / 'x.sqlite3'}: "
                                       f"the data dir {data_dir} is read-only (")
    assert tree_state(data_dir) == before


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch) -> str:
    """The stores see their data dir as read-only (``config.unwritable_reason`` says so)."""
    for module in ("retrieval.storage.sqlite", "retrieval.storage.locks"):
        monkeypatch.setattr(f"{module}.unwritable_reason", lambda path: REASON)
    monkeypatch.setattr("retrieval.storage.database.unwritable", lambda path: REASON)
    return REASON


def _stored(path: Path) -> list[tuple]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute("SELECT id, record FROM papers ORDER BY id").fetchall()
    finally:
        db.close()


def test_the_record_store_of_a_read_only_dir_reads_and_refuses_writes(tmp_path: Path, read_only: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data" / "records.sqlite3"
    with monkeypatch.context() as writable:
        writable.setattr("retrieval.storage.sqlite.unwritable_reason", lambda path: None)
        writable.setattr("retrieval.storage.database.unwritable", lambda path: None)
        with RecordStore(path) as store:
            store.put_many(_papers(3))
    before = _stored(path)

    with RecordStore(path) as store:
        assert store.read_only == REASON
        assert store.count() == 3 and store.get(_papers(1)[0].id) == _papers(1)[0]
        with pytest.raises(DataDirReadOnlyError) as failure:
            store.put_many(_papers(5))
    message = str(failure.value)
    assert message.startswith(f"Cannot write to the record store {path}: the data dir {path.parent} is read-only "
                              f"({REASON}); nothing was changed.")
    assert "PAPERBOT_DATA_DIR" in message and "doctor" not in message
    assert _stored(path) == before


def test_a_record_store_that_needs_a_migration_or_does_not_exist_names_what_a_write_would_do(
        tmp_path: Path, read_only: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data" / "records.sqlite3"
    with monkeypatch.context() as writable:
        writable.setattr("retrieval.storage.sqlite.unwritable_reason", lambda path: None)
        writable.setattr("retrieval.storage.database.unwritable", lambda path: None)
        RecordStore(path).close()
    as_legacy_store(path)  # a record store of before the database
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 1")  # as left by an older paperbot
    db.close()
    with pytest.raises(DataDirReadOnlyError, match=r"written by an older paperbot, schema 1\) up to schema \d+"):
        RecordStore(path)
    with pytest.raises(DataDirReadOnlyError, match=r"Cannot create the record store .*other\.sqlite3"):
        RecordStore(path.with_name("other.sqlite3"))
    assert not path.with_name("other.sqlite3").exists()


def test_write_paths_refuse_a_read_only_dir_before_touching_it(tmp_path: Path, read_only: str) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    settings = _settings(data_dir)
    with pytest.raises(DataDirReadOnlyError) as ingest, hold_writer_lock(settings, "ingest"):
        pytest.fail("the writer lock was taken")
    assert str(ingest.value).startswith(f"Cannot ingest: the data dir {data_dir} is read-only ({REASON});")
    with pytest.raises(DataDirReadOnlyError, match=r"^Cannot change the roster: the data dir .* is read-only"):
        Roster.load(settings).add("Ada Lovelace")
    with pytest.raises(DataDirReadOnlyError, match=rf"^Cannot open the Slack state: the data dir {data_dir} is"):
        SlackStore.for_settings(settings)
    with pytest.raises(DataDirReadOnlyError, match=rf"^Cannot open the follows store: the data dir {data_dir} is"):
        FollowStore.for_settings(settings)
    assert list(data_dir.iterdir()) == [] and not settings.database_path.exists()


def test_a_read_only_dir_never_upgraded_reads_its_roster_from_roster_json(tmp_path: Path, read_only: str) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    old = {"version": 1, "scholars": [{"name": "Ada Lovelace", "orcid": "0000-0002-1825-0097",
                                       "added_at": "2025-01-01T00:00:00+00:00", "last_synced": {}}]}
    (data_dir / "roster.json").write_text(json.dumps(old), encoding="utf-8")
    settings = _settings(data_dir)
    roster = Roster.load(settings)
    assert [(s.name, s.orcid) for s in roster.list()] == [("Ada Lovelace", "0000-0002-1825-0097")]
    with pytest.raises(DataDirReadOnlyError, match=r"^Cannot change the roster: the data dir .* is read-only"):
        roster.add("Charles Babbage")
    assert sorted(p.name for p in data_dir.iterdir()) == ["roster.json"]  # no database was made


def _downgrade(path: Path, revision: str) -> None:
    from alembic import command
    from sqlalchemy.engine import make_url

    from retrieval.storage import migrate
    from retrieval.storage.database import Database

    database = Database(make_url(f"sqlite:///{path}"), data_dir=path.parent)
    try:
        with database.writing("downgrade") as connection:
            command.downgrade(migrate.alembic_config(connection, data_dir=str(path.parent)), revision)
    finally:
        database.dispose()


def test_a_backup_at_the_previous_revision_is_read_as_it_is_and_an_older_one_is_refused(
        tmp_path: Path, read_only: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``schema.READ_AS_HEAD``: a read-only record store at a revision whose tables this code
    reads as they are answers reads without an upgrade; one at an earlier revision is refused."""
    from retrieval.storage.schema import READ_AS_HEAD

    path = tmp_path / "data" / "records.sqlite3"
    paper = Paper(title="Half integral weight modular forms", published="2007", authors=[Author(name="Dohoon Choi")])
    with monkeypatch.context() as writable:
        writable.setattr("retrieval.storage.sqlite.unwritable_reason", lambda path: None)
        writable.setattr("retrieval.storage.database.unwritable", lambda path: None)
        with RecordStore(path) as store:
            store.put_many([paper])
        _downgrade(path, READ_AS_HEAD[-1])
    before = _stored(path)
    with RecordStore(path) as store:
        assert store.read_only == REASON
        assert store.get(paper.id) == paper and store.count() == 1
        assert {name for name, _ in store.author_names_filed_under({"choi"})} == {"Dohoon Choi"}
    assert _stored(path) == before  # read as it is: nothing upgraded
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert db.execute("SELECT version_num FROM alembic_version").fetchone() == (READ_AS_HEAD[-1],)
    finally:
        db.close()

    with monkeypatch.context() as writable:
        writable.setattr("retrieval.storage.database.unwritable", lambda path: None)
        _downgrade(path, "0007_follow_claims")
    with pytest.raises(DataDirReadOnlyError, match=r"written by an older paperbot, schema 0007_follow_claims\) up to"):
        RecordStore(path)


def test_doctor_says_how_a_read_only_database_behind_this_code_is_read() -> None:
    """``SchemaStatus.describe``: a read-only data dir is never upgraded, so doctor does not promise
    an upgrade there; it says whether the schema is read as it is or needs a writable copy."""
    from retrieval.storage.database import SchemaStatus
    from retrieval.storage.schema import HEAD, READ_AS_HEAD

    def line(revision: str | None, read_only: str | None) -> str:
        return SchemaStatus(backend="sqlite", where="/backup/records.sqlite3", revision=revision, head=HEAD,
                            read_only=read_only).describe()

    assert "upgraded on next use" in line(READ_AS_HEAD[-1], None)
    assert line(READ_AS_HEAD[-1], REASON).endswith(
        f"schema {READ_AS_HEAD[-1]}, this paperbot's is {HEAD}: read as it is (the data dir is read-only ({REASON}), "
        "and this paperbot reads that schema unchanged).")
    older = line("0007_follow_claims", REASON)
    assert "cannot be upgraded here" in older and "PAPERBOT_DATA_DIR" in older and "next use" not in older
    assert line(HEAD, REASON).endswith(f"schema {HEAD} (current).")
