"""A record's side rows (``title_variants``, ``author_names``) live and die with it.

Since revision 0009_side_rows_unchecked no foreign key deletes them: the record store does, in the
write that deletes or replaces the record (``records.delete_records``). On SQLite and on a real
PostgreSQL, after puts, replacements and deletions the side tables hold exactly the rows
``record_rows`` makes for the stored records; the revision keeps every row when it drops the key,
and downgrading gives the key back.
"""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, select, text

from retrieval.config import Settings
from retrieval.records.paper import Author, Paper
from retrieval.storage import migrate
from retrieval.storage.database import Database
from retrieval.storage.record_rows import author_name_rows, variant_keys
from retrieval.storage.records import RecordStore
from retrieval.storage.schema import HEAD, author_names, title_variants

BEFORE = "0008_job_followers"
SIDE_TABLES = (title_variants, author_names)




def _side_rows(record_database: Database) -> dict[str, set[tuple]]:
    with record_database.reading() as connection:
        return {table.name: {tuple(row) for row in connection.execute(select(table))} for table in SIDE_TABLES}


def _expected(papers: list[Paper]) -> dict[str, set[tuple]]:
    """The side rows ``record_rows`` makes for ``papers``."""
    return {"title_variants": {(paper.id, key) for paper in papers for key in variant_keys(paper.title)},
            "author_names": {tuple(row) for paper in papers for row in author_name_rows(paper, paper.id)}}


def _foreign_keys(record_database: Database) -> dict[str, list[str]]:
    with record_database.reading() as connection:
        found = inspect(connection)
        return {table.name: [key["referred_table"] for key in found.get_foreign_keys(table.name)]
                for table in SIDE_TABLES}


def test_puts_replacements_and_deletions_leave_exactly_the_stored_records_side_rows(
        settings: Settings, record_database: Database, arxiv_papers: list[Paper]) -> None:
    papers = arxiv_papers[:12]
    with RecordStore.open(settings) as store:
        store.put_many(papers)
        assert _side_rows(record_database) == _expected(papers)

        # a replacement by id: the old title's variants and the old authors' names go
        renamed = papers[0].model_copy(update={"title": "Entirely Different Words For This Record",
                                               "authors": [Author(name="Zofia Kowalczyk-Nowak")]})
        store.put_many([renamed])
        stored = [renamed, *papers[1:]]
        assert _side_rows(record_database) == _expected(stored)

        # deleted alone, and deleted while another record is put in the same write
        assert store.delete_many([papers[1].id, papers[2].id]) == 2
        assert store.write(put=[papers[1]], delete=[papers[3].id, papers[4].id]) == 2
        stored = [renamed, papers[1], *papers[5:]]
        assert store.ids() == {paper.id for paper in stored}
        assert _side_rows(record_database) == _expected(stored)

        store.delete_many([paper.id for paper in stored])
    assert _side_rows(record_database) == {"title_variants": set(), "author_names": set()}


def test_the_side_tables_carry_no_foreign_key(record_database: Database) -> None:
    assert record_database.revision() == HEAD
    assert _foreign_keys(record_database) == {"title_variants": [], "author_names": []}


def test_the_revision_keeps_every_side_row_and_downgrading_gives_the_key_back(
        settings: Settings, record_database: Database, arxiv_papers: list[Paper]) -> None:
    papers = arxiv_papers[:20]
    with RecordStore.open(settings) as store:
        store.put_many(papers)
    rows = _side_rows(record_database)
    assert rows == _expected(papers) and all(rows.values())
    with record_database.writing("plant a side row whose record is gone") as connection:
        connection.execute(title_variants.insert().values(paper_id="hash:gone", key="a record deleted by hand"))

    with record_database.writing("downgrade") as connection:
        command.downgrade(migrate.alembic_config(connection, data_dir=str(settings.data_dir)), BEFORE)
    assert record_database.revision() == BEFORE
    assert _foreign_keys(record_database) == {"title_variants": ["papers"], "author_names": ["papers"]}
    assert _side_rows(record_database) == rows  # the orphan went, nothing else
    with record_database.writing("delete a record under the key") as connection:
        connection.execute(text("DELETE FROM papers WHERE id = :id"), {"id": papers[0].id})
    assert _side_rows(record_database) == _expected(papers[1:])  # the key's ON DELETE CASCADE is back

    assert migrate.upgrade(record_database) is True
    assert record_database.revision() == HEAD
    assert _foreign_keys(record_database) == {"title_variants": [], "author_names": []}
    assert _side_rows(record_database) == _expected(papers[1:])


def test_side_rows_left_by_a_deletion_by_hand_are_counted_and_dropped(
        settings: Settings, record_database: Database, arxiv_papers: list[Paper]) -> None:
    papers = arxiv_papers[:6]
    with RecordStore.open(settings) as store:
        store.put_many(papers)
        assert store.side_rows_without_record() == 0
        gone = papers[:2]
        with record_database.writing("delete records behind the store's back") as connection:
            for paper in gone:
                connection.execute(text("DELETE FROM papers WHERE id = :id"), {"id": paper.id})
        left = sum(len(rows) for rows in _expected(gone).values())
        assert left > 0 and store.side_rows_without_record() == left
        assert store.drop_side_rows_without_record() == left
        assert store.side_rows_without_record() == 0
    assert _side_rows(record_database) == _expected(papers[2:])
