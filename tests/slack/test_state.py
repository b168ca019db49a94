"""Slack state (answers, votes, threads) and the access allow-lists."""

from __future__ import annotations

from pathlib import Path

from bot.slack.access import Requester, is_allowed, requester_of
from bot.slack.store import SlackStore
from retrieval.config import Settings


def test_votes_are_stored_with_question_answer_and_cited_ids(tmp_path: Path) -> None:
    store = SlackStore(tmp_path / "state.sqlite3")
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


def test_thread_history_pairs_in_order(tmp_path: Path) -> None:
    store = SlackStore(tmp_path / "state.sqlite3")
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
    assert store.is_bot_thread("C1", "1.0") and not store.is_bot_thread("C1", "2.0")


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
