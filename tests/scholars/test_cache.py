"""The people directory and the theme statistics kept on disk between processes.

"Another process" is this one with the in-process caches emptied (``new_process``); builds are
counted, not timed. The fast tests run on a real record store without vectors; the slow ones
on the real index of ``conftest.real_index`` (stored vectors, topic evidence).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import pytest

from retrieval.config import Settings
from retrieval.errors import StorageError
from retrieval.records.paper import Author, Paper
from retrieval.results import AmbiguousScholarResult, ScholarSummaryResult
from retrieval.scholars import cache
from retrieval.scholars.collaborators import find_collaborators
from retrieval.scholars.people import PeopleDirectory, claims_of, stored_vectors_of
from retrieval.scholars.summary import summarize_scholar
from retrieval.scholars.themes import TermStats
from retrieval.storage.records import RecordStore
from retrieval.storage.roster import Roster
from tests.scholars.conftest import load_papers, make_settings, namesake_papers

TODAY = date(2025, 1, 1)
NAMES = ("Adrian Del Maestro", "Zhao Zhang", "Z. Zhang", "Jason Priem", "Eric Xing", "Jia Song")


class StoreIndex:
    """The part of the index summaries read, over a real record store (no vectors)."""

    def __init__(self, store: RecordStore) -> None:
        self.store = store

    def iter_papers(self) -> Iterator[Paper]:
        return self.store.iter_papers()


class VectorsDown(StoreIndex):
    """An index whose vector store is unreachable."""

    def vectors(self, ids: list[str]) -> dict[str, Any]:
        raise StorageError("the vector store is down")


def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget what this process keeps in memory, as a new ``paperbot`` process would."""
    monkeypatch.setattr(cache, "_directories", OrderedDict())
    monkeypatch.setattr(cache, "_backgrounds", WeakKeyDictionary())
    monkeypatch.setattr(cache, "_built_at", WeakKeyDictionary())


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times people were grouped and term statistics counted."""
    counted = {"people": 0, "terms": 0}
    group, count = PeopleDirectory._group, TermStats.from_papers

    def grouped(self: PeopleDirectory, claims: Any) -> Any:
        counted["people"] += 1
        return group(self, claims)

    def terms(papers: Any) -> TermStats:
        counted["terms"] += 1
        return count(papers)

    monkeypatch.setattr(PeopleDirectory, "_group", grouped)
    monkeypatch.setattr(TermStats, "from_papers", terms)
    new_process(monkeypatch)
    return counted


def _store(path: Path, papers: list[Paper]) -> RecordStore:
    opened = RecordStore(path)
    opened.put_many(papers)
    return opened


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RecordStore]:
    """A small store: the arXiv and OpenAlex records and the "Jia Song" namesakes."""
    opened = _store(tmp_path / "index" / "records.sqlite3",
                    [*load_papers("arxiv_del_maestro.jsonl", "openalex_works.jsonl"), *namesake_papers()])
    yield opened
    opened.close()


@pytest.fixture
def full_store(tmp_path: Path, papers: list[Paper]) -> Iterator[RecordStore]:
    """Every record of the corpus, namesakes and initials included."""
    opened = _store(tmp_path / "index" / "records.sqlite3", [*papers, *namesake_papers()])
    yield opened
    opened.close()


@pytest.fixture
def data_settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


def summarize(index: Any, settings: Settings, name: str = "Adrian Del Maestro") -> dict[str, Any]:
    result = summarize_scholar(index, settings, name, today=TODAY)
    return result.model_dump(mode="json")


def files(settings: Settings) -> dict[str, Path]:
    folder = settings.cache_dir / cache.CACHE_FOLDER
    return {"people": folder / "people-evidence.json", "terms": folder / "term-stats.json"}


def test_a_second_summarize_reads_the_cache_instead_of_building(store, data_settings, builds, monkeypatch):
    first = summarize(StoreIndex(store), data_settings)
    assert builds == {"people": 1, "terms": 1}
    assert all(path.is_file() for path in files(data_settings).values())
    new_process(monkeypatch)
    second = summarize(StoreIndex(store), data_settings)
    assert builds == {"people": 1, "terms": 1}  # nothing grouped or counted again
    assert second == first and second["paper_count"] > 3


def test_a_summary_reads_the_store_contents_once_for_both_caches(store, data_settings, builds, monkeypatch):
    digests: list[str] = []
    real_digest = RecordStore.digest

    def counted(self: RecordStore) -> str:
        digests.append(real_digest(self))
        return digests[-1]

    monkeypatch.setattr(RecordStore, "digest", counted)
    summarize(StoreIndex(store), data_settings)
    assert len(digests) == 1  # the term statistics are filed under the directory's state
    new_process(monkeypatch)
    summarize(StoreIndex(store), data_settings)
    assert len(digests) == 2 and builds == {"people": 1, "terms": 1}


def test_every_name_gets_the_same_answer_from_the_cache(full_store, data_settings, builds, monkeypatch):
    fresh = {name: summarize(StoreIndex(full_store), data_settings, name) for name in NAMES}
    new_process(monkeypatch)
    cached = {name: summarize(StoreIndex(full_store), data_settings, name) for name in NAMES}
    assert builds == {"people": 1, "terms": 1}
    assert cached == fresh
    assert {fresh[name].get("ambiguous", False) for name in NAMES} == {True, False}  # both kinds of answer


def test_an_ingest_between_two_summaries_invalidates_the_cache(store, data_settings, builds, monkeypatch):
    before = summarize(StoreIndex(store), data_settings)
    store.put_many([Paper(title="Superfluid helium in nanopores", published="2024-06-01",
                          authors=[Author(name="Adrian Del Maestro"), Author(name="Paul Sokol")])])
    new_process(monkeypatch)
    after = summarize(StoreIndex(store), data_settings)
    assert builds == {"people": 2, "terms": 2}
    assert after["paper_count"] == before["paper_count"] + 1
    assert "Superfluid helium in nanopores" in {p["title"] for p in after["papers"]}
    new_process(monkeypatch)
    assert summarize(StoreIndex(store), data_settings) == after and builds == {"people": 2, "terms": 2}


def test_the_same_process_notices_another_process_writing(store, data_settings, builds):
    before = summarize(StoreIndex(store), data_settings)
    other = RecordStore(store.path)  # another writer of the same file
    try:
        other.put_many([Paper(title="Vortex lattices in rotating helium", published="2024-09-01",
                              authors=[Author(name="Adrian Del Maestro")])])
    finally:
        other.close()
    after = summarize(StoreIndex(store), data_settings)
    assert builds == {"people": 2, "terms": 2} and after["paper_count"] == before["paper_count"] + 1


CORRUPT = {
    "not json": "\x00\x01 half a file",
    "cut short": '{"kind": "people", "format": 1, "code": "',
    "foreign json": "[1, 2, 3]",
    "another kind": '{"kind": "something else", "format": 1}',
}


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
@pytest.mark.parametrize("which", ["people", "terms"])
def test_a_corrupt_cache_file_is_logged_and_rebuilt(store, data_settings, builds, monkeypatch, caplog, which,
                                                    content):
    reference = summarize(StoreIndex(store), data_settings)
    files(data_settings)[which].write_text(content, encoding="utf-8")
    new_process(monkeypatch)
    with caplog.at_level(logging.INFO, logger="retrieval.scholars.cache"):
        assert summarize(StoreIndex(store), data_settings) == reference
    assert builds[which] == 2 and sum(builds.values()) == 3  # only the damaged one is rebuilt
    assert any(r.levelno == logging.WARNING and str(files(data_settings)[which]) in r.getMessage()
               for r in caplog.records)
    new_process(monkeypatch)
    summarize(StoreIndex(store), data_settings)
    assert builds[which] == 2  # the rebuilt file is whole again


def _rewrite(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


DAMAGED = {
    "a person dropped": lambda data: data["groups"].pop(),
    "a slot placed twice": lambda data: data["groups"][0][1].append(data["groups"][1][1][0]),
    "a slot past the authors": lambda data: data["groups"][0][1].append([data["groups"][0][1][0][0], 999]),
    "groups of the wrong shape": lambda data: data.update(groups=[["family only"]]),
}


@pytest.mark.parametrize("change", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_people_file_that_does_not_place_every_author_once_is_rebuilt(store, data_settings, builds,
                                                                        monkeypatch, caplog, change):
    reference = summarize(StoreIndex(store), data_settings)
    _rewrite(files(data_settings)["people"], change)
    new_process(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="retrieval.scholars.cache"):
        assert summarize(StoreIndex(store), data_settings) == reference
    assert builds == {"people": 2, "terms": 1}
    assert any("Ignoring the cache file" in r.getMessage() for r in caplog.records)


def test_term_statistics_of_another_collection_are_rebuilt(store, data_settings, builds, monkeypatch):
    reference = summarize(StoreIndex(store), data_settings)
    _rewrite(files(data_settings)["terms"], lambda data: data.update(n=data["n"] + 1))
    new_process(monkeypatch)
    assert summarize(StoreIndex(store), data_settings) == reference and builds == {"people": 1, "terms": 2}


OTHER_CODE = {
    "another format": lambda data: data.update(format=data["format"] + 1),
    "other source": lambda data: data.update(code="0" * 20),
    "another state": lambda data: data["state"].update(digest="0" * 64),
    "another store": lambda data: data["state"].update(store="/elsewhere/records.sqlite3"),
}


@pytest.mark.parametrize("change", OTHER_CODE.values(), ids=OTHER_CODE.keys())
@pytest.mark.parametrize("which", ["people", "terms"])
def test_a_file_of_other_code_or_another_index_state_is_not_trusted(store, data_settings, builds, monkeypatch,
                                                                    which, change):
    reference = summarize(StoreIndex(store), data_settings)
    _rewrite(files(data_settings)[which], change)
    new_process(monkeypatch)
    assert summarize(StoreIndex(store), data_settings) == reference
    assert builds[which] == 2 and sum(builds.values()) == 3


def test_the_code_version_follows_the_source_of_the_builders(tmp_path, monkeypatch):
    before = cache.code_version(cache.PEOPLE_BUILDERS)
    assert before == cache.code_version(cache.PEOPLE_BUILDERS) and before != cache.code_version(cache.TERMS_BUILDERS)
    import retrieval.scholars.clustering as clustering

    edited = tmp_path / "clustering.py"
    edited.write_text(Path(clustering.__file__).read_text(encoding="utf-8") + "\n# a threshold changed\n")
    monkeypatch.setattr(clustering, "__file__", str(edited))
    cache.code_version.cache_clear()
    try:
        assert cache.code_version(cache.PEOPLE_BUILDERS) != before
    finally:
        monkeypatch.undo()
        cache.code_version.cache_clear()
    assert cache.code_version(cache.PEOPLE_BUILDERS) == before


def test_roster_claims_are_part_of_the_key(store, data_settings, builds, monkeypatch):
    summarize(StoreIndex(store), data_settings)
    Roster.load(data_settings).add("Adrian Del Maestro", aliases=["A. G. Del Maestro"])
    new_process(monkeypatch)
    result = summarize_scholar(StoreIndex(store), data_settings, "A. G. Del Maestro", today=TODAY,
                               roster=Roster.load(data_settings))
    assert isinstance(result, ScholarSummaryResult) and result.scholar.name == "Adrian Del Maestro"
    assert builds["people"] == 2  # the roster's claims group people anew: the unclaimed file is not used


def test_a_grouping_made_without_the_stored_vectors_is_not_kept(store, data_settings, builds, monkeypatch):
    reference = summarize(VectorsDown(store), data_settings)
    assert not files(data_settings)["people"].exists() and files(data_settings)["terms"].exists()
    new_process(monkeypatch)
    assert summarize(VectorsDown(store), data_settings) == reference and builds == {"people": 2, "terms": 1}


def test_an_unwritable_cache_dir_only_loses_the_cache(store, tmp_path, builds, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache dir should be")
    settings = make_settings(tmp_path / "data2")
    monkeypatch.setattr(type(settings), "cache_dir", property(lambda self: blocked))
    assert summarize(StoreIndex(store), settings)["paper_count"] > 3


def test_a_directory_placed_from_groups_is_the_directory_grouped(papers, settings):
    roster = Roster.load(settings)
    roster.add("Zhao Zhang", aliases=["Zhang Zhao"])
    roster.add("Adrian Del Maestro")
    for kwargs in ({}, {"claims": claims_of(roster.list())}, {"clustering": "strict"}):
        grouped = PeopleDirectory(papers, **kwargs)
        placed = PeopleDirectory(papers, clustering=grouped.clustering, groups=grouped.groups)
        assert _shape(placed) == _shape(grouped)


def _shape(directory: PeopleDirectory) -> tuple[Any, ...]:
    people = [(p.key, dict(p.names), dict(p.ids), p.claimed_by, [(m.paper_id, m.position, m.occurrence)
                                                                  for m in p.mentions]) for p in directory.people]
    families = {family: [p.key for p in held] for family, held in directory._by_family.items()}
    ids = {key: [p.key for p in held] for key, held in directory._by_id.items()}
    mentions = {key: person.key for key, person in directory._by_mention.items()}
    return people, families, ids, mentions, directory.groups


# --- a real index: stored vectors, topic evidence --------------------------------------------


@pytest.mark.slow
def test_results_are_identical_with_and_without_the_cache(real_index, data_settings, builds, monkeypatch):
    fresh_people = PeopleDirectory(real_index.iter_papers(), vectors=stored_vectors_of(real_index))

    def answers(**kwargs: Any) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in NAMES:
            result = summarize_scholar(real_index, data_settings, name, today=TODAY, **kwargs)
            assert isinstance(result, ScholarSummaryResult | AmbiguousScholarResult)
            found[name] = result.model_dump(mode="json")
        found["collaborators"] = find_collaborators(
            real_index, data_settings, "communication in model parallel training", today=TODAY, **kwargs
        ).model_dump(mode="json")
        return found

    without = answers(directory=fresh_people)
    grouped = builds["people"]
    written = answers()  # builds and writes the files
    new_process(monkeypatch)
    counted = dict(builds)
    read = answers()  # reads them
    assert builds == counted and builds["people"] == grouped + 1
    assert written == without and read == without
    new_process(monkeypatch)
    assert _shape(cache.directory_for(real_index, cache_dir=data_settings.cache_dir)) == _shape(fresh_people)
