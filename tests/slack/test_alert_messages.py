"""How a follow alert is cut into Slack messages (``bot.slack.alerts.alert_messages``): each within
one message's limits, every paper once and in order, a record too long for a message shortened
rather than split (a message is the unit that is recorded as posted)."""

from __future__ import annotations

import json

from bot.slack.alerts import LONG_FIELD, alert_messages
from bot.slack.formatting import MAX_BLOCKS, MESSAGE_TEXT_BUDGET, block_text_length
from retrieval.records.paper import Author, Paper
from retrieval.results import Follow, FollowAlert

FOLLOW = Follow(id=7, channel="CGRAPHENE", kind="topic", query="graphene", created_at="2026-12-05T00:00:00+00:00")


def paper(n: int, *, title: str | None = None, venue: str | None = None) -> Paper:
    return Paper(title=title or f"Graphene under strain, part {n}: defects, pores and the transport of ions",
                 authors=[Author(name=f"Author {n}"), Author(name="Grace Hopper")], published="2026", venue=venue)


def fits_one_message(blocks: list[dict]) -> bool:
    return len(blocks) <= MAX_BLOCKS and sum(block_text_length(block) for block in blocks) <= MESSAGE_TEXT_BUDGET


def test_a_short_alert_is_one_message_without_markers() -> None:
    papers = [paper(n) for n in range(3)]
    [(part, blocks)] = alert_messages(FollowAlert(follow=FOLLOW, papers=papers))
    assert part.papers == papers and fits_one_message(blocks)
    assert "continued" not in json.dumps(blocks).lower()


def test_a_long_alert_is_cut_between_papers_each_message_within_the_limits() -> None:
    papers = [paper(n) for n in range(400)]
    messages = alert_messages(FollowAlert(follow=FOLLOW, papers=papers))
    assert len(messages) > 2
    assert [p for part, _ in messages for p in part.papers] == papers  # every paper once, in order
    for number, (part, blocks) in enumerate(messages, start=1):
        assert fits_one_message(blocks)
        text = json.dumps(blocks)
        assert all(p.title in text for p in part.papers)
        if number > 1:
            assert f"(continued, {number}/{len(messages)})" in text
        if number < len(messages):
            assert f"Continued in the next message ({number}/{len(messages)})" in text


def test_a_record_longer_than_a_message_is_shortened_not_split() -> None:
    huge = paper(1, title="strained graphene " * 2000, venue="Proceedings " * 1000)
    papers = [paper(0), huge, paper(2)]
    messages = alert_messages(FollowAlert(follow=FOLLOW, papers=papers))
    assert [p for part, _ in messages for p in part.papers] == papers
    assert all(fits_one_message(blocks) for _, blocks in messages)
    [(_, blocks)] = [(part, blocks) for part, blocks in messages if huge in part.papers]
    text = json.dumps(blocks, ensure_ascii=False)
    assert "strained graphene" in text and "…" in text and len(text) < 4 * LONG_FIELD
