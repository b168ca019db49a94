"""Which record each entry of a file made: the ``file_entries`` side table (revision 0010_file_entries).

A provenance entry read from a file names the file (``Provenance.file``). On SQLite and on a real
PostgreSQL the table holds exactly the rows ``record_rows.file_entry_rows`` makes for the stored
records after puts, replacements and deletions; ``find_matches`` and ``find_matches_many`` find a
record by the entry that made it (the same file, source and key), whatever its title says now, and
only by that file's entry; the revision fills the table in for records that name their file when
it is applied again after a downgrade.
"""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, select

from retrieval.config import Settings
from retrieval.records.paper import Paper, Provenance
from retrieval.storage import migrate
from retrieval.storage.database import Database
from retrieval.storage.record_rows import file_entry_rows
from retrieval.storage.records import RecordStore
from retrieval.storage.schema import HEAD, file_entries

BEFORE = "0009_side_rows_unchecked"
MINE = "/home/someone/papers/mine.bib"
THEIRS = "/home/someone/papers/theirs.bib"




def _from_file(paper: Paper, key: str, file: str | None) -> Paper:
    """``paper`` as one BibTeX entry of ``file`` made it (its arXiv provenance kept beside)."""
    entry = Provenance(source="bibtex", source_id=key, fields=["title"], retrieved="2026-12-05", file=file)
    return paper.model_copy(update={"provenance": [*paper.provenance, entry]})


def _rows(record_database: Database) -> set[tuple]:
    with record_database.reading() as connection:
        return {tuple(row) for row in connection.execute(
            select(file_entries.c.paper_id, file_entries.c.source, file_entries.c.source_id, file_entries.c.file))}


def _expected(papers: list[Paper]) -> set[tuple]:
    return {row for paper in papers for row in file_entry_rows(paper, paper.id)}


def test_the_rows_follow_the_stored_records(settings: Settings, record_database: Database, arxiv_papers: list[Paper]) -> None:
    papers = [_from_file(paper, f"key{n}", MINE if n % 2 else None) for n, paper in enumerate(arxiv_papers[:8])]
    with RecordStore.open(settings) as store:
        store.put_many(papers)
        assert _rows(record_database) == _expected(papers)
        assert len(_rows(record_database)) == 4  # the entries without a file have no row

        moved = _from_file(arxiv_papers[1], "key1", THEIRS)  # the same entry, read from where it lives now
        store.put_many([moved])
        stored = [papers[0], moved, *papers[2:]]
        assert (moved.id, "bibtex", "key1", THEIRS) in _rows(record_database)
        assert _rows(record_database) == _expected(stored)

        assert store.delete_many([papers[3].id]) == 1
        assert _rows(record_database) == _expected([paper for paper in stored if paper.id != papers[3].id])
        store.delete_many([paper.id for paper in stored])
    assert _rows(record_database) == set()


def test_a_record_is_found_by_the_entry_that_made_it_whatever_its_title_says_now(
        settings: Settings, arxiv_papers: list[Paper]) -> None:
    original, other = _from_file(arxiv_papers[0], "smith2021", MINE), _from_file(arxiv_papers[1], "smith2021", THEIRS)
    corrected = Paper(title="A Title Corrected Beyond Any Variant Of The Stored One", authors=original.authors,
                      provenance=[Provenance(source="bibtex", source_id="smith2021", file=MINE)])
    same_key_elsewhere = corrected.model_copy(update={"provenance": [
        Provenance(source="bibtex", source_id="smith2021", file="/elsewhere/mine.bib")]})
    other_source = corrected.model_copy(update={"provenance": [
        Provenance(source="csl-json", source_id="smith2021", file=MINE)]})
    with RecordStore.open(settings) as store:
        store.put_many([original, other])
        assert [paper.id for paper in store.find_matches(corrected)] == [original.id]
        assert store.find_matches(same_key_elsewhere) == [] and store.find_matches(other_source) == []
        assert [[paper.id for paper in found] for found in store.find_matches_many(
            [corrected, same_key_elsewhere, other_source, original])] == [[original.id], [], [], [original.id]]


def test_the_revision_fills_in_the_records_that_name_their_file(
        settings: Settings, record_database: Database, arxiv_papers: list[Paper]) -> None:
    papers = [_from_file(paper, f"key{n}", MINE if n < 3 else None) for n, paper in enumerate(arxiv_papers[:6])]
    with RecordStore.open(settings) as store:
        store.put_many(papers)
    rows = _rows(record_database)
    assert len(rows) == 3

    with record_database.writing("downgrade") as connection:
        command.downgrade(migrate.alembic_config(connection, data_dir=str(settings.data_dir)), BEFORE)
    assert record_database.revision() == BEFORE
    with record_database.reading() as connection:
        assert not inspect(connection).has_table("file_entries")

    assert migrate.upgrade(record_database) is True
    assert record_database.revision() == HEAD
    assert _rows(record_database) == rows
