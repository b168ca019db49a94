"""Three `paperbot serve --http` replicas behind a load balancer answer each Slack event exactly once.

Everything is real and on 127.0.0.1, started by this module: a PostgreSQL server
(``postgres_server``), a ``chroma run`` server, the Slack Web API stand-in recording every post,
a small index (the 22 Slack fixture records) ingested once into both, three replica processes
(``bench.load.ServeProcess``: each its own data dir, the same ``PAPERBOT_DATABASE_URL`` and
``PAPERBOT_CHROMA_URL``, extractive answers, a heartbeat of ``HEARTBEAT`` s) and a round-robin
proxy in front of them (``tests/support/proxy.py``). The test plays Slack: it signs each event,
sends it through the proxy, and sends again what got no 200 (as Slack re-delivers an event it
saw no acknowledgement for), to whichever replica the proxy picks next.

The replicas also poll the follow alerts' queue (every ``ALERT_POLL`` s): a follow alert a
sync queued is posted once, by one of them.

An event's answer is the message in its thread that carries the vote buttons; "answered once"
means exactly one such message per event thread, and no bot message left there that is not it.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from sqlalchemy import create_engine, text

from bench.load import ServeProcess
from retrieval.alerts.follows import FollowStore, note_new_papers
from retrieval.assistant import Assistant
from retrieval.config import Settings
from retrieval.storage.database import close_databases
from tests.slack.slack_requests import signature
from tests.slack.stand_in import Call, SlackStandIn
from tests.support.chroma import ChromaServer
from tests.support.model_cache import link_model_cache
from tests.support.patience import patience
from tests.support.postgres import PostgresServer
from tests.support.proxy import RoundRobinProxy

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "slack" / "records.jsonl"
SECRET = "cluster-test-signing-secret-0000"
BOT_TOKEN = "xoxb-0000-0000-clustertesttoken"
TEAM, BOT = "T0CLUSTER", "UBOTCLUSTER"
CHANNEL = "CCLUSTER01"
COLLECTION = "cluster-test"
HEARTBEAT = 0.5  # seconds: a replica silent for three of them counts as stopped
ALERT_POLL = 0.3  # seconds between two passes of each replica over the follow alerts' queue
REPLICAS = 3
QUESTIONS = ("discrete dipole approximation", "graphene magnetophonon resonance", "multiple futile cycle steady states",
             "prompt diphoton production at the Tevatron")
VOTE = "paperbot_vote_up"


# --- the cluster ---------------------------------------------------------------------------------


@dataclass
class Cluster:
    replicas: list[ServeProcess]
    proxy: RoundRobinProxy
    api: SlackStandIn
    database_url: str
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30, trust_env=False))
    _ids: Iterator[int] = field(default_factory=lambda: iter(range(1, 10**6)))

    @property
    def events_url(self) -> str:
        return self.proxy.url + "/slack/events"

    def post(self, body: bytes, content_type: str, *, to: int | None = None, retry: int = 0) -> httpx.Response:
        """One signed delivery through the proxy (``to``: that replica; else the next in turn)."""
        stamp = str(int(time.time()))
        headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": stamp,
                   "X-Slack-Signature": signature(SECRET, stamp, body)}
        if retry:
            headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
        if to is not None:
            headers["X-Proxy-To"] = str(to)
        return self.http.post(self.events_url, content=body, headers=headers)

    def deliver(self, body: bytes, *, to: int | None = None, retry: int = 0, attempts: int = 8) -> tuple[int, int]:
        """Deliver until a 200 comes back, as Slack does; (replica that acknowledged, retries used)."""
        for attempt in range(attempts):
            response = self.post(body, "application/json", to=to if attempt == 0 else None, retry=retry + attempt)
            if response.status_code == 200:
                return int(response.headers["x-proxy-upstream"]), attempt
        raise AssertionError(f"no 200 after {attempts} deliveries")

    def new_event(self, text: str, *, kind: str = "app_mention", thread_ts: str | None = None,
                  user: str | None = None) -> tuple[bytes, str]:
        """A signed-ready event body and its message ts (each from its own user unless given)."""
        n = next(self._ids)
        ts = f"1690000000.{n:06d}"
        event: dict[str, Any] = {"type": kind, "user": user or f"UASK{n:06d}", "ts": ts, "channel": CHANNEL,
                                 "event_ts": ts, "text": f"<@{BOT}> {text}" if kind == "app_mention" else text}
        if kind == "message":
            event["channel_type"] = "channel"
        if thread_ts:
            event["thread_ts"] = thread_ts
        body = {"token": "unused", "team_id": TEAM, "api_app_id": "A0CLUSTER", "type": "event_callback",
                "event": event, "event_id": f"EvCLUSTER{n:06d}", "event_time": int(time.time()),
                "authorizations": [{"team_id": TEAM, "user_id": BOT, "is_bot": True}]}
        return json.dumps(body).encode(), ts

    def count(self, query: str) -> int:
        """``SELECT count(*) ...`` read from the database."""
        engine = create_engine(self.database_url)
        try:
            with engine.connect() as connection:
                return int(connection.execute(text(query)).scalar_one())
        finally:
            engine.dispose()

    def thread(self, ts: str) -> list[dict[str, Any]]:
        """The bot's messages in the thread of ``ts``, as they look now."""
        return [m for m in self.api.channel_messages(CHANNEL) if m.get("thread_ts") == ts and m.get("user") == BOT]

    def answers(self, ts: str) -> list[dict[str, Any]]:
        return [m for m in self.thread(ts) if VOTE in json.dumps(m.get("blocks") or [])]

    def open_claims(self) -> int:
        """Events claimed and not done yet (``slack_claims``), read from the database."""
        return self.count("SELECT count(*) FROM slack_claims WHERE payload IS NOT NULL AND done_at IS NULL")

    def wait_settled(self, timeout: float = 60.0) -> None:
        """Until every claimed event is done (polled with the database as the clock's witness)."""
        timeout = patience(timeout)
        deadline = time.monotonic() + timeout
        while (left := self.open_claims()) > 0:
            if time.monotonic() > deadline:
                raise AssertionError(f"{left} claimed events not done after {timeout:.0f} s")
            time.sleep(0.1)  # a poll of the database, not a test delay

    def wait_answered(self, threads: list[str], *, per_thread: int = 1, timeout: float = 60.0) -> None:
        def done() -> bool:
            return all(len(self.answers(ts)) >= per_thread for ts in threads)

        try:
            self.api.wait_for(done, timeout=timeout, what=f"answers in {len(threads)} threads")
        except AssertionError:
            missing = [ts for ts in threads if len(self.answers(ts)) < per_thread]
            logs = "\n".join(f"--- replica {i}:\n" + "".join(r.stderr[-15:]) for i, r in enumerate(self.replicas))
            raise AssertionError(f"{len(missing)} of {len(threads)} threads unanswered: {missing[:5]}\n{logs}") from None


