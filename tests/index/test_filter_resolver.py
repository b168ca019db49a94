"""``FilterResolver`` over a real record store: author names, roster aliases and venues to indexed values.

No Chroma and no encoder: resolution only reads the record store. The roster reaches the index
as a function its opener passes in (the index never imports ``ingest``); the last test checks
that the assistant, which opens the index for every door, passes the roster's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval.assistant import Assistant
from retrieval.errors import StorageError
from retrieval.index.filters import FilterResolver
from retrieval.records.names import author_key
from retrieval.records.paper import Author, Paper
from retrieval.results import SearchFilters
from retrieval.storage.records import RecordStore
from retrieval.storage.roster import Roster

from .conftest import make_settings

WRITTEN = ["Luanzheng Guo", "Lenny Guo", "Li Guo", "Zhang Zhao"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RecordStore]:
    opened = RecordStore(tmp_path / "records.sqlite3")
    opened.write(put=[Paper(title=f"Studies by {name}", year=2024, venue="Journal of Physics A",
                            authors=[Author(name=name)]) for name in WRITTEN])
    yield opened
    opened.close()


def test_without_a_roster_a_name_stands_for_its_compatible_written_names(store):
    resolver = FilterResolver(store)
    assert resolver.author_keys_for("Lenny Guo") == {"lenny guo"}
    assert resolver.author_keys_for("Zhao Zhang") == {author_key("Zhang Zhao")}  # either order
    assert resolver.author_keys_for("  ") == set() and not resolver.knows_author("Wei Wang")


def test_roster_names_widen_an_author_filter_to_every_name_of_the_scholar(store):
    asked: list[str] = []

    def roster_names(name: str) -> list[str]:
        asked.append(name)
        return ["Luanzheng Guo", "Lenny Guo"] if name in ("Lenny Guo", "Luanzheng Guo") else [name]

    resolver = FilterResolver(store, roster_names)
    assert resolver.author_keys_for("Lenny Guo") == {"luanzheng guo", "lenny guo"}
    assert resolver.author_keys_for("Li Guo") == {"li guo"}
    resolved = resolver.resolve(SearchFilters(authors=["Lenny Guo"], venue="physics a", since=2020))
    assert resolved.author_keys == frozenset({"luanzheng guo", "lenny guo"}) and resolved.since == 2020
    assert resolved.venue_keys == frozenset({"journal of physics a"})
    assert "Lenny Guo" in asked


def test_an_unreadable_roster_is_logged_and_the_name_stands_for_itself(store, caplog):
    def broken(name: str) -> list[str]:
        raise StorageError("The roster roster.json is damaged (Expecting value); it was left untouched.")

    with caplog.at_level(logging.WARNING):
        assert FilterResolver(store, broken).author_keys_for("Lenny Guo") == {"lenny guo"}
    assert "Author filters ignore the roster" in caplog.text


def test_venues_are_re_read_after_a_write(store):
    resolver = FilterResolver(store)
    assert resolver.knows_venue("journal of physics a") and not resolver.knows_venue("ICDE")
    store.write(put=[Paper(title="Learned indexes", year=2023, venue="2023 IEEE 39th ICDE")])
    assert resolver.knows_venue("ICDE") and not resolver.knows_venue("Vision")


def test_the_assistants_index_follows_the_roster(tmp_path: Path):
    settings = make_settings(tmp_path / "data")
    store = RecordStore(settings.records_path)
    store.write(put=[Paper(title="Checkpointing", year=2024, authors=[Author(name="Luanzheng Guo")])])
    store.close()
    Roster.load(settings).add("Luanzheng Guo", aliases=["Lenny Guo"])
    index = Assistant(settings).index  # opened as every door opens it; no encoder or Chroma needed here
    try:
        assert index.author_keys_for("Lenny Guo") == {"luanzheng guo"}
    finally:
        index.close()
