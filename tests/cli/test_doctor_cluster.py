"""`paperbot doctor` on a cluster: the replicas heart-beating in the database (alive or stopped by
the rule of 3 heartbeats) and the Chroma server (reachable with its count, or a clear error and
exit status 3), on SQLite and PostgreSQL (``database_url``), with a real ``chroma run`` server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval.config import Settings
from retrieval.storage.database import close_databases, open_database
from retrieval.storage.members import ClusterMembers, Member
from tests.cli.conftest import paperbot_here
from tests.support.chroma import ChromaServer, free_port
from tests.support.model_cache import link_model_cache

HEARTBEAT = 5.0  # PAPERBOT_CLUSTER_HEARTBEAT_SECONDS: a replica silent for 15 s counts as stopped


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with ChromaServer(tmp_path_factory.mktemp("doctor-chroma")) as server:
        yield server


def _record_heartbeats(data_dir: Path, database_url: str | None, now: float) -> None:
    """Three replicas' rows as `paperbot serve` writes them: ``replica-a`` beat a second ago,
    ``replica-b`` a minute ago (killed: it never left the table), ``replica-old`` two days ago."""
    settings = Settings(_env_file=None, data_dir=data_dir, database_url=database_url)
    members = ClusterMembers(open_database(settings))
    for name, host, pid, age in (("replica-a", "host-a", 101, 1.0), ("replica-b", "host-b", 202, 60.0),
                                  ("replica-old", "host-c", 303, 2 * 86400.0)):
        members.join(Member(id=name, role="slack", host=host, pid=pid, started_at="2026-12-04T09:00:00.000+00:00",
                            last_seen=now - age))
    close_databases()


@pytest.mark.slow  # doctor loads the encoder; a Chroma server is started
def test_doctor_lists_the_replicas_alive_and_stopped_and_the_chroma_server(
        tmp_path: Path, database_url: str | None, model_cache: Path, chroma: ChromaServer) -> None:
    data_dir = link_model_cache(tmp_path / "data", model_cache)
    url, beat = database_url or "", str(HEARTBEAT)

    alone = paperbot_here("doctor", "--no-model", "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url,
                          PAPERBOT_CLUSTER_HEARTBEAT_SECONDS=beat)
    assert alone.code == 0, alone.stderr
    assert "cluster" not in alone.json()  # one machine, nothing serving: nothing new to say
    close_databases()

    _record_heartbeats(data_dir, database_url, time.time())
    report = paperbot_here("doctor", "--no-model", "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url,
                           PAPERBOT_CLUSTER_HEARTBEAT_SECONDS=beat)
    assert report.code == 0, report.stderr
    cluster = report.json()["cluster"]
    assert cluster["ok"] is True and cluster["chroma"] is None and cluster["heartbeat_seconds"] == HEARTBEAT
    seen = {replica["id"]: replica for replica in cluster["replicas"]}
    assert sorted(seen) == ["replica-a", "replica-b"] and cluster["older"] == 1  # silent for days: counted only
    assert (seen["replica-a"]["alive"], seen["replica-b"]["alive"]) == (True, False)
    assert (seen["replica-b"]["host"], seen["replica-b"]["pid"], seen["replica-b"]["role"]) == ("host-b", 202, "slack")
    assert 55 <= seen["replica-b"]["seconds_since_heartbeat"] < 600
    assert report.json()["ok"] is True and "records" in report.json()  # the existing fields stay
    close_databases()

    text = paperbot_here("doctor", "--no-model", data_dir=data_dir, PAPERBOT_CHROMA_URL=chroma.url,
                         PAPERBOT_COLLECTION="doctor-cluster", PAPERBOT_DATABASE_URL=url,
                         PAPERBOT_CLUSTER_HEARTBEAT_SECONDS=beat)
    assert text.code == 0, text.stderr
    lines = text.stdout.splitlines()
    assert f"Chroma server: {chroma.url} reachable; collection 'doctor-cluster', 0 vectors." in lines
    assert "Replicas: 1 alive, 1 stopped (heartbeat every 5 s; silent for 3 = stopped)." in lines
    [alive] = [line for line in lines if "replica replica-a " in line]
    [stopped] = [line for line in lines if "replica replica-b " in line]
    assert "(slack, host-a pid 101," in alive and "): alive, last heartbeat " in alive
    assert "(slack, host-b pid 202," in stopped and "STOPPED" in stopped
    assert "  1 older row(s) of replicas silent for more than a day are not listed." in lines


def test_doctor_with_a_chroma_url_on_a_closed_port_fails_saying_what_to_do(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    data_dir = tmp_path / "data"
    run = paperbot_here("doctor", "--no-model", data_dir=data_dir, PAPERBOT_CHROMA_URL=url)
    assert run.code == 3, run.stderr
    assert "Index not checked: the Chroma server cannot be reached (below)." in run.stdout
    assert (f"Chroma server: UNREACHABLE at {url}: Cannot reach the Chroma server at {url}. Start it (e.g. "
            "`chroma run --path DIR --host 127.0.0.1 --port 8000`) or unset PAPERBOT_CHROMA_URL") in run.stdout
    assert "Database: SQLite" in run.stdout and "Traceback" not in run.stderr  # the rest is still reported

    report = paperbot_here("doctor", "--no-model", "--json", data_dir=data_dir, PAPERBOT_CHROMA_URL=url)
    assert report.code == 3
    body = report.json()
    assert (body["ok"], body["index_checked"], body["cluster"]["ok"]) == (False, False, False)
    assert body["cluster"]["chroma"]["reachable"] is False and body["cluster"]["chroma"]["vectors"] is None
    assert body["cluster"]["chroma"]["error"].startswith(f"Cannot reach the Chroma server at {url}.")
    assert body["database"]["current"] is True
