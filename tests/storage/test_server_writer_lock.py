"""Writers of one PostgreSQL database coordinate through it (issue #31): two ingests from two data
dirs bringing the same paper at once end in one record carrying both sources, and a writer kept
waiting names the holder and gives up with ``BusyError`` (``storage.locks.ServerWriterLock``).

Each ingest widens the race on purpose: it waits 0.3 s after looking up the records its batch
must merge with, so that without the lock both would look before either wrote, and the later
write would drop the other's provenance.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval.errors import BusyError
from retrieval.index.paper_index import PaperIndex
from retrieval.ingest.pipeline import ingest_papers
from retrieval.records.paper import Author, Paper, Provenance
from retrieval.storage.locks import ServerWriterLock, hold_writer_lock
from retrieval.storage.records import RecordStore
from tests.index.conftest import HashEncoder, make_settings
from tests.support.patience import patience

pytestmark = pytest.mark.postgres

DOI = "10.1000/same-paper"


def _paper(source: str, abstract: str | None) -> Paper:
    return Paper(title="Sparse solvers on many cores", doi=DOI, published="2024", abstract=abstract,
                 authors=[Author(name="Zhang Zhao")], provenance=[Provenance(source=source, source_id=f"{source}-1")])


@pytest.fixture
def url(postgres_server) -> Iterator[str]:
    from retrieval.storage.database import close_databases

    made = postgres_server.new_database()
    try:
        yield made
    finally:
        close_databases()
        postgres_server.drop_database(made)


def test_two_ingests_of_the_same_paper_from_two_data_dirs_end_in_one_record_with_both_sources(
        tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    find_matches_many = RecordStore.find_matches_many

    def slow_find_matches(store: RecordStore, batch: list[Paper]) -> list[list[Paper]]:
        found = find_matches_many(store, batch)
        time.sleep(0.3)
        return found

    monkeypatch.setattr(RecordStore, "find_matches_many", slow_find_matches)
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def ingest(name: str, paper: Paper) -> None:
        settings = make_settings(tmp_path / name, database_url=url)
        try:
            start.wait()
            with hold_writer_lock(settings, "ingest", wait=30):
                index = PaperIndex.open(settings, HashEncoder())
                try:
                    ingest_papers(index, [paper])
                finally:
                    index.close()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=ingest, args=("a", _paper("bibtex", None))),
               threading.Thread(target=ingest, args=("b", _paper("openalex", "An abstract only OpenAlex has.")))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=patience(120))
    assert errors == []
    with RecordStore.open(make_settings(tmp_path / "c", database_url=url)) as store:
        assert store.count() == 1
        (record,) = store.iter_papers()
    assert sorted(entry.source for entry in record.provenance) == ["bibtex", "openalex"]
    assert record.abstract == "An abstract only OpenAlex has."


def test_a_waiting_writer_names_the_holder_and_gives_up(tmp_path: Path, url: str) -> None:
    holding, waiting = make_settings(tmp_path / "a", database_url=url), make_settings(tmp_path / "b", database_url=url)
    notices: list[str] = []
    with hold_writer_lock(holding, "sync"):
        assert ServerWriterLock(waiting, "ingest").holder().activity == "sync"
        started = time.monotonic()
        with pytest.raises(BusyError) as busy, hold_writer_lock(waiting, "ingest", wait=0.5, notice=notices.append):
            pass
        assert 0.5 <= time.monotonic() - started < 5
    assert "Another paperbot sync is still running on the database" in busy.value.user_message
    assert notices and notices[0].startswith("Waiting for another paperbot sync on the database")
    with hold_writer_lock(waiting, "ingest", wait=0):  # released: taken at once
        pass
