"""Event-id dedupe with an injected clock."""

from __future__ import annotations

from bot.slack.dedupe import Deduper


def test_first_then_repeat_then_expiry() -> None:
    now = [1000.0]
    seen = Deduper(ttl=60, clock=lambda: now[0])
    assert seen.first("event:Ev1")
    assert not seen.first("event:Ev1")
    assert seen.first("event:Ev2")
    now[0] += 61
    assert seen.first("event:Ev1")


def test_bounded_size_forgets_oldest() -> None:
    seen = Deduper(ttl=3600, max_entries=3, clock=lambda: 0.0)
    for key in "abcd":
        assert seen.first(key)
    assert seen.first("a")  # evicted
    assert not seen.first("d")
