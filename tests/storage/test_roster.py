"""The scholar roster: CRUD, lookups, validation and atomic, lock-protected persistence, and the
import of a data dir's roster.json; every test on SQLite and on PostgreSQL (``database_url``)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from retrieval.config import Settings
from retrieval.errors import InputError, StorageError, UnknownScholarError
from retrieval.results import Scholar
from retrieval.storage.database import Database, close_databases, database_url
from retrieval.storage.roster import Roster, names_of


def _roster_json(settings: Settings) -> Path:
    return settings.data_dir / "roster.json"


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


def test_a_write_the_database_refuses_changes_nothing(settings: Settings) -> None:
    roster = Roster.load(settings)
    roster.add("Kept Scholar")
    roster.add("Other Scholar", orcid="0000-0002-1825-0097")
    before = Roster.load(settings).list()

    def break_it(scholar: Scholar) -> None:
        scholar.last_synced["arxiv"] = "2026-01-01T00:00:00+00:00"
        scholar.added_at = None  # type: ignore[assignment]  # NOT NULL in the table: the UPDATE fails

    with pytest.raises(StorageError, match=r"^Cannot change the roster"):
        roster.update("Kept Scholar", break_it)
    assert Roster.load(settings).list() == before


@pytest.mark.parametrize("damage", [b'{"version": 1, "scholars": [{"name": "Half', b'{"version": 1, "scholars": [{"name": ""}]}',
                                    b'{"version": 1, "scholars": [{"name": "Ren\xe9"}]}'],
                         ids=["cut-json", "no-name", "not-utf8"])
def test_a_damaged_roster_file_does_not_stop_the_upgrade_and_is_set_aside(
        settings: Settings, damage: bytes, caplog: pytest.LogCaptureFixture) -> None:
    from retrieval.records.paper import Paper
    from retrieval.storage.database import schema_status
    from retrieval.storage.records import RecordStore
    from retrieval.storage.schema import HEAD
    from tests.support.legacy_records import legacy_store

    kept = Paper(title="Records survive a damaged roster", published="2024", doi="10.1234/kept")
    legacy_store(settings.data_dir / "records.sqlite3", [kept])  # a data dir made before the database
    path = _roster_json(settings)
    path.write_bytes(damage)
    earlier = settings.data_dir / "roster.damaged.json"  # set aside by an earlier upgrade: never overwritten
    earlier.write_text("an earlier damaged roster", encoding="utf-8")

    with caplog.at_level("WARNING", logger="retrieval.storage"):
        assert Roster.load(settings).list() == []  # the first use upgrades, without the scholars
    warned = " ".join(record.getMessage() for record in caplog.records if record.levelname == "WARNING")
    aside = settings.data_dir / "roster.damaged-2.json"
    assert not path.exists() and aside.read_bytes() == damage and earlier.read_text(encoding="utf-8") == (
        "an earlier damaged roster")
    assert f"The roster {path} is damaged" in warned and "its scholars were not imported" in warned
    assert str(aside) in warned and "paperbot scholars add" in warned
    with RecordStore.open(settings) as store:  # everything else came along
        assert store.get(kept.id) == kept
    status = schema_status(settings)
    assert status.revision == HEAD and status.set_aside == (str(earlier), str(aside))
    assert f"A damaged roster.json was set aside when the database was created: {aside}" in status.describe()
    Roster.load(settings).add("Added After")  # the roster works
    close_databases()  # a new process: nothing is imported or set aside again
    assert [s.name for s in Roster.load(settings).list()] == ["Added After"]
    assert aside.read_bytes() == damage


def test_an_unreadable_roster_file_stops_the_upgrade_and_is_left_untouched(settings: Settings) -> None:
    path = _roster_json(settings)
    path.mkdir(parents=True)  # not a file: it cannot be read at all (not damaged: nothing to set aside)
    with pytest.raises(StorageError, match=r"^Cannot read the roster"):
        Roster.load(settings)
    assert path.is_dir()
    database = Database(database_url(settings), data_dir=settings.data_dir)
    assert database.revision() is None  # the upgrade was all or nothing
    database.dispose()


def test_an_existing_roster_file_is_imported_once_and_losslessly(settings: Settings) -> None:
    written = [
        Scholar(name="Martin Fenner", orcid="0000-0003-1419-2405", openalex_id="A5069389160",
                arxiv_name="Fenner, Martin", aliases=["M. Fenner", "Martin H. Fenner"], added_at="2025-05-01T10:00:00+00:00",
                last_synced={"crossref": "2026-01-15T00:00:00+00:00", "arxiv": "2026-01-14T23:59:59+00:00"}),
        Scholar(name="Adrian Del Maestro", added_at="2025-06-02T08:30:00+00:00"),
        Scholar(name="Ζωή Παπαδοπούλου", aliases=["Zoe Papadopoulou"], added_at="2025-07-03T00:00:00+00:00"),
    ]
    path = _roster_json(settings)
    path.parent.mkdir(parents=True)
    # exactly what paperbot wrote before the database: {"version": 1, "scholars": [...]}, indented
    text = json.dumps({"version": 1, "scholars": [s.model_dump(mode="json") for s in written]}, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")

    roster = Roster.load(settings)
    assert roster.list() == sorted(written, key=lambda s: s.name)
    assert [roster.get(s.name) for s in written] == written  # every field, ids and sync marks included
    assert roster.find("Zoe Papadopoulou") == written[2]
    assert path.read_text(encoding="utf-8") == text  # the file is left as it was

    roster.add("Added Later")
    close_databases()  # a new process: the import is not repeated
    assert [s.name for s in Roster.load(settings).list()] == ["Added Later", "Adrian Del Maestro", "Martin Fenner",
                                                             "Ζωή Παπαδοπούλου"]


def test_every_scholar_field_has_a_column() -> None:
    from retrieval.storage.schema import scholars

    assert set(Scholar.model_fields) == {column.name for column in scholars.columns} - {"id"}


def test_author_names_widen_through_the_roster(settings: Settings) -> None:
    assert names_of(settings, "Lenny Guo") == ["Lenny Guo"]
    Roster.load(settings).add("Luanzheng Guo", aliases=["Lenny Guo"])
    assert names_of(settings, "lenny guo") == ["Luanzheng Guo", "Lenny Guo"]


def test_a_search_in_a_data_dir_without_a_roster_creates_no_database(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")
    (tmp_path / "data").mkdir()
    assert names_of(settings, "Lenny Guo") == ["Lenny Guo"]
    assert list(settings.data_dir.iterdir()) == []
