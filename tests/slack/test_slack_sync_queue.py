"""``/paperbot sync`` with the job queue on PostgreSQL: a real ``paperbot worker`` subprocess runs
the sync job, the Slack app follows it from the database and its one message ends with the
job's outcome; a second sync while the job waits points at it; and when the replica following
a job stops, another replica's heartbeat takes the message over and finishes it.

The deployment (database, ``chroma run``, workers) is ``tests/jobs/conftest.py``'s; the roster's
sources replay recorded responses (``tests/ingest/recorded.py``); Slack is the Web API stand-in.
A replica "stops" as ``paperbot serve`` does on SIGTERM (``SlackRuntime.close``: its work
queue closes, the follower lets go of the job); it never heartbeats in these tests, so to the
other replica it is one whose heartbeat went silent.
"""

from __future__ import annotations

import itertools
import signal
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from retrieval.assistant import Assistant
from retrieval.ingest.sync import OVERLAP
from retrieval.storage.database import close_databases
from tests.ingest.recorded import DEL_MAESTRO, FENNER, FENNER_ORCID, replay, roster_recordings
from tests.jobs.conftest import Deployment, chroma, deployment  # noqa: F401  (fixtures)
from tests.slack.conftest import Bot, BotFactory, make_settings
from tests.slack.test_slack_sync import CHANNEL, SYNCER, source_settings
from tests.sources.replay import ReplayServer
from tests.support.model_cache import link_model_cache
from tests.support.patience import patience

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

OTHER = "USYNC0002"


def _rows(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as connection:
        return connection.execute(sql.encode()).fetchall()  # the test's own reading of the tables


def _replica(make_bot: BotFactory, where: Deployment, server: ReplayServer, data_dir: Path, name: str) -> Bot:
    queue = {"database_url": where.database_url, "job_queue": True, "chroma_url": where.chroma_url,
             "collection": where.collection}
    core = Assistant(make_settings(link_model_cache(data_dir), **queue, **source_settings(server.url)),
                     chat_model=None)
    ticks = itertools.count(0, 100)  # every progress change is shown (no throttling waits)
    return make_bot(core=core, clock=lambda: float(next(ticks)), slack_sync_users=[SYNCER, OTHER],
                    replica_id=name, **queue)


def _sync_texts(bot: Bot, ts: str) -> list[str]:
    return [call.text() for call in bot.api.calls_to("chat.update") if call.params.get("ts") == ts]


def _top_level(bot: Bot) -> list[str]:
    return [ts for ts, message in bot.api.messages[CHANNEL].items() if not message.get("thread_ts")]


def test_a_queued_sync_ends_with_its_outcome_even_when_its_replica_stops(
        deployment: Deployment, make_bot: BotFactory, tmp_path: Path) -> None:  # noqa: F811  (deployment first: torn down last)
    since = (datetime.now(UTC) - OVERLAP).date()
    try:
        with ReplayServer(replay([])) as server:
            server.replay = replay(roster_recordings(server.url) + roster_recordings(server.url, since=since))
            deployment.extra.update({
                "PAPERBOT_ARXIV_URL": f"{server.url}/api/query", "PAPERBOT_OPENALEX_URL": server.url,
                "PAPERBOT_CROSSREF_URL": server.url, "PAPERBOT_ARXIV_DELAY": "0", "PAPERBOT_HTTP_MAX_RETRIES": "0"})
            for argv in (("scholars", "add", FENNER, "--orcid", FENNER_ORCID), ("scholars", "add", DEL_MAESTRO)):
                code, _out, err = deployment.cli(*argv)
                assert code == 0, err[-2000:]

            # 1. a worker runs the job; the replica that started it shows its outcome
            worker = deployment.worker("w1")
            a = _replica(make_bot, deployment, server, tmp_path / "a", "replica-a")
            a.sender.command("sync", user=SYNCER, channel=CHANNEL, response_url=a.api.response_url("first"))
            a.api.wait_for(lambda: any(str(m.get("text")).startswith("Sync finished")
                                       for m in a.api.messages[CHANNEL].values()), timeout=240, what="the outcome")
            a.idle()
            [first] = _top_level(a)
            final = a.api.messages[CHANNEL][first]
            assert "2 scholar(s)" in str(final["blocks"]) and FENNER in str(final["blocks"])
            assert any("started a sync" in text for text in _sync_texts(a, first))  # the progress, then the outcome
            [(job_id, replica, finished)] = _rows(deployment.database_url,
                                                  "SELECT job_id, replica, finished_at FROM slack_jobs")
            assert replica == "replica-a" and finished is not None
            assert _rows(deployment.database_url, f"SELECT done, total FROM job_progress WHERE job_id = {job_id}") \
                == [(2, 2)]
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=patience(120)) == 0

            # 2. no worker: the next sync waits; a second one points at it
            a.sender.command("sync", user=SYNCER, channel=CHANNEL, response_url=a.api.response_url("second"))
            a.api.wait_for(lambda: len(_rows(deployment.database_url, "SELECT job_id FROM slack_jobs")) == 2,
                           what="the second job's message stored")
            [second] = [ts for ts in _top_level(a) if ts != first]
            a.api.wait_for(lambda: any("waiting for a" in text for text in _sync_texts(a, second)),
                           what="the waiting notice")
            a.sender.command("sync", user=OTHER, channel=CHANNEL, response_url=a.api.response_url("again"))
            [again] = a.api.wait_calls("respond", where=lambda call: call.path.endswith("/again"))
            assert "already running" in again.text() and f"p{second.replace('.', '')}" in again.text()
            assert len(_rows(deployment.database_url, "SELECT id FROM procrastinate_jobs"
                                                      " WHERE task_name = 'paperbot.sync'")) == 2  # none queued

            # 3. replica a stops; replica b takes the message over and finishes it once a worker ran the job
            a.server.shutdown()
            a.runtime.close()
            b = _replica(make_bot, deployment, server, tmp_path / "b", "replica-b")
            assert b.runtime.replica.tick() == 1
            deployment.worker("w2")
            b.api.wait_for(lambda: str(b.api.messages[CHANNEL][second].get("text")).startswith("Sync finished"),
                           timeout=240, what="the outcome of the taken-over job")
            b.idle()
            assert _top_level(b) == [first, second]  # no new message: the same one, finished
            rows = _rows(deployment.database_url, "SELECT replica, finished_at FROM slack_jobs ORDER BY job_id")
            assert rows[1][0] == "replica-b" and rows[1][1] is not None
            assert b.runtime.replica.tick() == 0  # nothing left to take over
            assert server.replay.unmatched == []
    finally:
        close_databases()
