"""Event claims between replicas (``bot/slack/deliveries.py``, ``SlackStore`` claims, the
``ReplicaLoop`` sweep), with injected clocks, on SQLite and on a real PostgreSQL (``database_url``).

Each "replica" is a ``Database`` object of its own on one database, as separate processes have.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.slack.deliveries import MISSED_BEATS, Deliveries, Delivery
from bot.slack.replica import ReplicaLoop
from bot.slack.store import SlackStore
from retrieval.config import Settings
from retrieval.storage import database as storage
from retrieval.storage.database import Database, open_database
from retrieval.storage.members import ClusterMembers, Member

BEAT = 5.0
T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def databases(tmp_path: Path, database_url: str | None) -> Iterator[list[Database]]:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", database_url=database_url)
    open_database(settings)  # upgraded once
    made = [Database(storage.database_url(settings), data_dir=settings.data_dir) for _ in range(3)]
    yield made
    for database in made:
        database.dispose()


def _replica(database: Database, name: str, clock: Clock) -> Deliveries:
    return Deliveries(SlackStore(database), name, heartbeat_seconds=BEAT, clock=clock)


def _member(name: str) -> Member:
    return Member(id=name, role="slack", host="h", pid=1, started_at="2027-01-01T00:00:00.000+00:00", last_seen=T0)


def _event(event_id: str = "Ev1", text: str = "what is graphene?") -> dict[str, Any]:
    return {"type": "event_callback", "event_id": event_id,
            "event": {"type": "app_mention", "text": text, "channel": "C1", "ts": "1.1", "user": "U1"}}


def test_one_claim_per_event_and_repeats_dropped_while_its_owner_lives(databases: list[Database]) -> None:
    clock = Clock()
    a, b = _replica(databases[0], "a", clock), _replica(databases[1], "b", clock)
    members = ClusterMembers(databases[0])
    members.join(_member("a"))
    delivery = a.begin(_event())
    assert isinstance(delivery, Delivery) and a.active(_event()) is delivery
    assert a.begin(_event()) is None  # the same replica again
    clock.now += BEAT * MISSED_BEATS * 10
    members.beat(_member("a"), now=clock.now)  # a is alive, however old its claim
    assert b.begin(_event()) is None
    delivery.release()  # the dispatch's hold, the last: settled
    assert a.active(_event()) is None
    clock.now += BEAT * MISSED_BEATS * 10  # a stopped; its event was answered
    assert b.begin(_event()) is None


def test_a_redelivery_takes_over_the_claim_of_a_stopped_replica(databases: list[Database]) -> None:
    clock = Clock()
    a, b = _replica(databases[0], "a", clock), _replica(databases[1], "b", clock)
    ClusterMembers(databases[0]).join(_member("a"))
    held = a.begin(_event())
    assert held is not None
    held.remember_reply("1700000000.000007")
    clock.now += BEAT * MISSED_BEATS - 1
    assert b.begin(_event()) is None  # a is not late enough yet
    clock.now += 2
    taken = b.begin(_event())
    assert taken is not None and taken.reply_ts == "1700000000.000007"  # answered into a's message
    assert not held.still_ours() and taken.still_ours()
    assert SlackStore(databases[2]).claim_owner("event:Ev1") == "b"


def test_the_sweep_answers_a_stopped_replicas_open_events_exactly_once(databases: list[Database]) -> None:
    clock = Clock()
    a = _replica(databases[0], "a", clock)
    ClusterMembers(databases[0]).join(_member("a"))
    for n in range(3):
        assert a.begin(_event(f"Ev{n}", f"question {n}")) is not None  # never released: a was killed
    done = a.begin(_event("EvDone"))
    assert done is not None
    done.release()
    clock.now += BEAT * MISSED_BEATS + 1
    dispatched: list[tuple[str, dict[str, Any]]] = []
    lock = threading.Lock()

    def sweeper(index: int) -> ReplicaLoop:
        name = f"s{index}"

        def redispatch(body: dict[str, Any], delivery: Delivery) -> None:
            with lock:
                dispatched.append((name, body))
            delivery.release()

        return ReplicaLoop(ClusterMembers(databases[index]), _member(name), _replica(databases[index], name, clock),
                           redispatch, every=BEAT, clock=clock)

    loops = [sweeper(1), sweeper(2)]
    barrier = threading.Barrier(2)
    taken: list[int] = []

    def tick(loop: ReplicaLoop) -> None:
        barrier.wait(10)
        count = loop.tick()
        with lock:
            taken.append(count)

    threads = [threading.Thread(target=tick, args=(loop,)) for loop in loops]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(taken) in ([0, 3], [1, 2])  # between them, each event taken over once
    # the dispatches run on each loop's pool; ``stop`` drops those not started yet (a replica
    # stopping leaves them to the next one), so wait for them before stopping
    deadline = time.monotonic() + 30
    while len(dispatched) < sum(taken) and time.monotonic() < deadline:
        time.sleep(0.01)
    for loop in loops:
        loop.stop()
    assert sorted(body["event_id"] for _, body in dispatched) == ["Ev0", "Ev1", "Ev2"]
    assert dispatched[0][1]["event"]["text"].startswith("question")
    assert all(loop.tick() == 0 for loop in loops)  # settled: nothing left to sweep


def test_a_message_is_answered_by_one_event_and_again_by_its_taker(databases: list[Database]) -> None:
    clock = Clock()
    a, b = _replica(databases[0], "a", clock), _replica(databases[1], "b", clock)
    mention, message = a.begin(_event("EvMention")), a.begin(_event("EvMessage"))
    assert mention is not None and message is not None
    assert a.first_message("message:C1:1.1", mention) is True
    assert a.first_message("message:C1:1.1", message) is False  # the same message as another event
    clock.now += BEAT * MISSED_BEATS + 1  # a stopped (it never joined)
    resumed = b.resume("event:EvMention", from_replica="a")
    assert resumed is not None and resumed[1]["event_id"] == "EvMention"
    assert b.first_message("message:C1:1.1", resumed[0]) is True  # the taker answers it
    assert b.resume("event:EvMention", from_replica="a") is None  # taken already
    assert a.first_message("message:C1:1.1", None) is None  # unclaimed: the caller's deduper decides


def test_a_job_of_a_replica_thought_stopped_leaves_the_event_to_its_taker(databases: list[Database]) -> None:
    clock = Clock()
    a, b = _replica(databases[0], "a", clock), _replica(databases[1], "b", clock)
    slow = a.begin(_event())
    assert slow is not None
    clock.now += BEAT * MISSED_BEATS + 1
    assert b.begin(_event()) is not None
    assert not slow.still_ours()
    slow.release()  # a's late settle does not mark b's answer done
    rows = SlackStore(databases[2]).open_claims(now=clock.now + BEAT * MISSED_BEATS + 1,
                                                dead_after=BEAT * MISSED_BEATS)
    assert [(row.key, row.replica) for row in rows] == [("event:Ev1", "b")]


def test_payloads_are_stored_as_sent(databases: list[Database]) -> None:
    clock = Clock()
    body = _event(text="naïve question — with <unicode> & \"quotes\"")
    assert _replica(databases[0], "a", clock).begin(body) is not None
    clock.now += BEAT * MISSED_BEATS + 1
    taken = SlackStore(databases[1]).take_over("event:Ev1", from_replica="a", replica="b", now=clock.now)
    assert taken is not None and json.loads(taken.payload) == body



def test_a_replica_restarted_under_its_id_answers_what_its_previous_process_left(databases: list[Database]) -> None:
    clock = Clock()
    before = _replica(databases[0], "a", clock)
    ClusterMembers(databases[0]).join(_member("a"))
    assert before.begin(_event()) is not None  # killed before answering
    clock.now += 1
    after = _replica(databases[1], "a", clock)  # the same PAPERBOT_REPLICA_ID, a new process
    dispatched: list[dict[str, Any]] = []

    def redispatch(body: dict[str, Any], delivery: Delivery) -> None:
        dispatched.append(body)
        delivery.release()

    loop = ReplicaLoop(ClusterMembers(databases[1]), _member("a"), after, redispatch, every=BEAT, clock=clock)
    assert loop.tick() == 0  # too recent: a process of another replica could still be answering it
    clock.now += BEAT * MISSED_BEATS
    assert loop.tick() == 1
    loop.stop()
    assert [body["event_id"] for body in dispatched] == ["Ev1"]
    assert after.begin(_event()) is None  # answered now: a re-delivery is a repeat


def test_a_redelivery_to_a_restarted_replica_takes_its_old_claim_over(databases: list[Database]) -> None:
    clock = Clock()
    assert _replica(databases[0], "a", clock).begin(_event()) is not None
    clock.now += 1
    restarted = _replica(databases[1], "a", clock)
    assert restarted.begin(_event()) is not None  # its previous process's claim
    assert restarted.begin(_event()) is None  # and now its own


def test_a_replica_whose_answers_hang_stops_beating_and_its_events_are_taken_over(databases: list[Database]) -> None:
    """Answer threads stuck with events open: the replica withholds its heartbeat after
    ``stall_after`` without a finished event, the others take its events over by the stop rule, and
    it beats again once an answer finishes. A busy replica that finishes events keeps beating."""
    clock = Clock()
    stall = 10 * BEAT
    hung = _replica(databases[0], "a", clock)
    members = ClusterMembers(databases[0])
    # its own beats come from ``tick`` (the background one, every 300 s, never comes during the test)
    loop = ReplicaLoop(members, _member("a"), hung, lambda body, delivery: None, every=300, clock=clock,
                       stall_after=stall)
    loop.start()
    assert hung.without_progress() == (0, 0.0)
    busy = [hung.begin(_event(f"Ev{n}", f"question {n}")) for n in range(3)]
    assert all(isinstance(d, Delivery) for d in busy)
    busy_deliveries = [d for d in busy if d is not None]
    for delivery in busy_deliveries[:2]:  # a long queue that drains: one finished every 8 beats
        clock.now += 8 * BEAT
        assert loop.tick() == 0 and loop.hung() is None
        delivery.release()
    assert hung.without_progress() == (1, 0.0)

    clock.now += stall  # the last answer has not finished: not yet more than stall_after
    assert loop.tick() == 0 and loop.hung() is None
    assert [m.last_seen for m in members.seen() if m.id == "a"] == [clock.now]
    clock.now += 1
    assert loop.tick() == 0
    reason = loop.hung()
    assert reason is not None and reason.startswith("1 event(s) open here and none finished for 51 s (more than 50 s)")
    line = loop.heartbeat_check()
    assert line is not None and line.startswith("answers hung: 1 event(s) open here")
    withheld = clock.now - 1  # the last beat recorded
    clock.now += BEAT
    loop.tick()
    assert [m.last_seen for m in members.seen() if m.id == "a"] == [withheld]  # no heartbeat while hung

    clock.now += BEAT * MISSED_BEATS  # silent for the stop rule: another replica takes the event over
    taker = _replica(databases[1], "b", clock)
    taken: list[str] = []

    def answer(body: dict[str, Any], delivery: Delivery) -> None:
        taken.append(body["event_id"])
        delivery.release()

    other = ReplicaLoop(ClusterMembers(databases[1]), _member("b"), taker, answer, every=BEAT, clock=clock,
                        stall_after=stall)
    assert other.tick() == 1
    other.stop()
    assert taken == ["Ev2"]

    busy_deliveries[2].release()  # the hung thread returns at last (its late settle changes nothing)
    assert hung.without_progress() == (0, 0.0) and loop.hung() is None
    loop.tick()
    assert [m.last_seen for m in members.seen() if m.id == "a"] == [clock.now]  # beating again
    line = loop.heartbeat_check()
    assert line is not None and line.startswith("ok: recorded 0 s ago")
    loop.stop()
