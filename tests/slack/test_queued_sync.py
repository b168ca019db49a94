"""`paperbot serve` with a job queue leaves the scheduled sync to the workers (once per
deployment, ``retrieval.jobs.schedule``); without one it runs the sync itself as before; the
queue setting without PostgreSQL is refused at start-up instead of the sync never running."""

from __future__ import annotations

import logging

import pytest

from retrieval.errors import ConfigError
from retrieval.storage.database import close_databases
from tests.slack.conftest import BotFactory

DUE = 10 ** 9  # a clock this far ahead: a scheduled sync would be due


def _ticks_at(make_bot: BotFactory, caplog: pytest.LogCaptureFixture, **overrides: object) -> list[str]:
    now = [0.0]
    bot = make_bot(clock=lambda: now[0], sync_interval_hours=1, **overrides)
    now[0] = DUE
    with caplog.at_level(logging.INFO, logger="bot.slack.alerts"):
        bot.runtime.scheduler.tick()
    return [record.getMessage() for record in caplog.records if "scheduled sync" in record.getMessage()]


def test_without_a_queue_serve_runs_the_scheduled_sync(make_bot: BotFactory, caplog: pytest.LogCaptureFixture) -> None:
    assert _ticks_at(make_bot, caplog) == ["scheduled sync found 0 new paper(s)"]


@pytest.mark.postgres
def test_with_a_queue_serve_leaves_the_scheduled_sync_to_the_workers(
        make_bot: BotFactory, caplog: pytest.LogCaptureFixture, postgres_databases) -> None:
    try:
        assert _ticks_at(make_bot, caplog, job_queue=True, database_url=postgres_databases()) == []
    finally:
        close_databases()


def test_the_queue_without_postgresql_is_refused_at_start_up(make_bot: BotFactory) -> None:
    with pytest.raises(ConfigError, match="PostgreSQL"):
        make_bot(job_queue=True, sync_interval_hours=1)
