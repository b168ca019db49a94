"""``/readyz`` of a replica whose heartbeat fails: 503 once it has not been recorded for longer than
the stop rule (3 heartbeats: the other replicas take its events over), while ``/healthz`` stays 200;
a replica whose answers hang is not ready and not live.

Over real HTTP (``SlackRuntime.start_http``), on SQLite and PostgreSQL (``database_url``). The
failures are real: the heartbeats' table renamed away under the running replica, or its
PostgreSQL server stopped. The replica's wall clock is a value the test moves forward (no
waiting); its heartbeat runs when the test calls ``tick`` (the background beat, every 300 s, never
comes during a test).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from bot.slack.app import SlackRuntime, build_slack
from bot.slack.http_door import DoorLimits
from retrieval.assistant import Assistant
from retrieval.storage.database import close_databases
from tests.slack.conftest import BOT_TOKEN, SECRET, make_settings
from tests.slack.slack_requests import SlackSender
from tests.slack.stand_in import Call, SlackStandIn
from tests.support.patience import patience
from tests.support.postgres import PostgresServer

EVERY = 300.0  # PAPERBOT_CLUSTER_HEARTBEAT_SECONDS (its maximum): stopped after 900 s without one
START = 1_800_000_000.0


@dataclass
class WallClock:
    now: float = START

    def __call__(self) -> float:
        return self.now


@dataclass
class Replica:
    runtime: SlackRuntime
    base: str
    clock: WallClock

    def ready(self) -> httpx.Response:
        return httpx.get(f"{self.base}/readyz", timeout=30, trust_env=False)

    def health(self) -> httpx.Response:
        return httpx.get(f"{self.base}/healthz", timeout=5, trust_env=False)

    def healthy(self) -> bool:
        response = self.health()
        return response.status_code == 200 and response.text == "ok"


@contextmanager
def _replica(stand_in: SlackStandIn, data_dir: Path, database_url: str | None, **overrides: object) -> Iterator[Replica]:
    settings = make_settings(data_dir, slack_bot_token=BOT_TOKEN, slack_signing_secret=SECRET,
                             slack_api_url=stand_in.api_url, database_url=database_url, cluster_heartbeat_seconds=EVERY,
                             replica_id="replica-under-test", **overrides)
    clock = WallClock()
    runtime = build_slack(settings, Assistant(settings, chat_model=None), http=True, wall_clock=clock)
    server = runtime.start_http("127.0.0.1", 0, limits=DoorLimits(ready_cache_seconds=0))  # every probe checks
    try:
        yield Replica(runtime, server.events_url.removesuffix("/slack/events"), clock)
    finally:
        server.shutdown()
        runtime.close()
        close_databases()


def _sql_url(data_dir: Path, database_url: str | None) -> str:
    return database_url or f"sqlite:///{data_dir / 'records.sqlite3'}"


def _rename(url: str, old: str, new: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))
    finally:
        engine.dispose()


def test_readyz_is_503_once_the_heartbeat_fails_longer_than_the_stop_rule(
        stand_in: SlackStandIn, tmp_path: Path, database_url: str | None) -> None:
    data_dir = tmp_path / "data"
    with _replica(stand_in, data_dir, database_url) as replica:
        before = replica.ready()
        assert before.status_code == 200, before.text
        assert set(before.json()["checks"]) == {"database", "vector_index"}  # not started: no heartbeat to report

        replica.runtime.replica.start()
        started = replica.ready()
        assert started.status_code == 200, started.text
        assert started.json()["checks"]["heartbeat"] == "ok: recorded 0 s ago (every 300 s)"

        _rename(_sql_url(data_dir, database_url), "cluster_members", "cluster_members_away")  # a real failure
        replica.clock.now += 3 * EVERY  # three beats missed, the last of them failed: still within the rule
        assert replica.runtime.replica.tick() == 0
        within = replica.ready()
        assert within.status_code == 200, within.text
        line = within.json()["checks"]["heartbeat"]
        assert line.startswith("ok: recorded 900 s ago (every 300 s); the last failed: ")

        replica.clock.now += 1
        replica.runtime.replica.tick()
        out = replica.ready()
        assert out.status_code == 503, out.text
        report = out.json()
        assert report["ready"] is False and report["checks"]["database"].startswith("ok: ")
        assert report["checks"]["heartbeat"].startswith(
            "heartbeat not recorded for 901 s (more than 900 s): other replicas take over this replica's events; "
            "the last failed: ")
        assert replica.healthy()  # alive, not ready: the balancer sends its events elsewhere

        _rename(_sql_url(data_dir, database_url), "cluster_members_away", "cluster_members")
        replica.runtime.replica.tick()  # recorded again: ready again
        back = replica.ready()
        assert back.status_code == 200 and back.json()["checks"]["heartbeat"] == "ok: recorded 0 s ago (every 300 s)"


def test_a_replica_whose_answer_hangs_is_503_and_not_live_at_once_and_both_again_when_it_finishes(
        stand_in: SlackStandIn, tmp_path: Path, database_url: str | None) -> None:
    """An answer stuck in its post to Slack (the stand-in holds the call; "help" needs no model or
    index, so nothing else is slow): after
    PAPERBOT_CLUSTER_STALL_SECONDS without a finished answer the replica stops heart-beating (the
    others take its events over) and /readyz is 503 at once, naming why, and so is /healthz (a
    liveness probe restarts it); the post returns, the answer is finished, and the next beat makes
    it ready again (and live at once)."""
    inside, go = threading.Event(), threading.Event()

    def hold_the_answer(call: Call) -> None:
        if call.method == "chat.postMessage" and not inside.is_set():
            inside.set()
            go.wait(60)

    with _replica(stand_in, tmp_path / "data", database_url, cluster_stall_seconds=120) as replica:
        loop = replica.runtime.replica
        loop.start()
        assert replica.ready().status_code == 200
        stand_in.on_record = hold_the_answer
        sender = SlackSender(f"{replica.base}/slack/events", SECRET)
        response, _ = sender.mention("help")
        assert response.status_code == 200, response.text
        assert inside.wait(patience(30)), "the answer was never posted"

        replica.clock.now += 120  # not more than the stall limit yet
        assert loop.tick() == 0 and replica.ready().status_code == 200
        replica.clock.now += 1
        assert loop.tick() == 0
        out = replica.ready()
        assert out.status_code == 503, out.text
        assert out.json()["checks"]["heartbeat"].startswith(
            "answers hung: 1 event(s) open here and none finished for 121 s (more than 120 s): not heart-beating")
        health = replica.health()  # not live either: a liveness probe restarts it
        assert health.status_code == 503 and health.headers["cache-control"] == "no-store", health.text
        assert health.text.startswith("not live: answers hung: 1 event(s) open here and none finished for 121 s")

        go.set()  # the post returns: the answer finishes
        deadline = time.monotonic() + patience(60)
        while loop.deliveries.without_progress() != (0, 0.0) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert loop.deliveries.without_progress() == (0, 0.0), f"the answer was not finished within {patience(60):g} s"
        loop.tick()
        back = replica.ready()
        assert back.status_code == 200 and back.json()["checks"]["heartbeat"] == "ok: recorded 0 s ago (every 300 s)"
        assert replica.healthy()


def test_a_replica_that_could_not_join_is_ready_until_the_stop_rule_then_503(
        stand_in: SlackStandIn, tmp_path: Path, database_url: str | None) -> None:
    data_dir = tmp_path / "data"
    with _replica(stand_in, data_dir, database_url) as replica:
        assert replica.ready().status_code == 200  # the schema is created by the first check
        _rename(_sql_url(data_dir, database_url), "cluster_members", "cluster_members_away")
        replica.runtime.replica.start()  # its join fails: logged, the first beats retry
        line = replica.ready().json()["checks"]["heartbeat"]
        assert line.startswith("ok: none yet, started 0 s ago (every 300 s); the last failed: ")
        replica.clock.now += 3 * EVERY + 1
        out = replica.ready()
        assert out.status_code == 503 and out.json()["checks"]["heartbeat"].startswith(
            "heartbeat not recorded for 901 s (more than 900 s)")
        _rename(_sql_url(data_dir, database_url), "cluster_members_away", "cluster_members")


@pytest.mark.slow  # a PostgreSQL server of its own, stopped by the test
@pytest.mark.postgres
def test_readyz_is_503_naming_the_database_and_the_heartbeat_when_the_database_stops(
        stand_in: SlackStandIn, tmp_path: Path) -> None:
    server = PostgresServer.start()
    try:
        with _replica(stand_in, tmp_path / "data", server.new_database()) as replica:
            replica.runtime.replica.start()
            assert replica.ready().status_code == 200

            server.stop()
            replica.clock.now += 3 * EVERY + 1
            assert replica.runtime.replica.tick() == 0  # the heartbeat fails: logged, not raised
            out = replica.ready()
            assert out.status_code == 503, out.text
            checks = out.json()["checks"]
            assert checks["heartbeat"].startswith("heartbeat not recorded for 901 s (more than 900 s)")
            assert "no connection to the database" in checks["heartbeat"]
            assert not checks["database"].startswith("ok: ") and "no connection to the database" in checks["database"]
            assert replica.healthy()
    finally:
        server.stop()
