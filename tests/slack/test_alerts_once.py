"""Follow alerts posted once per deployment, however many replicas poll the queue (issue #32).

Real parts: replicas are ``FollowAlerts`` over real ``Assistant`` facades sharing one database
(SQLite in one data dir, or the tests' PostgreSQL server), posting to the Slack stand-in; the
records are stored with the real record store. A replica that dies is a real process, killed
(SIGKILL) while its post waits on a socket nobody answers. Time is a clock given to each replica:
nothing waits for a lease to run out.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from slack_sdk import WebClient
from sqlalchemy import func, select

from bot.slack.alerts import FollowAlerts, alert_messages, messages_carrying
from retrieval.alerts.claims import LEASE_SECONDS
from retrieval.assistant import Assistant
from retrieval.config import Settings
from retrieval.records.paper import Author, Paper
from retrieval.results import FollowAlert
from retrieval.storage.records import RecordStore
from retrieval.storage.schema import follow_claims
from tests.slack.conftest import BOT_TOKEN
from tests.slack.stand_in import Call, SlackStandIn

ROOT = Path(__file__).resolve().parents[2]

ADA, GRACE = Author(name="Ada Lovelace"), Author(name="Grace Hopper")
PAPERS = [
    Paper(title="Notes on the analytical engine", authors=[ADA], published="2026"),
    Paper(title="Graphene sheets under strain", authors=[GRACE], published="2026"),
    Paper(title="Graphene for the analytical engine", authors=[ADA, GRACE], published="2026"),
    Paper(title="A survey of sorting networks", authors=[Author(name="Donald Knuth")], published="2026"),
]
# channel -> follow text; CNOTMEMBER1 is a channel the stand-in refuses for good (not_in_channel)
FOLLOWS = {"CADA00001": "scholar Ada Lovelace", "CGRAPHENE": "topic graphene", "CGRACE001": "scholar Grace Hopper",
           "CNOTMEMBER1": "topic graphene"}
# what each channel must show, once each: (channel, title)
EXPECTED = Counter({("CADA00001", PAPERS[0].title): 1, ("CADA00001", PAPERS[2].title): 1,
                    ("CGRAPHENE", PAPERS[1].title): 1, ("CGRAPHENE", PAPERS[2].title): 1,
                    ("CGRACE001", PAPERS[1].title): 1, ("CGRACE001", PAPERS[2].title): 1})


class Deployment:
    """Replicas of one installation: each its own ``Assistant`` on the shared database."""

    def __init__(self, root: Path, database_url: str | None, api: SlackStandIn) -> None:
        self.root, self.database_url, self.api = root, database_url, api
        self.assistants: list[Assistant] = []
        first = self.settings("replica-0")
        with RecordStore.open(first) as store:
            store.put_many(PAPERS)
        self.admin = self.assistant(first)
        for channel, text in FOLLOWS.items():
            self.admin.follows.follow(channel, text)

    def settings(self, name: str) -> Settings:
        """SQLite: every replica on the one data dir (its database); PostgreSQL: a data dir each."""
        data_dir = self.root / ("data" if self.database_url is None else name)
        return Settings(_env_file=None, data_dir=data_dir, database_url=self.database_url, openai_api_key=None)

    def assistant(self, settings: Settings) -> Assistant:
        self.assistants.append(Assistant(settings, chat_model=None))
        return self.assistants[-1]

    def replica(self, name: str, *, clock: float | None = None, token: str = BOT_TOKEN) -> FollowAlerts:
        client = WebClient(token=token, base_url=self.api.api_url + "/")
        return FollowAlerts(self.assistant(self.settings(name)), client, replica=name,
                            clock=(lambda: clock) if clock is not None else time.time)

    def note_new(self) -> None:
        self.admin.follows.note_new_papers([paper.id for paper in PAPERS])  # what a sync hands over

    def queued(self) -> list[str]:
        return self.admin.follows.store.queued_new_papers()

    def close(self) -> None:
        for assistant in self.assistants:
            assistant.close()


def posted(api: SlackStandIn) -> Counter[tuple[str, str]]:
    """(channel, title) of every paper in every alert message the stand-in accepted (a refused or
    failed post leaves no message)."""
    seen: Counter[tuple[str, str]] = Counter()
    for channel in FOLLOWS:
        for message in api.channel_messages(channel):
            text = json.dumps(message, ensure_ascii=False)
            seen.update((channel, paper.title) for paper in PAPERS if paper.title in text)
    return seen


@pytest.fixture
def deployment(tmp_path: Path, database_url: str | None, stand_in: SlackStandIn) -> Iterator[Deployment]:
    made = Deployment(tmp_path, database_url, stand_in)
    yield made
    made.close()


def test_three_replicas_passing_together_post_each_announcement_once(deployment: Deployment) -> None:
    replicas = [deployment.replica(f"replica-{n}") for n in range(3)]
    deployment.note_new()
    start = threading.Barrier(len(replicas))
    counts: list[int] = []
    errors: list[BaseException] = []

    def run(replica: FollowAlerts) -> None:
        start.wait(20)
        try:
            counts.append(replica.post_pending())
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(replica,)) for replica in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and len(counts) == 3
    assert posted(deployment.api) == EXPECTED
    assert sum(counts) == sum(EXPECTED.values())
    # a pass that met another's claim kept the queue; the next passes find it all settled
    assert [r.post_pending() for r in replicas] == [0, 0, 0]
    assert deployment.queued() == []


def test_replicas_leave_an_alert_being_posted_to_its_replica(deployment: Deployment) -> None:
    """Replica 0 is held inside its first post; replicas 1 and 2 pass meanwhile: they post the
    other alerts, not that one, and keep the queue for it; replica 0 then finishes it."""
    first, second, third = (deployment.replica(f"replica-{n}") for n in range(3))
    deployment.note_new()
    inside, go = threading.Event(), threading.Event()

    def hold_the_first_post(call: Call) -> None:
        if call.method == "chat.postMessage" and not inside.is_set():
            inside.set()
            go.wait(30)

    deployment.api.on_record = hold_the_first_post
    counts: list[int] = []
    held = threading.Thread(target=lambda: counts.append(first.post_pending()))
    held.start()
    assert inside.wait(20)
    others = second.post_pending() + third.post_pending()
    assert others > 0 and deployment.queued() != []  # the held alert keeps its papers queued
    go.set()
    held.join(30)
    assert posted(deployment.api) == EXPECTED
    assert counts[0] + others == sum(EXPECTED.values())
    assert deployment.queued() == []


def _silent_server() -> socket.socket:
    """A listening socket that accepts and never answers: a Slack post to it waits for good."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(60)
    return server


