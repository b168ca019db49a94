"""retrieval.alerts.follows: parsing, matching, storage, announce-once bookkeeping."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.alerts.follows import FollowStore, guess_kind, matches, note_new_papers, parse_follow
from retrieval.config import Settings
from retrieval.errors import InputError
from retrieval.records.paper import Author, Paper
from retrieval.results import Follow

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


def test_store_add_list_remove(tmp_path: Path) -> None:
    store = FollowStore(tmp_path / "follows.sqlite3")
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


def test_pending_alerts_announce_each_paper_once_and_survive_restart(tmp_path: Path) -> None:
    path = tmp_path / "follows.sqlite3"
    store = FollowStore(path)
    scholar, _ = store.add("C1", "scholar", "Zhao Zhang")
    store.add("C2", "topic", "optical interconnects")
    alerts = store.pending_alerts([GNN, OPTICS])
    assert {(a.follow.channel, tuple(p.id for p in a.papers)) for a in alerts} == {
        ("C1", (GNN.id,)), ("C2", (OPTICS.id,)),
    }
    store.mark_announced(scholar.id, [GNN.id])
    store.close()
    reopened = FollowStore(path)
    assert [a.follow.channel for a in reopened.pending_alerts([GNN, OPTICS])] == ["C2"]


def test_inbox_hands_new_ids_from_sync_to_the_bot(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert note_new_papers(settings, [GNN.id, OPTICS.id, GNN.id]) == 2
    assert note_new_papers(settings, [GNN.id]) == 0
    store = FollowStore.for_settings(settings)
    assert store.queued_new_papers() == sorted([GNN.id, OPTICS.id])
    store.done_with_new_papers([GNN.id])
    assert store.queued_new_papers() == [OPTICS.id]


def test_unwritable_store_is_a_storage_error(tmp_path: Path) -> None:
    from retrieval.errors import StorageError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError) as raised:
        FollowStore(blocker / "follows.sqlite3")
    assert "PAPERBOT_DATA_DIR" in (raised.value.hint or "")
