"""retrieval.alerts.follows: parsing, matching, storage, announce-once bookkeeping; the storage
tests on SQLite and on PostgreSQL (``database_url``), with the import of an old follows.sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from retrieval.alerts.follows import (
    MAX_FOLLOWS_PER_CHANNEL,
    FollowStore,
    guess_kind,
    matches,
    note_new_papers,
    parse_follow,
)
from retrieval.config import Settings
from retrieval.errors import InputError, StorageError
from retrieval.records.paper import Author, Paper
from retrieval.results import Follow
from retrieval.storage.database import close_databases

GNN = Paper(title="A graph neural network for molecules", abstract="We learn on graphs.", published="2024",
            authors=[Author(name="Zhao Zhang", orcid="0000-0002-1825-0097"), Author(name="Ann Lee")], arxiv_id="2401.00001")
OPTICS = Paper(title="Optical interconnects at scale", published="2023", authors=[Author(name="Tong Zhang")],
               arxiv_id="2301.00002")


def follow(kind: str, query: str) -> Follow:
    return Follow(id=1, channel="C1", kind=kind, query=query, created_at="2024-01-01")


def test_parse_follow() -> None:
    assert parse_follow("scholar Zhao Zhang") == ("scholar", "Zhao Zhang")
    assert parse_follow("topic: graph neural networks") == ("topic", "graph neural networks")
    assert parse_follow('"Zhao Zhang"') == (None, "Zhao Zhang")
    with pytest.raises(InputError):
        parse_follow("topic: the of and")
    with pytest.raises(InputError):
        parse_follow("  ")


def test_a_follow_is_plain_text() -> None:
    """Bidi overrides, zero-width characters and terminal escapes are not stored (issue #30 item 6a)."""
    hidden = "\u202e\u200b\x1b[31m"
    assert parse_follow(f"topic {hidden}graph{hidden} networks\u202c") == ("topic", "graph networks")
    assert parse_follow("scholar \u2067Zhao\u2069 Zhang\ufeff") == ("scholar", "Zhao Zhang")
    with pytest.raises(InputError):
        parse_follow(hidden)


def test_topic_matching_is_stemmed_and_needs_every_word() -> None:
    assert matches(follow("topic", "graph neural networks"), GNN)
    assert not matches(follow("topic", "graph neural networks"), OPTICS)
    assert matches(follow("topic", "optical interconnect"), OPTICS)


def test_scholar_matching_by_name_and_ids() -> None:
    assert matches(follow("scholar", "Zhao Zhang"), GNN)
    assert matches(follow("scholar", "Z. Zhang"), GNN)
    assert not matches(follow("scholar", "Tong Zhang"), GNN)
    assert matches(follow("scholar", "0000-0002-1825-0097"), GNN)
    assert not matches(follow("scholar", "0000-0002-1825-0097"), OPTICS)


def test_guess_kind() -> None:
    assert guess_kind("0000-0002-1825-0097", lambda name: False) == "scholar"
    assert guess_kind("A5023888391", lambda name: False) == "scholar"
    assert guess_kind("Zhao Zhang", lambda name: name == "Zhao Zhang") == "scholar"
    assert guess_kind("Graph Neural Networks", lambda name: False) == "topic"


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data", database_url=database_url)


def test_store_add_list_remove(settings: Settings) -> None:
    store = FollowStore.for_settings(settings)
    first, created = store.add("C1", "scholar", "Zhao  Zhang", created_by="U1")
    assert created and first.query == "Zhao Zhang"
    again, created = store.add("C1", "scholar", "zhao zhang")
    assert not created and again.id == first.id
    topic, _ = store.add("C1", "topic", "optics")
    store.add("C2", "topic", "optics")
    assert [f.id for f in store.list("C1")] == [first.id, topic.id]
    assert store.remove("C1", "optics") == topic
    assert store.remove("C1", str(first.id)) == first
    assert store.remove("C1", "nothing") is None
    assert len(store.list()) == 1


def test_a_channel_may_follow_at_most_its_limit(settings: Settings) -> None:
    store = FollowStore.for_settings(settings)
    for n in range(MAX_FOLLOWS_PER_CHANNEL):
        store.add("C1", "topic", f"topic number {n}")
    with pytest.raises(InputError, match=f"already follows {MAX_FOLLOWS_PER_CHANNEL}"):
        store.add("C1", "topic", "one too many")
    assert len(store.list("C1")) == MAX_FOLLOWS_PER_CHANNEL
    assert store.add("C2", "topic", "one too many")[1]


def test_pending_alerts_announce_each_paper_once_and_survive_restart(settings: Settings) -> None:
    store = FollowStore.for_settings(settings)
    scholar, _ = store.add("C1", "scholar", "Zhao Zhang")
    store.add("C2", "topic", "optical interconnects")
    alerts = store.pending_alerts([GNN, OPTICS])
    assert {(a.follow.channel, tuple(p.id for p in a.papers)) for a in alerts} == {
        ("C1", (GNN.id,)), ("C2", (OPTICS.id,)),
    }
    store.mark_announced(scholar.id, [GNN.id])
    store.mark_announced(scholar.id, [GNN.id])  # announced twice: recorded once
    store.close()
    close_databases()  # a restart
    reopened = FollowStore.for_settings(settings)
    assert [a.follow.channel for a in reopened.pending_alerts([GNN, OPTICS])] == ["C2"]
    assert reopened.remove("C1", "Zhao Zhang") is not None  # its announcements go with it
    reopened.mark_announced(scholar.id, [OPTICS.id])  # unfollowed meanwhile: nothing to record
    again, _ = reopened.add("C1", "scholar", "Zhao Zhang")
    assert again.id != scholar.id and [a.follow.channel for a in reopened.pending_alerts([GNN])] == ["C1"]


def test_inbox_hands_new_ids_from_sync_to_the_bot(settings: Settings) -> None:
    assert note_new_papers(settings, [GNN.id, OPTICS.id, GNN.id]) == 2
    assert note_new_papers(settings, [GNN.id]) == 0
    store = FollowStore.for_settings(settings)
    assert store.queued_new_papers() == sorted([GNN.id, OPTICS.id])
    store.done_with_new_papers([GNN.id])
    assert store.queued_new_papers() == [OPTICS.id]


def test_unwritable_store_is_a_storage_error(tmp_path: Path, database_url: str | None) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    settings = Settings(_env_file=None, data_dir=blocker / "data", database_url=database_url)
    if database_url is None:
        with pytest.raises(StorageError) as raised:
            FollowStore.for_settings(settings)
        assert "PAPERBOT_DATA_DIR" in (raised.value.hint or "")
    else:  # the data dir is not where a server's database lives
        assert FollowStore.for_settings(settings).list() == []


_OLD_SCHEMA = """
CREATE TABLE follows (id INTEGER PRIMARY KEY AUTOINCREMENT, channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('scholar', 'topic')), query TEXT NOT NULL, query_key TEXT NOT NULL,
    created_by TEXT, created_at TEXT NOT NULL, UNIQUE (channel, kind, query_key));
CREATE TABLE inbox (paper_id TEXT PRIMARY KEY, noted_at TEXT NOT NULL);
CREATE TABLE announced (follow_id INTEGER NOT NULL REFERENCES follows(id) ON DELETE CASCADE,
    paper_id TEXT NOT NULL, announced_at TEXT NOT NULL, PRIMARY KEY (follow_id, paper_id));
"""


def test_an_existing_follows_file_is_imported_once_with_its_ids(settings: Settings) -> None:
    old = settings.data_dir / "follows.sqlite3"  # as paperbot kept its follows before the database
    old.parent.mkdir(parents=True)
    db = sqlite3.connect(old)
    db.executescript(_OLD_SCHEMA)
    db.executemany("INSERT INTO follows VALUES (?, ?, ?, ?, ?, ?, ?)", [
        (3, "C1", "scholar", "Zhao Zhang", "zhao zhang", "U1", "2025-01-01T00:00:00+00:00"),
        (7, "C2", "topic", "Optical interconnects", "optical interconnects", None, "2025-02-02T00:00:00+00:00"),
    ])
    db.executemany("INSERT INTO inbox VALUES (?, ?)", [(OPTICS.id, "2025-03-03T00:00:00+00:00")])
    db.executemany("INSERT INTO announced VALUES (?, ?, ?)", [(3, GNN.id, "2025-02-03T00:00:00+00:00")])
    db.commit()
    db.close()
    before = old.read_bytes()

    store = FollowStore.for_settings(settings)
    assert [(f.id, f.channel, f.kind, f.query, f.created_by, f.created_at) for f in store.list()] == [
        (3, "C1", "scholar", "Zhao Zhang", "U1", "2025-01-01T00:00:00+00:00"),
        (7, "C2", "topic", "Optical interconnects", None, "2025-02-02T00:00:00+00:00"),
    ]
    assert store.queued_new_papers() == [OPTICS.id]
    assert [a.follow.id for a in store.pending_alerts([GNN, OPTICS])] == [7]  # 3 announced GNN already
    assert store.add("C1", "scholar", "zhao zhang")[1] is False  # the key came along
    newest, created = store.add("C3", "topic", "sparse solvers")
    assert created and newest.id == 8  # ids continue after the imported ones
    assert old.read_bytes() == before
    close_databases()
    assert len(FollowStore.for_settings(settings).list()) == 3  # imported once
