"""The scholar roster: CRUD, lookups, validation and atomic, lock-protected persistence."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from retrieval.config import Settings
from retrieval.errors import InputError, StorageError, UnknownScholarError
from retrieval.storage.roster import Roster, roster_path


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data")


def test_add_list_find_remove_round_trip(settings: Settings) -> None:
    roster = Roster.load(settings)
    assert roster.list() == []
    added = roster.add(
        "Martin Fenner", orcid="https://orcid.org/0000-0003-1419-2405", openalex_id="https://openalex.org/A5069389160",
        arxiv_name="Fenner, Martin", aliases=["M. Fenner", "M. Fenner", " "],
    )
    roster.add("Adrian Del Maestro")

    assert added.orcid == "0000-0003-1419-2405" and added.openalex_id == "A5069389160"
    assert added.aliases == ["M. Fenner"]
    reloaded = Roster.load(settings)  # persisted, not only in memory
    assert [s.name for s in reloaded.list()] == ["Adrian Del Maestro", "Martin Fenner"]
    for query in ("martin fenner", "M. Fenner", "Fenner, Martin", "0000-0003-1419-2405", "A5069389160"):
        assert (found := reloaded.find(query)) is not None and found.name == "Martin Fenner"
    assert reloaded.find("Martina Fenner") is None

    removed = reloaded.remove("M. Fenner")
    assert removed.name == "Martin Fenner"
    assert [s.name for s in Roster.load(settings).list()] == ["Adrian Del Maestro"]


@pytest.mark.parametrize(
    ("first", "second", "clash"),
    [
        ({"name": "Zhao Zhang"}, {"name": "zhao  zhang"}, "'zhao zhang'"),
        ({"name": "Zhao Zhang", "aliases": ["Z. Zhang"]}, {"name": "Z. Zhang"}, "'Z. Zhang'"),
        ({"name": "Zhao Zhang", "orcid": "0000-0002-1825-0097"}, {"name": "Zhao Y. Zhang", "orcid": "0000-0002-1825-0097"}, "ORCID"),
        ({"name": "Zhao Zhang", "openalex_id": "A1"}, {"name": "Other", "openalex_id": "a1"}, "OpenAlex id A1"),
    ],
)
def test_duplicates_are_refused(settings: Settings, first: dict, second: dict, clash: str) -> None:
    roster = Roster.load(settings)
    roster.add(**first)
    with pytest.raises(InputError) as caught:
        roster.add(**second)
    assert clash in caught.value.user_message and "already on the roster" in caught.value.user_message
    assert len(Roster.load(settings)) == 1


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"name": "  "}, "name is empty"),
        ({"name": "A", "orcid": "1234"}, "is not an ORCID"),
        ({"name": "A", "openalex_id": "W2741809807"}, "not an OpenAlex author id"),
    ],
)
def test_bad_input_is_refused_and_loses_nothing(settings: Settings, kwargs: dict, fragment: str) -> None:
    roster = Roster.load(settings)
    roster.add("Kept Scholar")
    with pytest.raises(InputError, match=fragment):
        roster.add(**kwargs)
    assert [s.name for s in Roster.load(settings).list()] == ["Kept Scholar"]


def test_removing_an_unknown_scholar_suggests_close_names(settings: Settings) -> None:
    roster = Roster.load(settings)
    roster.add("Adrian Del Maestro", aliases=["A. Del Maestro"])
    with pytest.raises(UnknownScholarError) as caught:
        roster.remove("Adrian Del Maestr")
    assert caught.value.suggestions == ["Adrian Del Maestro"]
    assert "not on the roster" in str(caught.value) and "Did you mean" in str(caught.value)
    with pytest.raises(UnknownScholarError) as nothing_close:
        roster.remove("Somebody Else")
    assert nothing_close.value.suggestions == [] and "scholars list" in str(nothing_close.value)
    assert len(Roster.load(settings)) == 1


def test_sync_marks_survive_a_concurrent_add(settings: Settings) -> None:
    sync_view = Roster.load(settings)
    sync_view.add("Martin Fenner")
    other_process = Roster.load(settings)
    other_process.add("Adrian Del Maestro")  # sync_view has not seen this one
    sync_view.mark_synced("Martin Fenner", "crossref", "2026-01-15T00:00:00+00:00")
    final = Roster.load(settings)
    assert [s.name for s in final.list()] == ["Adrian Del Maestro", "Martin Fenner"]
    assert final.get("Martin Fenner").last_synced == {"crossref": "2026-01-15T00:00:00+00:00"}


def test_parallel_adds_all_land(settings: Settings) -> None:
    names = [f"Scholar {n}" for n in range(12)]
    errors: list[BaseException] = []

    def add(name: str) -> None:
        try:
            Roster.load(settings).add(name)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(s.name for s in Roster.load(settings).list()) == sorted(names)


def test_writes_are_atomic(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    roster = Roster.load(settings)
    roster.add("Kept Scholar")
    before = roster_path(settings).read_bytes()

    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(StorageError, match="No space left on device"):
        roster.add("Lost Scholar")
    assert roster_path(settings).read_bytes() == before
    leftovers = [p.name for p in roster_path(settings).parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_damaged_roster_is_reported_and_left_untouched(settings: Settings) -> None:
    path = roster_path(settings)
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "scholars": [{"name": "Half', encoding="utf-8")
    with pytest.raises(StorageError) as caught:
        Roster.load(settings)
    assert str(path) in caught.value.user_message and "left untouched" in caught.value.user_message
    path.write_text(json.dumps({"version": 1, "scholars": [{"name": ""}]}), encoding="utf-8")
    with pytest.raises(StorageError, match="damaged"):
        Roster.load(settings)
    assert json.loads(path.read_text(encoding="utf-8"))["scholars"] == [{"name": ""}]


def test_file_format_is_plain_json(settings: Settings) -> None:
    Roster.load(settings).add("Martin Fenner", orcid="0000-0003-1419-2405")
    data = json.loads(roster_path(settings).read_text(encoding="utf-8"))
    assert data["version"] == 1
    (entry,) = data["scholars"]
    assert entry["name"] == "Martin Fenner" and entry["orcid"] == "0000-0003-1419-2405"
    assert entry["last_synced"] == {} and entry["added_at"]
