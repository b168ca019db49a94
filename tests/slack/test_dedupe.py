"""Event-id dedupe in the Slack state, with an injected clock, on SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.slack.dedupe import StoredDeduper
from bot.slack.store import SlackStore
from retrieval.config import Settings
from retrieval.storage import database as storage
from retrieval.storage.database import Database, open_database


@pytest.fixture
def processes(tmp_path: Path, database_url: str | None) -> Iterator[list[Database]]:
    """Four ``Database`` objects on one database, as four processes would each have."""
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", database_url=database_url)
    open_database(settings)  # upgraded once
    databases = [Database(storage.database_url(settings), data_dir=settings.data_dir) for _ in range(4)]
    yield databases
    for database in databases:
        database.dispose()


def test_stored_keys_outlive_the_process_and_are_shared(processes: list[Database]) -> None:
    now = [1_000_000.0]
    first_process = SlackStore(processes[0])
    assert StoredDeduper(first_process, ttl=60, clock=lambda: now[0]).first("event:Ev1")
    first_process.database.dispose()  # a restart
    second, other = SlackStore(processes[1]), SlackStore(processes[2])  # the restarted process and a second one
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


def test_one_of_many_concurrent_claims_wins(processes: list[Database]) -> None:
    stores = [SlackStore(database) for database in processes]
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
