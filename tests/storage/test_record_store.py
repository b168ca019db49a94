"""The record store: round trips, lookups, transactions and storage failures.

The tests of ``store`` run on SQLite and on a real PostgreSQL (``database_url``); those of
``sqlite_store`` change SQLite's own settings of the connection (page limit, query-only) or its file.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retrieval.config import Settings
from retrieval.errors import StorageError
from retrieval.records.names import author_key, filing_families
from retrieval.records.paper import Author, Paper
from retrieval.storage.records import RecordStore
from tests.index.conftest import by_arxiv
from tests.support.legacy_records import as_legacy_store


def _clock() -> datetime:
    return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path, database_url: str | None) -> Iterator[RecordStore]:
    if database_url is None:
        opened = RecordStore(tmp_path / "data" / "records.sqlite3", clock=_clock)
    else:
        opened = RecordStore.open(Settings(_env_file=None, data_dir=tmp_path / "data", database_url=database_url),
                                  clock=_clock)
    with opened:
        yield opened


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[RecordStore]:
    with RecordStore(tmp_path / "data" / "records.sqlite3", clock=_clock) as opened:
        yield opened


def test_records_round_trip_unchanged(store: RecordStore, arxiv_papers: list[Paper]):
    store.put_many(arxiv_papers)
    assert store.count() == len(arxiv_papers)
    assert store.ids() == {p.id for p in arxiv_papers}
    for paper in arxiv_papers:
        loaded = store.get(paper.id)
        assert loaded == paper
        assert loaded.content_hash == paper.content_hash and loaded.embedding_hash == paper.embedding_hash
        assert loaded.authors[0].family_name == paper.authors[0].family_name
    assert store.get("doi:10.0000/none") is None


def test_family_parts_are_stored_and_read_back(store: RecordStore) -> None:
    paper = Paper(title="T", doi="10.1/x", authors=[{"name": "Martijn de Vos", "family": "de Vos"},
                                                    {"name": "Benjamin van Durme", "family": "van Durme", "particle": "van"}],
                  editors=["Giovanni Da San Martino"], editor_families={"Giovanni Da San Martino": {"family": "Da San Martino"}})
    store.put_many([paper])
    loaded = store.get(paper.id)
    assert loaded == paper and loaded.content_hash == paper.content_hash
    assert [(a.family, a.particle) for a in loaded.authors] == [("de Vos", None), ("van Durme", "van")]
    assert loaded.editor_families["Giovanni Da San Martino"].family == "Da San Martino"


def test_get_many_keeps_the_requested_order_and_skips_unknown_ids(store, arxiv_papers):
    store.put_many(arxiv_papers)
    wanted = [arxiv_papers[5].id, "arxiv:9999.99999", arxiv_papers[1].id]
    assert list(store.get_many(wanted)) == [arxiv_papers[5].id, arxiv_papers[1].id]


def test_texts_are_what_get_many_gives_reduced_to_the_words_in_the_same_order(store, arxiv_papers):
    store.put_many(arxiv_papers)
    wanted = [arxiv_papers[7].id, "arxiv:9999.99999", arxiv_papers[2].id, arxiv_papers[7].id]
    texts = store.texts(wanted)
    assert list(texts) == [arxiv_papers[7].id, arxiv_papers[2].id]
    for paper in store.get_many(wanted).values():
        text = texts[paper.id]
        assert (text.title, text.abstract, text.author_names, text.venue, text.year) == (
            paper.title, paper.abstract, paper.author_names, paper.venue, paper.year)


def test_iter_papers_reads_everything_in_batches(store, arxiv_papers):
    store.put_many(arxiv_papers)
    seen = [p.id for p in store.iter_papers(batch=7)]
    assert sorted(seen) == sorted(p.id for p in arxiv_papers) and len(seen) == len(set(seen))


def test_find_matches_by_each_identifier(store, arxiv_papers):
    original = by_arxiv(arxiv_papers, "0704.0001")  # has a DOI, so its id is the DOI
    store.put_many(arxiv_papers)
    # the same paper seen by a source that only knows the arXiv id
    arxiv_only = original.model_copy(update={"doi": None})
    assert [p.id for p in store.find_matches(arxiv_only)] == [original.id]
    # ... or only the DOI, in another spelling
    doi_only = original.model_copy(update={"arxiv_id": None, "doi": "https://doi.org/10.1103/PhysRevD.76.013009"})
    assert [p.id for p in store.find_matches(Paper.model_validate(doi_only.model_dump()))] == [original.id]
    # ... or neither: title + year + first author's family name (the fingerprint)
    bare = Paper(title=original.title.upper(), published=original.published,
                 authors=[Author(name="Csaba Balázs")])
    assert [p.id for p in store.find_matches(bare)] == [original.id]
    stranger = Paper(title="Something else entirely", published="2020")
    assert store.find_matches(stranger) == []


def test_find_matches_many_gives_what_find_matches_gives_for_each_paper(store, arxiv_papers):
    original = arxiv_papers[0]
    another_version = Paper(title=original.title, published="1999", doi="10.9/other")  # same title
    store.put_many([*arxiv_papers[::2], another_version])
    batch = [
        *arxiv_papers,  # stored ones (their own id) and others
        original.model_copy(update={"doi": None}),  # by arXiv id
        Paper(title=original.title.upper(), published=original.published, authors=original.authors[:1]),  # fingerprint
        Paper(title=original.title, published="2001", doi="10.9/third"),  # title variants only
        Paper(title="Something else entirely", published="2020"),  # nothing
        arxiv_papers[2],  # twice in one batch
    ]
    expected = [[p.id for p in store.find_matches(paper)] for paper in batch]
    assert [[p.id for p in found] for found in store.find_matches_many(batch)] == expected
    assert store.find_matches_many(batch) == [store.find_matches(paper) for paper in batch]
    assert any(len(ids) > 1 for ids in expected) and [] in expected and store.find_matches_many([]) == []


def test_openalex_id_matches(store):
    first = Paper(title="A", openalex_id="W123", published="2020")
    store.put_many([first])
    other_source = Paper(title="A (preprint)", openalex_id="https://openalex.org/W123", doi="10.1234/abc")
    assert [p.id for p in store.find_matches(other_source)] == [first.id]


def test_writes_bump_the_generation_and_digest_follows_content(store, arxiv_papers):
    assert store.generation() == 0
    empty_digest = store.digest()
    store.put_many(arxiv_papers[:3])
    assert store.generation() == 1
    digest = store.digest()
    assert digest != empty_digest
    store.put_many(arxiv_papers[:3])  # same content again: new generation, same digest
    assert store.generation() == 2 and store.digest() == digest
    changed = arxiv_papers[0].model_copy(update={"venue": "Another venue"})
    store.put_many([changed])
    assert store.digest() != digest


def test_delete_many_counts_what_existed(store, arxiv_papers):
    store.put_many(arxiv_papers[:4])
    assert store.delete_many([arxiv_papers[0].id, arxiv_papers[0].id, "hash:nothing"]) == 1
    assert store.count() == 3 and store.get(arxiv_papers[0].id) is None


def test_write_puts_and_deletes_in_one_step(store, arxiv_papers):
    old = arxiv_papers[1]
    store.put_many([old])
    renamed = old.model_copy(update={"doi": "10.9999/new-doi"})
    assert store.write(put=[renamed], delete=[old.id]) == 1
    assert store.ids() == {renamed.id}


def test_side_rows_with_quotes_braces_and_backslashes_are_filed_as_written(store):
    """The side tables' rows go to PostgreSQL as arrays (``records._insert_keys``): characters an
    array literal quotes or escapes come back as they were written."""
    odd = ['Jean "JJ" O\'Neil', "Ana {María} de la Cruz", "K. \\ Backslash, Jr.", "NULL Null", "Łukasz Żółć"]
    paper = Paper(title='Quotes "and" {braces}, \\ in a title of NULL', published="2024",
                  authors=[Author(name=name) for name in odd])
    store.put_many([paper])
    families = {family for name in odd for family in filing_families(name)}
    assert {name for name, _ in store.author_names_filed_under(families)} == set(odd)
    assert {key for _, key in store.author_names_filed_under(families)} == {author_key(name) for name in odd}
    assert [p.id for p in store.find_matches(paper.model_copy(update={"doi": "10.1/other"}))] == [paper.id]
    assert store.get(paper.id) == paper


def test_author_and_venue_lookups(store, arxiv_papers):
    store.put_many(arxiv_papers)
    assert store.author_names_filed_under(["yurkin"]) == {("Maxim A. Yurkin", "maxim a yurkin")}
    assert store.author_names_filed_under(["nobody"]) == set()
    assert "j opt soc am a" in store.venue_keys()
    assert store.year_range() == (2005, 2009)
    assert store.count_matching(since=2008) == 7
    assert store.count_matching(since=2008, until=2008) == 6
    assert store.count_matching(author_keys=["maxim a yurkin"]) == 4
    assert store.count_matching(author_keys=["maxim a yurkin"], venue_keys=["j opt soc am a"]) == 2
    assert store.count_matching(since=2030) == 0


def test_meta_values(store):
    assert store.get_meta("last_sync") is None and store.get_meta("x", "d") == "d"
    store.set_meta("last_sync", "2026-01-01T00:00:00+00:00")
    store.set_meta("last_sync", "2026-01-02T00:00:00+00:00")
    assert store.get_meta("last_sync") == "2026-01-02T00:00:00+00:00"


def test_reopening_keeps_the_data(tmp_path, arxiv_papers):
    path = tmp_path / "records.sqlite3"
    with RecordStore(path) as first:
        first.put_many(arxiv_papers[:5])
    with RecordStore(path) as second:
        assert second.count() == 5 and second.get(arxiv_papers[0].id) == arxiv_papers[0]


def _on_connection(store, sql):
    """Run ``sql`` on the store's SQLite connection (the one pooled connection a single thread uses)."""
    raw = store._db.engine.raw_connection()
    try:
        return raw.driver_connection.execute(sql).fetchone()
    finally:
        raw.close()


