"""`paperbot db upgrade`: an operator's step that upgrades the database's schema, on SQLite and on
PostgreSQL (``database_url``), importing an old data dir's roster.json on the way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.storage.database import close_databases
from retrieval.storage.schema import HEAD
from tests.cli.conftest import paperbot_here
from tests.support.model_cache import link_model_cache


def test_db_upgrade_says_what_it_did_then_that_there_is_nothing_to_do(tmp_path: Path, database_url: str | None) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "roster.json").write_text(json.dumps({"version": 1, "scholars": [
        {"name": "Ada Lovelace", "orcid": "0000-0002-1825-0097", "aliases": ["A. Lovelace"],
         "added_at": "2025-01-01T00:00:00+00:00", "last_synced": {"arxiv": "2025-02-01T00:00:00+00:00"}}]}),
        encoding="utf-8")
    url = database_url or ""  # blank: unset, SQLite in the data dir

    first = paperbot_here("db", "upgrade", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert first.code == 0, first.stderr
    where = str((data_dir / "records.sqlite3").resolve()) if database_url is None else database_url
    assert first.stdout.startswith(f"Upgraded the database {where}") and first.stdout.rstrip().endswith(
        f"from schema (none) to {HEAD}.")
    close_databases()
    again = paperbot_here("db", "upgrade", "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert again.code == 0, again.stderr
    report = again.json()
    assert (report["before"], report["after"], report["upgraded"]) == (HEAD, HEAD, False)
    assert report["database"]["current"] is True and report["database"]["backend"] == (
        "sqlite" if database_url is None else "postgresql")
    listed = paperbot_here("scholars", "list", "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert [(s["name"], s["last_synced"]) for s in listed.json()] == [("Ada Lovelace", {"arxiv": "2025-02-01T00:00:00+00:00"})]


def test_db_upgrade_names_an_unreachable_server_in_one_line(tmp_path: Path) -> None:
    run = paperbot_here("db", "upgrade", data_dir=tmp_path / "data",
                        PAPERBOT_DATABASE_URL="postgresql://bot:s3cret@127.0.0.1:9/papers")
    assert run.code == 2
    assert "no connection to the database postgresql+psycopg://bot:***@127.0.0.1:9/papers" in run.stderr
    assert "s3cret" not in run.stderr and "Traceback" not in run.stderr


def test_a_damaged_roster_json_is_set_aside_and_named_by_the_upgrade(tmp_path: Path, database_url: str | None) -> None:
    _set_aside_by_the_upgrade(tmp_path / "data", database_url)


@pytest.mark.slow  # doctor loads the encoder
def test_doctor_names_a_roster_json_the_upgrade_set_aside(tmp_path: Path, database_url: str | None,
                                                          model_cache: Path) -> None:
    data_dir = link_model_cache(tmp_path / "data", model_cache)
    aside = _set_aside_by_the_upgrade(data_dir, database_url)
    close_databases()
    url = database_url or ""
    doctor = paperbot_here("doctor", "--no-model", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert doctor.code in (0, 3), doctor.stderr
    assert f"A damaged roster.json was set aside when the database was created: {aside}" in doctor.stdout
    report = paperbot_here("doctor", "--no-model", "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url).json()
    assert report["database"]["set_aside"] == [str(aside)] and report["database"]["current"] is True


def _set_aside_by_the_upgrade(data_dir: Path, database_url: str | None) -> Path:
    """``paperbot db upgrade`` of a data dir whose roster.json is damaged; the file's new path."""
    data_dir.mkdir(parents=True, exist_ok=True)
    damaged = b'{"version": 1, "scholars": [{"name": "Ada Lovel'
    (data_dir / "roster.json").write_bytes(damaged)
    url = database_url or ""
    aside = data_dir / "roster.damaged.json"

    run = paperbot_here("db", "upgrade", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert run.code == 0, run.stderr
    assert run.stdout.rstrip().endswith(f"from schema (none) to {HEAD}.")
    assert f"The roster {data_dir / 'roster.json'} is damaged" in run.stderr
    assert f"renamed {aside}" in run.stderr and "paperbot scholars add" in run.stderr
    assert aside.read_bytes() == damaged and not (data_dir / "roster.json").exists()
    listed = paperbot_here("scholars", "list", "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert listed.code == 0 and len(listed.json()) == 0
    return aside