DOOMED = """
import sys
from slack_sdk import WebClient
from bot.slack.alerts import FollowAlerts, alert_messages
from retrieval.assistant import Assistant
from retrieval.config import Settings

data_dir, database_url, api_url = sys.argv[1:4]
settings = Settings(_env_file=None, data_dir=data_dir, database_url=database_url or None, openai_api_key=None)
client = WebClient(token="xoxb-doomed", base_url=api_url, timeout=600)
FollowAlerts(Assistant(settings, chat_model=None), client, replica="doomed").post_pending()
"""


def test_an_alert_claimed_by_a_replica_that_died_is_posted_by_another_after_the_lease(
        deployment: Deployment, caplog: pytest.LogCaptureFixture) -> None:
    deployment.note_new()
    silent = _silent_server()
    host, port = silent.getsockname()[:2]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    doomed = subprocess.Popen([sys.executable, "-c", DOOMED, str(deployment.settings("doomed").data_dir),
                               deployment.database_url or "", f"http://{host}:{port}/api/"], env=env, cwd=ROOT)
    try:
        connection, _ = silent.accept()  # its first alert is claimed and being posted
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(30)
        connection.close()
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait(30)
        silent.close()

    now = time.time()
    assert deployment.replica("replica-1", clock=now + 1).post_pending() > 0  # the others, not the claimed one
    first = posted(deployment.api)
    missing = EXPECTED - first
    assert len(missing) in (1, 2) and not first - EXPECTED  # one alert (one or two papers) left to its claimer
    assert deployment.queued() != []

    with caplog.at_level(logging.INFO, logger="retrieval.alerts.claims"):
        taker = deployment.replica("replica-2", clock=now + LEASE_SECONDS + 5)
        assert taker.post_pending() == sum(missing.values())
    assert posted(deployment.api) == EXPECTED
    assert "left unposted by replica(s) doomed" in caplog.text
    assert deployment.queued() == []


def test_a_transient_failure_is_retried_once_by_the_next_pass(deployment: Deployment) -> None:
    first, second = deployment.replica("replica-0"), deployment.replica("replica-1")
    deployment.note_new()
    deployment.api.fail_next("chat.postMessage", status=200, error="fatal_error")  # not retried by the SDK, not permanent
    done_first = first.post_pending()
    assert 0 < done_first < sum(EXPECTED.values())
    assert deployment.queued() != []  # kept for the retry
    assert second.post_pending() == sum(EXPECTED.values()) - done_first  # the claim was given up: any replica retries
    assert posted(deployment.api) == EXPECTED
    assert deployment.queued() == []
    assert first.post_pending() == second.post_pending() == 0
    refused = [c for c in deployment.api.calls_to("chat.postMessage") if c.params["channel"] == "CNOTMEMBER1"]
    assert len(refused) == 1  # dropped for good, not retried