def test_disk_full_rolls_back_the_whole_batch(sqlite_store, arxiv_papers):
    store = sqlite_store
    store.put_many(arxiv_papers[:5])
    before = {p.id: p for p in store.iter_papers()}
    generation = store.generation()
    pages = _on_connection(store, "PRAGMA page_count")[0]
    _on_connection(store, f"PRAGMA max_page_count = {pages + 2}")  # SQLite then fails with SQLITE_FULL
    bigger = [p.model_copy(update={"abstract": (p.abstract or "") * 20}) for p in arxiv_papers]
    with pytest.raises(StorageError) as failure:
        store.put_many(bigger)
    assert "disk is full" in failure.value.user_message and "nothing was changed" in failure.value.user_message
    assert "Free some disk space" in str(failure.value)
    assert {p.id: p for p in store.iter_papers()} == before
    assert store.generation() == generation


def test_read_only_store_says_so_and_keeps_data(sqlite_store, arxiv_papers):
    store = sqlite_store
    store.put_many(arxiv_papers[:2])
    _on_connection(store, "PRAGMA query_only = ON")
    with pytest.raises(StorageError) as failure:
        store.delete_many([arxiv_papers[0].id])
    assert "read-only" in failure.value.user_message and "PAPERBOT_DATA_DIR" in str(failure.value)
    _on_connection(store, "PRAGMA query_only = OFF")
    assert store.count() == 2


def test_a_damaged_file_is_a_storage_error(tmp_path):
    path = tmp_path / "records.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StorageError, match="damaged"):
        RecordStore(path)


def test_an_unwritable_location_is_a_storage_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError, match="record store"):
        RecordStore(blocker / "records.sqlite3")


def test_author_names_follow_writes_and_are_backfilled_for_older_stores(tmp_path):
    import sqlite3

    path = tmp_path / "records.sqlite3"
    paper = Paper(title="Sparse solvers", authors=[Author(name="Zhang Zhao"), Author(name="Di Wang")])
    with RecordStore(path) as store:
        store.put_many([paper])
        filed = store.author_names_filed_under(["zhang", "zhao", "wang", "di"])
        assert filed == {("Zhang Zhao", "zhang zhao"), ("Di Wang", "di wang")}
    as_legacy_store(path)  # a record store of before the database, then back to version 2: no author_names
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE author_names")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with RecordStore(path) as store:
        assert store.author_names_filed_under(["zhang"]) == {("Zhang Zhao", "zhang zhao")}
        store.write(delete=[paper.id])
        assert store.author_names_filed_under(["zhang", "wang"]) == set()
