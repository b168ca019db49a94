"""Slack state (answers, votes, threads) on SQLite and on PostgreSQL (``database_url``), the
import of an old slack/state.sqlite3, and the access allow-lists."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bot.slack.access import Requester, is_allowed, requester_of
from bot.slack.store import SlackStore
from retrieval.config import Settings
from retrieval.storage.database import close_databases


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data", database_url=database_url)


def test_votes_are_stored_with_question_answer_and_cited_ids(settings: Settings) -> None:
    store = SlackStore.for_settings(settings)
    answer_id = store.save_answer(channel="C1", thread_ts="1.0", user="U1", team="T1", kind="ask",
                                  question="q?", answer="a [1]", cited_ids=["doi:10.1/x"])
    answer = store.answer(answer_id)
    assert answer is not None and answer.cited_ids == ["doi:10.1/x"]
    assert store.record_vote(answer, "U2", "up")
    assert not store.record_vote(answer, "U2", "up")
    assert store.record_vote(answer, "U2", "down")
    [record] = store.feedback()
    assert (record.vote, record.question, record.answer, record.cited_ids) == ("down", "q?", "a [1]", ["doi:10.1/x"])
    assert store.answer("ffffffffffffffff") is None


def test_thread_history_pairs_in_order(settings: Settings) -> None:
    store = SlackStore.for_settings(settings)
    for i in range(3):
        store.save_answer(channel="C1", thread_ts="1.0", user="U1", team=None, kind="ask",
                          question=f"q{i}", answer=f"a{i}", cited_ids=[])
    store.save_answer(channel="C1", thread_ts="1.0", user="U1", team=None, kind="summary",
                      question="s", answer="x", cited_ids=[])
    store.save_answer(channel="C1", thread_ts="2.0", user="U1", team=None, kind="ask",
                      question="other", answer="y", cited_ids=[])
    assert store.thread_history("C1", "1.0") == [("q0", "a0"), ("q1", "a1"), ("q2", "a2")]
    assert store.thread_history("C1", "1.0", limit=2) == [("q1", "a1"), ("q2", "a2")]
    store.remember_thread("C1", "1.0")
    store.remember_thread("C1", "1.0")
    assert store.is_bot_thread("C1", "1.0") and not store.is_bot_thread("C1", "2.0")


_OLD_SCHEMA = """
CREATE TABLE answers (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, team TEXT, channel TEXT NOT NULL, thread_ts TEXT,
    user TEXT, kind TEXT NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL, cited_ids TEXT NOT NULL);
CREATE TABLE feedback (answer_id TEXT NOT NULL, user TEXT NOT NULL, vote TEXT NOT NULL CHECK (vote IN ('up', 'down')),
    created_at TEXT NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL, cited_ids TEXT NOT NULL,
    PRIMARY KEY (answer_id, user));
CREATE TABLE threads (channel TEXT NOT NULL, thread_ts TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (channel, thread_ts));
CREATE TABLE deliveries (key TEXT PRIMARY KEY, expires_at REAL NOT NULL);
"""


def test_an_existing_slack_state_file_is_imported_once_and_losslessly(settings: Settings) -> None:
    old = settings.data_dir / "slack" / "state.sqlite3"  # as the Slack app kept its state before the database
    old.parent.mkdir(parents=True)
    db = sqlite3.connect(old)
    db.executescript(_OLD_SCHEMA)
    answers = [("b" * 16, "2025-01-01T00:00:00.000+00:00", "T1", "C1", "1.0", "U1", "ask", "first?", "one [1]", ["doi:10.1/a"]),
               ("a" * 16, "2025-01-01T00:00:00.000+00:00", None, "C1", "1.0", None, "ask", "second?", "two", []),
               ("c" * 16, "2025-01-02T00:00:00.000+00:00", "T1", "C2", None, "U2", "summary", "Ada?", "Ada …", ["x", "y"])]
    db.executemany("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [(*row[:9], json.dumps(row[9])) for row in answers])
    db.execute("INSERT INTO feedback VALUES (?, ?, ?, ?, ?, ?, ?)",
               ("b" * 16, "U3", "down", "2025-01-03T00:00:00.000+00:00", "first?", "one [1]", '["doi:10.1/a"]'))
    db.execute("INSERT INTO threads VALUES ('C1', '1.0', '2025-01-01T00:00:00.000+00:00')")
    db.execute("INSERT INTO deliveries VALUES ('event:Ev1', 4000000000.0)")
    db.commit()
    db.close()
    before = old.read_bytes()

    store = SlackStore.for_settings(settings)
    for row in answers:
        stored = store.answer(row[0])
        assert stored is not None and stored.model_dump() == dict(zip(
            ("id", "created_at", "team", "channel", "thread_ts", "user", "kind", "question", "answer", "cited_ids"),
            row, strict=True))
    assert store.thread_history("C1", "1.0") == [("first?", "one [1]"), ("second?", "two")]  # saved order, same time
    [vote] = store.feedback()
    assert (vote.answer_id, vote.user, vote.vote, vote.cited_ids) == ("b" * 16, "U3", "down", ["doi:10.1/a"])
    assert store.is_bot_thread("C1", "1.0")
    assert not store.first_delivery("event:Ev1", now=3_999_999_000.0, ttl=60)  # still claimed
    assert old.read_bytes() == before
    close_databases()
    assert len(SlackStore.for_settings(settings).feedback()) == 1  # imported once


def test_requester_of_every_payload_kind() -> None:
    event = {"team_id": "T1", "event": {"type": "app_mention", "user": "U1", "channel": "C1"}}
    command = {"team_id": "T1", "channel_id": "C1", "user_id": "U1", "command": "/paperbot"}
    action = {"type": "block_actions", "team": {"id": "T1"}, "user": {"id": "U1"}, "container": {"channel_id": "C1"}}
    expected = Requester(team="T1", channel="C1", user="U1")
    assert requester_of(event) == requester_of(command) == requester_of(action) == expected


def test_allow_lists() -> None:
    open_settings = Settings(data_dir=Path("/tmp/unused"))
    assert is_allowed(open_settings, Requester("T9", "C9", "U9"))
    strict = Settings(data_dir=Path("/tmp/unused"), slack_allowed_teams="T1", slack_allowed_channels="C1,C2",
                      slack_allowed_users="U1")
    assert is_allowed(strict, Requester("T1", "C2", "U1"))
    assert not is_allowed(strict, Requester("T2", "C1", "U1"))
    assert not is_allowed(strict, Requester("T1", "C3", "U1"))
    assert not is_allowed(strict, Requester("T1", "C1", "U2"))
    assert is_allowed(strict, Requester("T1", "D123", "U1"))  # DMs: only the user list applies