def test_a_long_alert_failing_part_way_posts_each_of_its_messages_once(deployment: Deployment) -> None:
    """An alert too long for one message goes out as several; the second fails (transiently), and
    the next pass of another replica posts the rest, not the first message again."""
    assert deployment.admin.follows.unfollow("CNOTMEMBER1", "topic graphene") is not None  # one graphene channel
    many = [Paper(title=f"Graphene membranes for desalination, study {n}: strain, defects and ion transport "
                        f"through sub-nanometre pores in wet and dry conditions", authors=[Author(name=f"Author {n}")],
                  published="2026") for n in range(150)]
    with RecordStore.open(deployment.settings("replica-0")) as store:
        store.put_many(many)
    graphene = next(f for f in deployment.admin.follows.list("CGRAPHENE"))
    messages = alert_messages(FollowAlert(follow=graphene, papers=many))
    assert len(messages) >= 3 and [p for part, _ in messages for p in part.papers] == many  # in order, each once
    first, second = deployment.replica("replica-0"), deployment.replica("replica-1")
    deployment.admin.follows.note_new_papers([paper.id for paper in many])
    deployment.api.fail_next("chat.postMessage", status=200, error="fatal_error", after=1)
    first_message = len(messages[0][0].papers)
    assert first.post_pending() == first_message
    assert second.post_pending() == len(many) - first_message
    alerts = deployment.api.channel_messages("CGRAPHENE")
    assert len(alerts) == len(messages)  # the rest went out as the alert's own later messages
    titles = Counter(paper.title for message in alerts for paper in many
                     if paper.title in json.dumps(message, ensure_ascii=False))
    assert titles == Counter(paper.title for paper in many)  # every paper once, none twice
    total = len(messages)
    assert f"Continued in the next message (1/{total})" in json.dumps(alerts[0])
    for number, message in enumerate(alerts[1:], start=2):  # numbered on from the message in the channel
        assert f"(continued, {number}/{total})" in json.dumps(message)
    assert deployment.queued() == [] and first.post_pending() == second.post_pending() == 0


def test_the_rest_of_an_alert_is_numbered_as_its_later_messages_unless_the_papers_changed(
        deployment: Deployment) -> None:
    [graphene] = deployment.admin.follows.list("CGRAPHENE")
    many = [Paper(title=f"Graphene study {n}: " + "strain and ion transport through sub-nanometre pores " * 3,
                  authors=[Author(name=f"Author {n}")], published="2026") for n in range(120)]
    alert = FollowAlert(follow=graphene, papers=many)
    whole = alert_messages(alert)
    assert len(whole) >= 3
    assert messages_carrying(alert, {p.id for p in many}) == whole
    sent = len(whole[0][0].papers)  # the first message was posted, then the pass failed
    rest = FollowAlert(follow=graphene, papers=many[sent:], posted_before=many[:sent])
    assert messages_carrying(rest, {p.id for p in many[sent:]}) == whole[1:]
    assert f"(continued, 2/{len(whole)})" in json.dumps(whole[1][1])
    # another replica holds the rest's first paper: the others are numbered afresh
    held = messages_carrying(rest, {p.id for p in many[sent + 1:]})
    assert [p for part, _ in held for p in part.papers] == many[sent + 1:]
    assert "(continued" not in json.dumps(held[0][1])
    # the queue changed (a paper posted earlier is not part of this alert's first message)
    changed = FollowAlert(follow=graphene, papers=many[sent:], posted_before=many[:1])
    renumbered = messages_carrying(changed, {p.id for p in many[sent:]})
    assert [p for part, _ in renumbered for p in part.papers] == many[sent:]
    assert "(continued" not in json.dumps(renumbered[0][1])


def test_claims_hold_expire_and_give_way_to_the_record(deployment: Deployment) -> None:
    follows = deployment.admin.follows
    claims = follows.claims
    [ada] = follows.list("CADA00001")
    ids = [PAPERS[0].id, PAPERS[2].id]
    t0 = 1_800_000_000.0
    assert claims.claim(ada.id, ids, replica="a", now=t0).paper_ids == ids
    again = claims.claim(ada.id, [*ids, PAPERS[1].id], replica="b", now=t0 + 1)
    assert (again.paper_ids, again.held) == ([PAPERS[1].id], ids)
    assert claims.claim(ada.id, ids, replica="a", now=t0 + 2).paper_ids == ids  # its own: a restarted "a"
    taken = claims.claim(ada.id, ids, replica="b", now=t0 + 2 + LEASE_SECONDS)
    assert (taken.paper_ids, taken.held) == (ids, [])
    claims.announced(ada.id, ids[:1], replica="a")  # "a" lost the claim: its late record still counts as posted
    claims.release(ada.id, [PAPERS[1].id], replica="b")
    after = claims.claim(ada.id, [*ids, PAPERS[1].id], replica="c", now=t0 + 3 + LEASE_SECONDS)
    assert (after.paper_ids, after.held) == ([PAPERS[1].id], [ids[1]])
    [grace] = follows.list("CGRACE001")
    claims.claim(grace.id, [PAPERS[3].id], replica="gone", now=t0)  # a paper no pass will queue again
    follows.unfollow("CADA00001", str(ada.id))  # its claims go with it
    assert claims.claim(ada.id, ids, replica="c", now=t0 + 9 * LEASE_SECONDS).paper_ids == []
    with claims.database.reading() as db:
        assert db.execute(select(func.count()).select_from(follow_claims)).scalar_one() == 0  # "gone"'s, expired, cleared
