"""The record store's change feed (``storage.record_changes``), on SQLite and on a real PostgreSQL:
what each write stamps, what a reader reads after a generation, concurrent writers never
skipped, and a database of revision 0003_records upgraded with every record stamped."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import insert

from retrieval.config import Settings
from retrieval.records.paper import Paper
from retrieval.storage import migrate
from retrieval.storage.database import Database
from retrieval.storage.database import database_url as url_of
from retrieval.storage.records import RecordStore
from retrieval.storage.schema import HEAD, meta, papers


def _paper(n: int, abstract: str = "text") -> Paper:
    return Paper(title=f"Paper number {n} on sparse solvers", abstract=abstract, year=2000 + n % 20,
                 arxiv_id=f"2401.{n:05d}")


def _settings(tmp_path: Path, url: str | None) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data", database_url=url)


@pytest.fixture
def store(tmp_path: Path, database_url: str | None) -> Iterator[RecordStore]:
    with RecordStore.open(_settings(tmp_path, database_url)) as opened:
        yield opened


def test_each_write_files_what_it_changed_under_its_generation(store: RecordStore) -> None:
    first = [_paper(n) for n in range(5)]
    store.put_many(first)
    start = store.changes_since(0)
    assert start is not None and start.generation == store.generation() == 1
    assert [record.id for record in start.records] == sorted(paper.id for paper in first) and start.removed == []
    assert start.records[0].title == min(first, key=lambda paper: paper.id).title  # the text, not just the id

    store.put_many([_paper(1, "a new abstract")])  # 2: an update
    assert store.delete_many([first[2].id, "arxiv:no-such-id"]) == 1  # 3: a removal (the unknown id is no change)
    changes = store.changes_since(1)
    assert changes is not None and changes.generation == 3 and changes.feed == start.feed
    assert [(record.id, record.abstract) for record in changes.records] == [(first[1].id, "a new abstract")]
    assert changes.removed == [first[2].id]
    latest = store.changes_since(2)
    assert latest is not None and latest.records == [] and latest.removed == [first[2].id]
    assert store.changes_since(3) == replace(latest, since=3, removed=[])

    store.put_many([first[2]])  # 4: stored again, no longer removed
    again = store.changes_since(1)
    assert again is not None and again.removed == [] and {r.id for r in again.records} == {first[1].id, first[2].id}
    store.write(put=[first[3]], delete=[first[3].id])  # 5: removed and stored in one write: stored
    last = store.changes_since(4)
    assert last is not None and [r.id for r in last.records] == [first[3].id] and last.removed == []


def test_a_reader_too_far_behind_is_told_so(store: RecordStore) -> None:
    store.put_many([_paper(n) for n in range(10)])
    store.delete_many([_paper(0).id])  # 9 records and a removal since generation 0
    assert store.changes_since(0, limit=9) is None
    within = store.changes_since(0, limit=10)
    assert within is not None and len(within) == 10
    assert (one := store.changes_since(1, limit=1)) is not None and one.removed == [_paper(0).id]


def test_the_feed_belongs_to_its_database(tmp_path: Path, postgres_databases: Callable[[], str]) -> None:
    """Two databases have two feeds: a position in one is not read against the other."""
    feeds: set[str] = set()
    for url in (None, postgres_databases()):
        with RecordStore.open(_settings(tmp_path / str(len(feeds)), url)) as opened:
            changes = opened.changes_since(0)
            assert changes is not None and len(changes.feed) == 32
            feeds.add(changes.feed)
    assert len(feeds) == 2


def test_concurrent_writers_are_never_skipped(store: RecordStore) -> None:
    """Writers in threads while a reader follows the feed from the generation it last read: once
    the writers are done and the reader has read once more, it has seen every record. A sequence
    numbered outside the writers' commit order would let it move past a change still in flight."""
    writers, each = 4, 15
    seen: set[str] = set()
    done = threading.Event()
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for n in range(each):
                store.put_many([_paper(1000 * worker + n)])
        except BaseException as exc:
            errors.append(exc)

    def follow() -> None:
        position = 0
        try:
            while True:
                finished = done.is_set()
                changes = store.changes_since(position)
                assert changes is not None and changes.generation >= position
                seen.update(record.id for record in changes.records)
                position = changes.generation
                if finished:
                    return
        except BaseException as exc:
            errors.append(exc)

    reader = threading.Thread(target=follow)
    threads = [threading.Thread(target=write, args=(worker,)) for worker in range(writers)]
    reader.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    reader.join()
    assert errors == []
    assert seen == store.ids() and len(seen) == writers * each
    assert store.generation() == writers * each


def test_a_database_of_revision_0003_is_upgraded_with_every_record_stamped(tmp_path: Path,
                                                                           database_url: str | None) -> None:
    """Data dirs made before the change feed: their records get the store's generation then, so an
    index built at that generation reads none of them, one built earlier all of them."""
    settings = _settings(tmp_path, database_url)
    settings.data_dir.mkdir(parents=True)
    database = Database(url_of(settings), data_dir=settings.data_dir)
    with database.writing("make a database of revision 0003_records") as connection:
        command.upgrade(migrate.alembic_config(connection, data_dir=str(settings.data_dir)), "0003_records")
    with database.writing("store records as revision 0003_records did") as connection:
        for n in range(3):  # the columns of revision 0003_records only
            connection.execute(insert(papers), {
                "id": _paper(n).id, "fingerprint": f"f{n}", "title_key": f"t{n}", "content_hash": "c",
                "embedding_hash": "e", "updated_at": "2026-01-01T00:00:00+00:00", "record": _paper(n).model_dump_json()})
        connection.execute(insert(meta), {"key": "generation", "value": "7"})
    assert database.revision() == "0003_records"
    with RecordStore.open(settings) as upgraded:
        assert database.revision() == HEAD
        changes = upgraded.changes_since(6)
        assert changes is not None and changes.generation == 7
        assert [record.id for record in changes.records] == sorted(_paper(n).id for n in range(3))
        current = upgraded.changes_since(7)
        assert current is not None and current.records == [] and current.feed == changes.feed
        upgraded.put_many([_paper(9)])  # the next write numbers on
        after = upgraded.changes_since(7)
        assert after is not None and after.generation == 8 and [r.id for r in after.records] == [_paper(9).id]
    database.dispose()