def _settings(data_dir: Path, database_url: str, chroma_url: str) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, database_url=database_url, chroma_url=chroma_url,
                    collection=COLLECTION, openai_api_key=None, openai_base_url=None, llm_field_terms=False,
                    llm_judge_relevance=False)


@pytest.fixture(scope="module")
def cluster(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    database_url = postgres_server.new_database()
    chroma = ChromaServer(root / "chroma")
    chroma.start()
    api = SlackStandIn(bot_user_id=BOT, team_id=TEAM).start()
    replicas: list[ServeProcess] = []
    proxy: RoundRobinProxy | None = None
    try:
        builder = Assistant(_settings(link_model_cache(root / "ingest"), database_url, chroma.url), chat_model=None)
        assert len(builder.library.ingest_files([RECORDS]).added) == 22
        builder.close()
        close_databases()
        for i in range(REPLICAS):
            data_dir = link_model_cache(root / f"replica-{i}" / "data")
            replicas.append(ServeProcess(data_dir, api.api_url, signing_secret=SECRET, bot_token=BOT_TOKEN, env={
                "PAPERBOT_DATABASE_URL": database_url, "PAPERBOT_CHROMA_URL": chroma.url,
                "PAPERBOT_COLLECTION": COLLECTION, "PAPERBOT_REPLICA_ID": f"replica-{i}",
                "PAPERBOT_CLUSTER_HEARTBEAT_SECONDS": str(HEARTBEAT), "PAPERBOT_SLACK_WORKERS": "4",
                "PAPERBOT_SLACK_USER_QUEUE_LIMIT": "50", "PAPERBOT_ALERT_POLL_SECONDS": str(ALERT_POLL),
            }))
        with ThreadPoolExecutor(REPLICAS) as starting:  # in parallel: each loads its encoder
            list(starting.map(lambda replica: replica.start(), replicas))
        proxy = RoundRobinProxy([r.events_url.removesuffix("/slack/events") for r in replicas]).start()
        yield Cluster(replicas, proxy, api, database_url)
    finally:
        if proxy is not None:
            proxy.stop()
        for replica in replicas:
            replica.stop()
        api.stop()
        chroma.stop()
        close_databases()
        postgres_server.drop_database(database_url)


# --- the scenarios -------------------------------------------------------------------------------


def test_each_replica_is_ready_and_logs_its_name(cluster: Cluster) -> None:
    for i, replica in enumerate(cluster.replicas):
        base = replica.events_url.removesuffix("/slack/events")
        assert cluster.http.get(base + "/healthz").text == "ok"
        ready = cluster.http.get(base + "/readyz")
        assert ready.status_code == 200 and ready.json()["ready"] is True, ready.text
        assert ready.json()["checks"]["heartbeat"].startswith("ok: recorded "), ready.text  # its own heartbeat too
        assert f"[replica-{i}]: replica replica-{i} (" in replica.output(), replica.output()[-2000:]
        assert f"paperbot [replica-{i}]: listening on " in replica.output()


def test_200_events_and_20_redeliveries_to_other_replicas_are_answered_once(cluster: Cluster) -> None:
    events = [cluster.new_event(QUESTIONS[n % len(QUESTIONS)]) for n in range(200)]
    acknowledged_by: dict[str, int] = {}

    def first(item: tuple[bytes, str]) -> None:
        body, ts = item
        acknowledged_by[ts], _ = cluster.deliver(body)

    with ThreadPoolExecutor(20) as slack:
        list(slack.map(first, events))
        # Slack re-delivers 20 of them (its ack timed out, say), each to another replica
        again = events[::10]
        list(slack.map(lambda item: cluster.deliver(item[0], to=(acknowledged_by[item[1]] + 1) % REPLICAS, retry=1),
                       again))
    assert len(set(acknowledged_by.values())) == REPLICAS  # the balancer used them all
    threads = [ts for _, ts in events]
    cluster.wait_answered(threads, timeout=90)
    cluster.wait_settled()  # every claim done: a second answer would have been posted by now
    counts = {ts: len(cluster.answers(ts)) for ts in threads}
    assert sorted(set(counts.values())) == [1], {ts: n for ts, n in counts.items() if n != 1}
    leftovers = {ts: len(cluster.thread(ts)) for ts in threads if len(cluster.thread(ts)) != 1}
    assert leftovers == {}  # no second "Working on it", no queue notice left behind


def test_a_button_and_a_follow_up_work_on_another_replica(cluster: Cluster) -> None:
    body, ts = cluster.new_event("discrete dipole approximation")
    answered_by, _ = cluster.deliver(body, to=0)
    cluster.wait_answered([ts])
    answer = cluster.answers(ts)[0]
    vote = next(element["value"] for block in answer["blocks"] for element in block.get("elements", [])
                if element.get("action_id") == VOTE)
    assert answered_by == 0
    other = 1
    payload = {"type": "block_actions", "team": {"id": TEAM}, "user": {"id": "UVOTER01", "team_id": TEAM},
               "api_app_id": "A0CLUSTER", "channel": {"id": CHANNEL},
               "container": {"type": "message", "message_ts": answer["ts"], "channel_id": CHANNEL, "thread_ts": ts},
               "message": {"ts": answer["ts"], "thread_ts": ts}, "response_url": cluster.api.response_url("vote"),
               "actions": [{"action_id": VOTE, "block_id": "b1", "type": "button", "value": vote}]}
    click = cluster.post(urlencode({"payload": json.dumps(payload)}).encode(), "application/x-www-form-urlencoded",
                         to=other)
    assert click.status_code == 200 and click.headers["x-proxy-upstream"] == str(other)
    response = cluster.api.wait_calls("respond", where=lambda call: call.path.endswith("/vote"))[0]
    assert "vote" in response.text().lower() or "thank" in response.text().lower(), response.text()

    follow_up, _ = cluster.new_event("and how does it converge?", kind="message", thread_ts=ts, user="UASK000001")
    upstream, _ = cluster.deliver(follow_up, to=2)
    assert upstream == 2
    cluster.wait_answered([ts], per_thread=2)


ALERTS = {"CALERTS001": ("scholar", "Adrian Del Maestro"), "CALERTS002": ("topic", "graphene")}
NEW_PAPERS = ["doi:10.1103/physrevb.82.060515", "doi:10.1103/physrevlett.106.105303", "doi:10.1103/physrevlett.99.087402"]


def test_a_follow_alert_is_posted_once_by_the_replicas_polling_together(cluster: Cluster, tmp_path: Path) -> None:
    """Every replica polls the alerts' queue every ``ALERT_POLL`` s; one posts each alert. The first
    alert's post is held until the two other replicas have met its claim (their log says so), or
    one of them posted it too (what the test is there to catch)."""
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", database_url=cluster.database_url)
    store = FollowStore.for_settings(settings)
    for channel, (kind, query) in ALERTS.items():
        store.add(channel, kind, query)  # type: ignore[arg-type]  # the literal kinds above
    first_channel = next(iter(ALERTS))
    held = threading.Event()

    def hold_the_first_alert(call: Call) -> None:
        if call.method != "chat.postMessage" or call.params.get("channel") != first_channel or held.is_set():
            return
        held.set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            waited = sum("being posted by another replica" in replica.output() for replica in cluster.replicas)
            posted_again = any(c.params.get("channel") == first_channel for c in cluster.api.calls_to("chat.postMessage"))
            if waited >= REPLICAS - 1 or posted_again:
                return
            time.sleep(0.02)  # a poll of the replicas' logs, not a test delay

    cluster.api.on_record = hold_the_first_alert
    try:
        note_new_papers(settings, NEW_PAPERS)  # what a sync hands over
        cluster.api.wait_for(lambda: all(cluster.api.channel_messages(channel) for channel in ALERTS), what="alerts")
        deadline = time.monotonic() + 30
        while cluster.count("SELECT count(*) FROM follow_inbox") + cluster.count("SELECT count(*) FROM follow_claims"):
            assert time.monotonic() < deadline, "the alerts' queue was not emptied"
            time.sleep(0.05)  # a poll of the database, not a test delay
    finally:
        cluster.api.on_record = None
    assert held.is_set()
    # nothing is queued or claimed any more: no replica can post these again
    scholar, topic = (cluster.api.channel_messages(channel) for channel in ALERTS)
    assert len(scholar) == 1 and len(topic) == 1, (scholar, topic)
    assert "Helium-4 Luttinger liquids in nanopores" in json.dumps(scholar[0])
    assert "Magnetophonon Resonance in Graphene" in json.dumps(topic[0])
    posters = [i for i, replica in enumerate(cluster.replicas) for _ in
               range(replica.output().count("posted follow alert for"))]
    assert len(posters) == 2, posters
    close_databases()


def test_a_replica_killed_mid_burst_loses_no_event_and_answers_none_twice(cluster: Cluster) -> None:
    victim = 2
    events = [cluster.new_event(QUESTIONS[n % len(QUESTIONS)]) for n in range(60)]
    killed = threading.Event()
    start = len(cluster.proxy.exchanges)

    def kill_once_it_has_work() -> None:
        while not killed.is_set():
            ours = [e for e in cluster.proxy.exchanges[start:] if e.upstream == victim and e.status == 200]
            if len(ours) >= 8:
                process = cluster.replicas[victim].process
                assert process is not None
                process.send_signal(signal.SIGKILL)
                killed.set()
                return
            time.sleep(0.01)  # a poll of the proxy's record, not a test delay

    killer = threading.Thread(target=kill_once_it_has_work, daemon=True)
    killer.start()
    with ThreadPoolExecutor(20) as slack:
        retries = list(slack.map(lambda item: cluster.deliver(item[0])[1], events))
    killer.join(30)
    assert killed.is_set()
    exchanges = cluster.proxy.exchanges[start:]
    acknowledged_by_victim = sum(1 for e in exchanges if e.upstream == victim and e.status == 200)
    assert acknowledged_by_victim >= 8
    threads = [ts for _, ts in events]
    cluster.wait_answered(threads, timeout=90)
    cluster.wait_settled()  # every claim done: a second answer would have been posted by now
    counts = {ts: len(cluster.answers(ts)) for ts in threads}
    assert sorted(set(counts.values())) == [1], {ts: n for ts, n in counts.items() if n != 1}
    print(f"killed replica {victim} after it acknowledged {acknowledged_by_victim} events; "
          f"{sum(1 for r in retries if r)} events re-delivered after no 200")
    survivors = "".join(cluster.replicas[i].output() for i in range(REPLICAS) if i != victim)
    assert "left unanswered by stopped replica replica-2" in survivors or "took over" in survivors
