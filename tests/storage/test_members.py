"""The replicas' heartbeats (``retrieval.storage.members``) on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrieval.config import Settings
from retrieval.storage.database import open_database
from retrieval.storage.members import ClusterMembers, Member, replica_id

T0 = 1_800_000_000.0


@pytest.fixture
def members(tmp_path: Path, database_url: str | None) -> ClusterMembers:
    return ClusterMembers(open_database(Settings(_env_file=None, data_dir=tmp_path / "data", database_url=database_url)))


def _member(name: str) -> Member:
    return Member(id=name, role="slack", host="h", pid=1, started_at="2027-01-01T00:00:00.000+00:00", last_seen=T0)


def test_members_beat_and_leave(members: ClusterMembers) -> None:
    members.join(_member("a"))
    members.beat(_member("b"), now=T0 + 10)  # a beat without a join writes the row
    assert [m.id for m in members.live(now=T0 + 10, dead_after=15)] == ["a", "b"]
    assert [m.id for m in members.live(now=T0 + 20, dead_after=15)] == ["b"]
    members.leave("b")
    assert members.live(now=T0 + 10, dead_after=15)[0].id == "a"


def test_a_restarted_replica_rejoins_under_its_id(members: ClusterMembers) -> None:
    members.join(_member("a"))
    members.join(_member("a").model_copy(update={"pid": 2, "last_seen": T0 + 30}))
    [again] = members.live(now=T0 + 30, dead_after=15)
    assert (again.id, again.pid) == ("a", 2)


def test_the_replica_id_is_the_setting_or_host_and_pid(tmp_path: Path) -> None:
    assert replica_id(Settings(_env_file=None, data_dir=tmp_path, replica_id="bot-1")) == "bot-1"
    assert replica_id(Settings(_env_file=None, data_dir=tmp_path)).endswith(f"-{os.getpid()}")
