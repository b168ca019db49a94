"""Event-id dedupe in the Slack state file, with an injected clock."""

from __future__ import annotations

import threading

from bot.slack.dedupe import StoredDeduper
from bot.slack.store import SlackStore


def test_stored_keys_outlive_the_process_and_are_shared(tmp_path) -> None:
    path = tmp_path / "slack" / "state.sqlite3"
    now = [1_000_000.0]
    first_process = SlackStore(path)
    assert StoredDeduper(first_process, ttl=60, clock=lambda: now[0]).first("event:Ev1")
    first_process.close()  # a restart
    second, other = SlackStore(path), SlackStore(path)  # the restarted process and a second one
    try:
        restarted = StoredDeduper(second, ttl=60, clock=lambda: now[0])
        neighbour = StoredDeduper(other, ttl=60, clock=lambda: now[0])
        assert not restarted.first("event:Ev1")
        assert neighbour.first("message:C1:1.2") and not restarted.first("message:C1:1.2")
        now[0] += 61
        assert restarted.first("event:Ev1")  # expired: Slack stopped retrying long ago
    finally:
        second.close()
        other.close()


def test_one_of_many_concurrent_claims_wins(tmp_path) -> None:
    stores = [SlackStore(tmp_path / "state.sqlite3") for _ in range(4)]
    wins: list[bool] = []
    barrier = threading.Barrier(len(stores))

    def claim(store: SlackStore) -> None:
        barrier.wait()
        wins.append(StoredDeduper(store).first("event:Ev9"))

    threads = [threading.Thread(target=claim, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    assert sorted(wins) == [False, False, False, True]
