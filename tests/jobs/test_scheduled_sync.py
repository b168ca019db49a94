"""The scheduled sync runs once per period for the whole deployment, not once per process.

Three ``paperbot worker`` processes share one database with a period of a few seconds
(``PAPERBOT_SYNC_INTERVAL_HOURS``); the roster's sources are a local server replaying recorded
responses (``tests/ingest/recorded.py``: first syncs, then the incremental ones). Once three
scheduled syncs have run, every worker is stopped with SIGTERM (each exits 0), and:

* each period start has exactly one sync job, and no period the workers lived through is missing;
* each of those jobs ran once and left its report; the first found the roster's papers, the
  later ones nothing new (each sync saw the previous one's records);
* every request the syncs made was answered from the recordings.
"""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime
from itertools import pairwise

import psycopg
import pytest

from retrieval.ingest.sync import OVERLAP
from tests.ingest.recorded import DEL_MAESTRO, FENNER, FENNER_ORCID, replay, roster_recordings
from tests.jobs.conftest import Deployment
from tests.sources.replay import ReplayServer
from tests.support.patience import patience

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

PERIOD_HOURS = 0.0015  # 5.4 s
SYNCS = 3


def _query(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as connection:
        return connection.execute(sql.encode()).fetchall()  # the test's own statements


def test_three_workers_run_one_scheduled_sync_per_period(deployment: Deployment) -> None:
    since = (datetime.now(UTC) - OVERLAP).date()
    with ReplayServer(replay([])) as server:
        server.replay = replay(roster_recordings(server.url) + roster_recordings(server.url, since=since))
        deployment.extra.update({
            "PAPERBOT_ARXIV_URL": f"{server.url}/api/query", "PAPERBOT_OPENALEX_URL": server.url,
            "PAPERBOT_CROSSREF_URL": server.url, "PAPERBOT_ARXIV_DELAY": "0", "PAPERBOT_HTTP_MAX_RETRIES": "0",
            "PAPERBOT_SYNC_INTERVAL_HOURS": str(PERIOD_HOURS)})
        for argv in (("scholars", "add", FENNER, "--orcid", FENNER_ORCID), ("scholars", "add", DEL_MAESTRO)):
            code, _out, err = deployment.cli(*argv)
            assert code == 0, err[-2000:]

        workers = [deployment.worker(name) for name in ("w1", "w2", "w3")]
        started = time.time()
        deadline = time.monotonic() + patience(240)
        while len(_query(deployment.database_url, "SELECT id FROM procrastinate_jobs WHERE task_name = 'paperbot.sync'"
                                                  " AND status = 'succeeded'")) < SYNCS:
            assert time.monotonic() < deadline, deployment.log("w1")[-3000:]
            assert all(worker.poll() is None for worker in workers), deployment.log("w1")[-3000:]
            time.sleep(0.2)  # polling other processes' progress
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        codes = [worker.wait(timeout=patience(120)) for worker in workers]
        stopped = time.time()
        assert codes == [0, 0, 0]
        assert server.replay.unmatched == []

    period = PERIOD_HOURS * 3600
    url = deployment.database_url
    jobs = _query(url, "SELECT id, status, (args->>'timestamp')::bigint, attempts FROM procrastinate_jobs"
                       " WHERE task_name = 'paperbot.sync' ORDER BY id")
    stamps = sorted(stamp for _id, _status, stamp, _attempts in jobs)
    assert len(set(stamps)) == len(stamps) >= SYNCS  # one job per period start
    assert _query(url, "SELECT defer_timestamp FROM procrastinate_periodic_defers"
                       " WHERE periodic_id = 'scheduled-sync'") == [(stamps[-1],)]  # procrastinate keeps the latest
    assert all(abs(later - earlier - period) <= 1 for earlier, later in pairwise(stamps))
    assert stamps[0] >= started - period - 1 and stamps[-1] <= stopped  # the periods the workers lived through
    done = [(job_id, attempts) for job_id, status, _stamp, attempts in jobs if status == "succeeded"]
    assert len(done) >= SYNCS and all(attempts == 1 for _id, attempts in done)  # each ran once
    results = dict(_query(url, "SELECT job_id, result FROM job_results WHERE task = 'paperbot.sync'"))
    assert set(results) == {job_id for job_id, _attempts in done}
    new = [len(results[job_id]["new_paper_ids"]) for job_id, _attempts in sorted(done)]
    assert new[0] > 0 and new[1:] == [0] * (len(new) - 1)
