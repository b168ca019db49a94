"""A records.sqlite3 made before the database, upgraded with nothing lost (issue #31).

The store is made the way the record store made it (``tests/support/legacy_records.py``: its
positional migrations, then its own write) from the bundled sample corpus, some records carrying
the provenance of several sources, with metadata and a pending vector move. Opening it with this
code upgrades it in place on SQLite (the database *is* that file) and imports it on a real
PostgreSQL; either way every record and provenance entry, every lookup and side-table row, and
every metadata value read back equal to what was written, and the file imported from is not
changed.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import select

from retrieval.config import Settings
from retrieval.records.merge import merge_papers
from retrieval.records.paper import Paper, Provenance
from retrieval.storage.database import Database
from retrieval.storage.database import database_url as url_of
from retrieval.storage.legacy_records import RECORD_TABLES
from retrieval.storage.records import RecordStore
from retrieval.storage.schema import HEAD, described_here, metadata
from tests.support.legacy_records import legacy_store

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "retrieval" / "sample" / "arxiv_sample.jsonl"
META = {"encoder": "test/hash", "ingested:sample": "abc123", "derived_refresh": "pending"}


def _papers() -> list[Paper]:
    """The sample corpus; every tenth record also as a second source saw it (merged provenance)."""
    papers = [Paper.model_validate_json(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    for i in range(0, len(papers), 10):
        other = papers[i].model_copy(update={"provenance": [Provenance(source="bibtex", source_id=f"entry{i}")]})
        papers[i] = merge_papers(papers[i], other)
    assert sum(len(paper.provenance) > 1 for paper in papers) >= 50
    return papers


def _rows(path: Path) -> dict[str, set[tuple]]:
    """Every row of every record table of a SQLite file, read without writing to it."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {table: set(conn.execute(f"SELECT * FROM {table}").fetchall()) for table in RECORD_TABLES}
    finally:
        conn.close()


def _database_rows(settings: Settings) -> dict[str, set[tuple]]:
    database = Database(url_of(settings), data_dir=settings.data_dir)
    try:
        with database.reading() as connection:
            # the columns a records file has: the change feed's column came with the database
            return {table: {tuple(row) for row in connection.execute(
                        select(*(column for column in metadata.tables[table].c if column.name != "change_seq")))
                        if row[0] != "change_feed"}
                    for table in RECORD_TABLES}
    finally:
        database.dispose()


@pytest.fixture
def made_before(tmp_path: Path) -> tuple[Path, list[Paper]]:
    """A data dir whose records.sqlite3 the record store made before the database, with a
    vector move still pending."""
    papers = _papers()
    path = tmp_path / "data" / "records.sqlite3"
    legacy_store(path, papers, meta=META)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO vector_moves VALUES (?, ?, ?)", ("hash:old", papers[1].id, "e" * 16))
    conn.commit()
    conn.close()
    return path, papers


@pytest.mark.parametrize("database_url", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
                         indirect=True)
def test_every_record_and_provenance_entry_survives_the_upgrade(made_before: tuple[Path, list[Paper]],
                                                                database_url: str | None) -> None:
    path, papers = made_before
    before = _rows(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    settings = Settings(_env_file=None, data_dir=path.parent, database_url=database_url)

    with RecordStore.open(settings) as store:
        stored = {paper.id: paper for paper in store.iter_papers()}
        assert store.count() == len(papers) == len(stored)
        for paper in papers:
            assert stored[paper.id] == paper
            assert stored[paper.id].provenance == paper.provenance  # source by source, in order
        meta = store.meta()
        assert len(meta.pop("change_feed")) == 32  # the change feed's id, made by the upgrade
        assert meta == {**META, "generation": "1"}
        changes = store.changes_since(0)  # every record is filed under the generation it was upgraded at
        assert changes is not None and [record.id for record in changes.records] == sorted(stored)
        assert changes.generation == 1 and store.changes_since(1) == replace(changes, since=1, records=[])
        assert store.vector_moves() == [("hash:old", papers[1].id, "e" * 16)]
        assert store.derived_refresh_pending()

    assert _database_rows(settings) == before  # every column of every row, side tables included
    database = Database(url_of(settings), data_dir=settings.data_dir)
    try:
        assert database.revision() == HEAD
        with database.reading() as connection:
            context = MigrationContext.configure(connection, opts={"include_name": described_here})
            assert compare_metadata(context, metadata) == []
    finally:
        database.dispose()
    if database_url is not None:  # imported: the file was only read
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("database_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True)
def test_an_older_records_file_is_brought_up_to_date_as_it_is_imported(tmp_path: Path, database_url: str) -> None:
    """A file at schema 2 (no author_names yet) gets its missing migrations in memory on the way."""
    papers = _papers()[:40]
    path = tmp_path / "data" / "records.sqlite3"
    legacy_store(path, papers)
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE author_names")
    conn.execute("DROP TABLE vector_moves")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    with RecordStore.open(Settings(_env_file=None, data_dir=path.parent, database_url=database_url)) as store:
        assert {paper.id: paper for paper in store.iter_papers()} == {paper.id: paper for paper in papers}
        author = papers[0].authors[0].name
        assert author in {name for name, _ in store.author_names_filed_under([author.split()[-1].lower()])}
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
