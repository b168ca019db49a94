"""Store migration 5 and the index catch-up: records stored by the previous code brought up to date.

The old index is built here by the previous code's rules, on a real store, Chroma and BM25:
``previous_code`` swaps in the old ``fold`` (ASCII only) wherever ``retrieval`` imported it and
stops the schema at migration 4, and the records are built without validation, so they keep
what the old parsers let through: "et al." and "others" as authors, ``<b>`` and "Song*" in
names, and ``hash:`` ids of non-Latin titles computed from an empty title key. Reopening the
index with today's code must clean the authors, re-key those ids in the store, Chroma and BM25
without embedding anything again, and be idempotent and crash-safe.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import retrieval.storage.legacy_records as store_module
from retrieval.config import Settings
from retrieval.errors import IndexUnavailableError
from retrieval.index.filters import ResolvedFilters
from retrieval.index.paper_index import PaperIndex
from retrieval.ingest.pipeline import ingest_papers
from retrieval.records.paper import Author, Paper, Provenance
from retrieval.results import SearchFilters
from retrieval.storage.records import RecordStore
from retrieval.text import LATIN_LETTERS, fold
from tests.support.legacy_records import as_legacy_store

from .conftest import HashEncoder, make_settings

ENCODER = "test/migration"


def _old_fold(value: str) -> str:
    """``text.fold`` before it transliterated other scripts."""
    decomposed = unicodedata.normalize("NFKD", value.translate(LATIN_LETTERS))
    ascii_only = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return re.sub(r"[^a-z0-9]+", " ", ascii_only.lower()).strip()


def _clear_name_caches() -> None:
    for module in [m for name, m in sys.modules.items() if name.startswith("retrieval.") and m is not None]:
        for value in list(vars(module).values()):
            if isinstance(value, type):  # a cache's class (text.ShortTextCache), not a cache
                continue
            if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", "") == module.__name__:
                value.cache_clear()


@contextmanager
def previous_code(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> Iterator[None]:
    """The old fold everywhere it is used; at the end, the store turned into a schema-4 one of
    before the database (``as_legacy_store``: the previous code had no migration 5)."""
    new_fold = fold
    with monkeypatch.context() as patch:
        for name, module in list(sys.modules.items()):
            if name.startswith("retrieval") and module is not None and getattr(module, "fold", None) is new_fold:
                patch.setattr(module, "fold", _old_fold)
        _clear_name_caches()
        try:
            yield
        finally:
            _clear_name_caches()
    _clear_name_caches()
    as_legacy_store(settings.records_path, 4)


def _old_record(title: str, names: list[str], year: str = "2021", **extra: object) -> Paper:
    """A record as the old parsers stored it: no cleaning, no ``authors_truncated``."""
    authors = [Author.model_construct(name=name, orcid=None, openalex_id=None, affiliations=[]) for name in names]
    fields = {field: info.get_default(call_default_factory=True) for field, info in Paper.model_fields.items()}
    fields.update(title=title, authors=authors, published=year, abstract=f"Abstract of {title}.",
                  provenance=[Provenance(source="bibtex", source_id=title[:8])])
    fields.update(extra)
    return Paper.model_construct(**fields)


CHINESE_A = "深度学习在医学图像中的应用"
CHINESE_B = "图神经网络的理论研究"
CYRILLIC = "Квантовая механика твёрдого тела"
TENSOR = "Sparse tensor factorization on many-core processors"


def _old_corpus() -> list[Paper]:
    return [
        # two Chinese papers of one year and first author were one hash id: the ingest merged them
        _old_record(CHINESE_A, ["Wang Wei", "et al."]),
        _old_record(CYRILLIC, ["Ivan Petrov", "others"]),
        # the decorated first author made another fingerprint than the clean spelling from another file
        _old_record(TENSOR, ["<b>Shaden Smith</b>", "Karypis*, George", "and others"], year="2017"),
        _old_record(TENSOR, ["Shaden Smith", "George Karypis"], year="2017"),
        _old_record("Denoising diffusion models", ["Song*, Jiaming", "Ermon, Stefano"], doi="10.1000/ddm"),
        _old_record("A record nothing changes", ["Ada Lovelace"], doi="10.1000/plain"),
        _old_record("A Latin title by a Chinese name", ["王伟"], doi="10.1000/wangwei"),
    ]


def _settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture
def old_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, dict[str, str]]:
    """An index the previous code built (store at schema 4, Chroma, BM25); returns its settings
    and ``title+first author -> old id``."""
    settings = _settings(tmp_path)
    with previous_code(monkeypatch, settings):
        index = PaperIndex.open(settings, HashEncoder(ENCODER))
        corpus = _old_corpus()
        index.upsert(corpus)
        index.lexical.current()
        old_ids = {f"{p.title}|{p.authors[0].name}": p.id for p in corpus}
        old_ids["lost"] = _old_record(CHINESE_B, ["Wang Wei"]).id  # what the merged-away paper had
        assert index.check_consistency().ok and index.count() == len(corpus)
        index.close()
    with sqlite3.connect(settings.records_path) as conn:  # the old code wrote no such key
        conn.execute("UPDATE papers SET record = json_remove(record, '$.authors_truncated')")
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
    return settings, old_ids


def _rows(settings: Settings, sql: str) -> list[tuple]:
    with sqlite3.connect(settings.records_path) as conn:
        return conn.execute(sql).fetchall()


def _new_id(title: str, names: list[str], year: str = "2021") -> str:
    return Paper(title=title, published=year, authors=[{"name": n} for n in names]).id


def _stored(index: PaperIndex, paper_id: str) -> Paper:
    paper = index.get(paper_id)
    assert paper is not None, f"{paper_id} is not in the index"
    return paper


def test_the_old_index_really_is_the_old_shape(old_index) -> None:
    settings, old_ids = old_index
    old_chinese = old_ids[f"{CHINESE_A}|Wang Wei"]
    assert old_ids["lost"] == old_chinese  # two Chinese titles, one id: the old ingest merged them
    assert old_chinese != _new_id(CHINESE_A, ["Wang Wei"]) != _new_id(CHINESE_B, ["Wang Wei"])
    names = {name for (name,) in _rows(settings, "SELECT name FROM author_names")}
    assert {"et al.", "others", "<b>Shaden Smith</b>", "Song*, Jiaming"} <= names
    assert "王伟" not in names  # the old fold gave it no author key


def test_opening_migrates_store_chroma_and_bm25_without_embedding(old_index) -> None:
    settings, old_ids = old_index
    encoder = HashEncoder(ENCODER)
    index = PaperIndex.open(settings, encoder)
    try:
        # the store is migrated at open; Chroma and BM25 wait for the first use
        assert index.store.derived_refresh_pending()
        ids = index.store.ids()
        chinese = _new_id(CHINESE_A, ["Wang Wei"])
        cyrillic = _new_id(CYRILLIC, ["Ivan Petrov"])
        tensor = _new_id(TENSOR, ["Shaden Smith"], "2017")
        assert {chinese, cyrillic, tensor, "doi:10.1000/ddm", "doi:10.1000/plain", "doi:10.1000/wangwei"} == ids
        assert old_ids[f"{CHINESE_A}|Wang Wei"] not in ids and old_ids[f"{TENSOR}|<b>Shaden Smith</b>"] not in ids

        merged = _stored(index, tensor)
        assert merged.author_names == ["Shaden Smith", "George Karypis"]  # the fuller spelling, once
        assert merged.authors_truncated is True  # the other list said "and others" and is as long
        assert {p.source_id for p in merged.provenance} == {TENSOR[:8]}
        assert _stored(index, chinese).author_names == ["Wang Wei"] and _stored(index, chinese).authors_truncated
        assert _stored(index, cyrillic).authors_truncated
        song = _stored(index, "doi:10.1000/ddm")
        assert song.author_names == ["Song, Jiaming", "Ermon, Stefano"] and not song.authors_truncated

        names = {name for (name,) in _rows(settings, "SELECT name FROM author_names")}
        assert not {"et al.", "others", "and others", "<b>Shaden Smith</b>", "Song*, Jiaming"} & names
        keys = {key for (key,) in _rows(settings, "SELECT author_key FROM author_names")}
        assert {"shaden smith", "wang wei", "jiaming song", "george karypis"} <= keys
        assert not {"et al", "others", "b shaden smith b"} & keys
        assert _rows(settings, "SELECT id FROM papers WHERE id = 'doi:10.1000/plain'") == [("doi:10.1000/plain",)]

        # first use: Chroma and BM25 catch up
        report = index.check_consistency()
        assert report.ok, report
        assert encoder.texts == []  # every vector was moved, none embedded again
        assert set(index.dense.embedding_hashes()) == ids
        assert not index.store.derived_refresh_pending() and index.store.vector_moves() == []

        probe = encoder.encode(["probe"])[0]
        encoder.texts.clear()

        def dense_ids(*author_keys: str) -> set[str]:
            snapshot = index.lexical.current()
            allowed = snapshot.allowed_ids(snapshot.mask(ResolvedFilters(author_keys=frozenset(author_keys))))
            return {item for item, _, _ in index.dense.query(probe, 20, allowed)}

        assert dense_ids("et al", "others", "b shaden smith b", "jiaming song") == {"doi:10.1000/ddm"}
        assert dense_ids("shaden smith") == {tensor}
        assert dense_ids("wang wei") == {chinese, "doi:10.1000/wangwei"}
        snapshot = index.lexical.current()
        assert set(snapshot.ids) == ids
        assert not {"et al", "others", "b shaden smith b"} & {k for keys in snapshot.authors for k in keys}
        assert ["wang wei"] in snapshot.authors
        hits = index.search("sparse tensor factorization", k=3, filters=None)
        assert hits and hits[0].paper.id == tensor
        assert [h.paper.id for h in index.lexical_search("Wang Wei", k=5)] != []
    finally:
        index.close()


def test_a_second_open_changes_nothing(old_index) -> None:
    settings, _ = old_index
    index = PaperIndex.open(settings, HashEncoder(ENCODER))
    index.check_consistency()
    before = (_rows(settings, "SELECT id, content_hash, updated_at, record FROM papers ORDER BY id"),
              _rows(settings, "SELECT * FROM author_names ORDER BY 1, 2, 3"), index.store.generation())
    index.close()
    encoder = HashEncoder(ENCODER)
    index = PaperIndex.open(settings, encoder)
    try:
        assert not index.store.derived_refresh_pending()
        assert index.check_consistency().ok and encoder.texts == []
        after = (_rows(settings, "SELECT id, content_hash, updated_at, record FROM papers ORDER BY id"),
                 _rows(settings, "SELECT * FROM author_names ORDER BY 1, 2, 3"), index.store.generation())
        assert after == before
    finally:
        index.close()


def test_records_nothing_changes_are_left_exactly_as_they_were(old_index) -> None:
    settings, _ = old_index
    query = "SELECT updated_at, record, content_hash FROM papers WHERE id = 'doi:10.1000/plain'"
    before = _rows(settings, query)
    RecordStore(settings.records_path).close()
    assert _rows(settings, query) == before


def test_the_paper_merged_away_comes_back_when_its_source_is_ingested_again(old_index) -> None:
    settings, _ = old_index
    index = PaperIndex.open(settings, HashEncoder(ENCODER))
    try:
        lost = Paper(title=CHINESE_B, published="2021", authors=[{"name": "Wang Wei"}],
                     provenance=[Provenance(source="bibtex", source_id="b")])
        report = ingest_papers(index, [lost])
        assert report.added == [lost.id] and index.count() == 7
        assert index.check_consistency().ok
    finally:
        index.close()


def test_an_interrupted_store_migration_leaves_the_old_store(old_index, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, _ = old_index
    before = _rows(settings, "SELECT id, record FROM papers ORDER BY id")

    def crash(*args: object) -> Paper:
        raise RuntimeError("killed in the middle of the migration")

    monkeypatch.setattr(store_module, "merge_papers", crash)
    with pytest.raises(RuntimeError):
        RecordStore(settings.records_path)
    assert _rows(settings, "SELECT id, record FROM papers ORDER BY id") == before
    assert _rows(settings, "PRAGMA user_version") == [(4,)]
    monkeypatch.undo()
    index = PaperIndex.open(settings, HashEncoder(ENCODER))
    try:
        assert index.check_consistency().ok and index.count() == 6
    finally:
        index.close()


@pytest.mark.parametrize("step", ["dense.upsert", "dense.delete", "store.vector_moves_done", "lexical.rebuild"])
def test_an_interrupted_catch_up_is_finished_by_the_next_use(old_index, monkeypatch: pytest.MonkeyPatch,
                                                             step: str) -> None:
    settings, _ = old_index
    encoder = HashEncoder(ENCODER)
    index = PaperIndex.open(settings, encoder)
    try:
        owner_name, method = step.split(".")
        owner = getattr(index, owner_name)
        real = getattr(owner, method)
        calls = {"n": 0}

        def fail_once(*args: object, **kwargs: object) -> object:
            calls["n"] += 1
            if calls["n"] == 1:
                raise IndexUnavailableError(f"killed in {step}")
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, method, fail_once)
        with pytest.raises(IndexUnavailableError):
            index.search("tensor")
        assert index.store.derived_refresh_pending()
        report = index.check_consistency()
        assert report.ok, report
        assert encoder.texts == []  # the second run moved what was left, embedding nothing
        assert not index.store.derived_refresh_pending() and index.store.vector_moves() == []
        assert set(index.lexical.current().ids) == index.store.ids()
    finally:
        index.close()


def test_a_record_whose_text_a_merge_changed_is_embedded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(tmp_path)
    with previous_code(monkeypatch, settings):
        index = PaperIndex.open(settings, HashEncoder(ENCODER))
        short = _old_record(TENSOR, ["<b>Shaden Smith</b>", "George Karypis"], year="2017")
        longer = _old_record(TENSOR, ["Shaden Smith"], year="2017", abstract="A much longer abstract " * 5)
        stored = [short.model_copy(update={"abstract": None}), longer.model_copy(update={"title": TENSOR.upper()})]
        index.upsert(stored)
        assert index.count() == 2
        index.close()
    encoder = HashEncoder(ENCODER)
    index = PaperIndex.open(settings, encoder)
    try:
        assert index.count() == 1
        assert index.check_consistency().ok
        (merged,) = index.iter_papers()
        # the title of one, the abstract of the other: a text no stored vector was made of
        assert merged.embedding_text not in {paper.embedding_text for paper in stored}
        assert encoder.texts == [merged.embedding_text]
    finally:
        index.close()


def test_a_changed_author_key_alone_still_reaches_chroma_and_bm25(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing in the record changes, so BM25's digest does not either: the catch-up rebuilds it."""
    settings = _settings(tmp_path)
    record = _old_record("A Latin title by a Chinese name", ["王伟"], doi="10.1000/wangwei")
    with previous_code(monkeypatch, settings):
        index = PaperIndex.open(settings, HashEncoder(ENCODER))
        index.upsert([record])
        assert index.lexical.current().authors == [[]]
        index.close()
    encoder = HashEncoder(ENCODER)
    index = PaperIndex.open(settings, encoder)
    try:
        assert index.search("latin title", k=1, filters=None)[0].paper.id == record.id
        assert index.lexical.current().authors == [["wang wei"]]
        hits = index.search("latin title", k=1, filters=SearchFilters(authors=["Wang Wei"]))
        assert [hit.paper.id for hit in hits] == [record.id] and hits[0].dense_score is not None
        assert encoder.texts == ["latin title", "latin title"]  # the queries; the record was not embedded again
    finally:
        index.close()
