"""The work queue: positions, per-user serialisation and limits, no dropped jobs."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator

import pytest

from bot.slack.queue import QueueFullError, WorkQueue


class Gate:
    """A job that blocks until released and records when it ran."""

    def __init__(self, log: list[str], name: str) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.log, self.name = log, name

    def __call__(self) -> None:
        self.started.set()
        self.log.append(self.name)
        assert self.release.wait(10)


@pytest.fixture
def queue() -> Iterator[WorkQueue]:
    work = WorkQueue(workers=2, per_user_limit=3)
    yield work
    work.close()


def test_positions_and_global_order(queue: WorkQueue) -> None:
    log: list[str] = []
    a, b, c, d = (Gate(log, name) for name in "abcd")
    assert queue.submit("U1", a) == 0
    assert queue.submit("U2", b) == 0
    assert queue.submit("U3", c) == 1  # both workers busy
    assert queue.submit("U4", d) == 2
    assert a.started.wait(5) and b.started.wait(5)
    a.release.set()
    assert c.started.wait(5)
    b.release.set()
    assert d.started.wait(5)
    c.release.set()
    d.release.set()
    assert sorted(log[:2]) == ["a", "b"] and log[2:] == ["c", "d"]


def test_one_user_runs_one_job_at_a_time_and_others_pass(queue: WorkQueue) -> None:
    log: list[str] = []
    first, second, other = Gate(log, "u1-first"), Gate(log, "u1-second"), Gate(log, "u2")
    assert queue.submit("U1", first) == 0
    assert queue.submit("U1", second) == 1  # a worker is idle, but U1 already runs something
    assert queue.submit("U2", other) == 0  # the idle worker serves the next person
    assert other.started.wait(5)
    assert not second.started.is_set()
    first.release.set()
    assert second.started.wait(5)
    second.release.set()
    other.release.set()


def test_per_user_limit_refuses_politely(queue: WorkQueue) -> None:
    gates = [Gate([], str(i)) for i in range(3)]
    for gate in gates:
        queue.submit("U1", gate)
    with pytest.raises(QueueFullError) as raised:
        queue.submit("U1", Gate([], "x"))
    assert "3 request(s) in line" in raised.value.user_message
    other = Gate([], "y")
    assert queue.submit("U2", other) == 0  # other people are unaffected
    for gate in [*gates, other]:
        gate.release.set()


def test_a_failing_job_does_not_kill_the_worker() -> None:
    work = WorkQueue(workers=1, per_user_limit=5)
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("boom")

    try:
        work.submit("U1", boom)
        work.submit("U1", done.set)
        assert done.wait(5)
    finally:
        work.close()


def test_burst_is_fully_processed() -> None:
    work = WorkQueue(workers=3, per_user_limit=50)
    finished: list[int] = []
    lock = threading.Lock()
    all_done = threading.Event()

    def job(i: int) -> None:
        with lock:
            finished.append(i)
            if len(finished) == 60:
                all_done.set()

    try:
        for i in range(60):
            work.submit(f"U{i % 6}", functools.partial(job, i))
        assert all_done.wait(10)
        assert sorted(finished) == list(range(60))
    finally:
        work.close()


def _one_worker_order(submissions: list[tuple[str, str]]) -> tuple[list[int], list[str]]:
    """Submit ``(user, name)`` jobs to a one-worker queue while its first job holds the worker,
    then let them finish one at a time. Returns the positions reported and the order they ran."""
    work = WorkQueue(workers=1, per_user_limit=10)
    log: list[str] = []
    gates = {name: Gate(log, name) for _, name in submissions}
    try:
        positions = [work.submit(user, gates[name]) for user, name in submissions]
        for ran in range(1, len(submissions) + 1):
            assert _wait_for(lambda: len(log) >= ran), f"only {log} started"  # noqa: B023
            assert len(log) == ran  # one worker: nothing else started meanwhile
            gates[log[-1]].release.set()
        return positions, log
    finally:
        for gate in gates.values():
            gate.release.set()
        work.close()


def _wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = threading.Event()
    timer = threading.Timer(timeout, deadline.set)
    timer.start()
    try:
        while not condition():
            if deadline.wait(0.005):
                return False
        return True
    finally:
        timer.cancel()


def test_one_worker_serves_people_in_turns_not_in_order_of_arrival() -> None:
    """User A's four questions do not all go before user B's one (issue #30 item 10)."""
    positions, order = _one_worker_order([("UA", "a1"), ("UA", "a2"), ("UA", "a3"), ("UA", "a4"), ("UB", "b1")])
    assert order == ["a1", "b1", "a2", "a3", "a4"]
    assert positions == [0, 1, 2, 3, 1]  # b1 goes next: a2-a4 move back one place


def test_turns_rotate_between_three_people() -> None:
    positions, order = _one_worker_order([("UA", "a1"), ("UA", "a2"), ("UA", "a3"), ("UB", "b1"), ("UB", "b2"),
                                          ("UC", "c1")])
    assert order == ["a1", "b1", "c1", "a2", "b2", "a3"]
    assert positions == [0, 1, 2, 1, 3, 2]  # each the place in the order at the moment of submitting
