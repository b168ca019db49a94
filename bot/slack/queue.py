"""A work queue for slow requests: a global pool of workers, taken in turns by the people waiting.

Bolt acknowledges a request within milliseconds and hands the slow part (retrieval, the LLM,
plots) to this queue, so a burst of questions is never dropped and never blocks the ack:

* ``workers`` jobs run at once (``PAPERBOT_SLACK_WORKERS``);
* one person runs at most one job at a time; their next questions wait in line, so a single
  user cannot take every worker;
* people take turns, whatever the number of workers, so someone asking once does not wait for
  everything another person queued before them (start-time fair queueing: a job's turn is one
  after its owner's previous job, and never earlier than the turn being served when it
  arrived; a free worker takes the earliest turn of people with nothing running, equal turns
  in order of arrival);
* one person may have at most ``per_user_limit`` jobs waiting or running
  (``PAPERBOT_SLACK_USER_QUEUE_LIMIT``); beyond that the request is refused politely;
* :meth:`WorkQueue.submit` returns the position in line (0 = started at once), which the
  Slack layer shows as "you're in position N".

Jobs are assigned to workers under the lock. The position is the job's place in the order at
submit time: a later first question of someone else may still take a turn before it.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

from retrieval.errors import InputError

log = logging.getLogger(__name__)


class QueueFullError(InputError):
    """The person already has as many requests in line as allowed."""


@dataclass(eq=False)  # identity: the same callable may be queued twice
class _Job:
    user: str
    run: Callable[[], None]
    turn: int  # its owner's turn: jobs go in order of (turn, arrival)
    arrival: int

    @property
    def order(self) -> tuple[int, int]:
        return self.turn, self.arrival


class WorkQueue:
    """Global pool of ``workers`` threads; people take turns, and one person's jobs run one after the other."""

    def __init__(self, workers: int, per_user_limit: int, *, name: str = "paperbot-worker") -> None:
        if workers < 1 or per_user_limit < 1:
            raise ValueError("workers and per_user_limit must be at least 1")
        self._per_user_limit = per_user_limit
        self._lock = threading.Condition()
        self._waiting: list[_Job] = []
        self._ready: deque[_Job] = deque()
        self._running: Counter[str] = Counter()
        self._next_turn: dict[str, int] = {}  # per person: the turn after their last job
        self._serving = 0  # the turn of the last job started (never decreases)
        self._arrivals = itertools.count()
        self._idle = workers
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, user: str, job: Callable[[], None]) -> int:
        """Queue ``job`` for ``user``; return 0 if it starts now, else its position in line (1 = next)."""
        with self._lock:
            if self._closed:
                raise InputError("paperbot is shutting down.", hint="Ask again in a minute.")
            queued = sum(1 for item in self._waiting if item.user == user) + self._running[user]
            if queued >= self._per_user_limit:
                raise QueueFullError(
                    f"You already have {queued} request(s) in line.",
                    hint="I'll get to them in order; ask again once one is answered.",
                )
            turn = max(self._serving, self._next_turn.get(user, 0))
            self._next_turn[user] = turn + 1
            entry = _Job(user=user, run=job, turn=turn, arrival=next(self._arrivals))
            self._waiting.append(entry)
            self._dispatch()
            if entry not in self._waiting:
                return 0
            return 1 + sum(1 for item in self._waiting if item.order < entry.order)

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called (the process is stopping): long work should let go."""
        return self._closed

    def waiting(self) -> int:
        """Jobs not yet started."""
        with self._lock:
            return len(self._waiting)

    def busy(self) -> int:
        """Jobs started and not finished."""
        with self._lock:
            return sum(self._running.values())

    def close(self, timeout: float | None = 5.0) -> None:
        """Stop taking jobs, drop those still waiting, and wait for running ones to finish."""
        with self._lock:
            self._closed = True
            dropped = len(self._waiting)
            self._waiting.clear()
            self._lock.notify_all()
        if dropped:
            log.warning("work queue closed with %d request(s) still waiting", dropped)
        for thread in self._threads:
            thread.join(timeout)

    # --- internals: always called with the lock held ---------------------------------------

    def _dispatch(self) -> None:
        """Hand waiting jobs to idle workers, earliest (turn, arrival) first among people with nothing running."""
        while self._idle > 0:
            eligible = [item for item in self._waiting if self._running[item.user] == 0]
            if not eligible:
                return
            entry = min(eligible, key=lambda item: item.order)
            self._waiting.remove(entry)
            self._running[entry.user] += 1
            self._serving = max(self._serving, entry.turn)
            self._forget_finished_turns()
            self._idle -= 1
            self._ready.append(entry)
            self._lock.notify()

    def _forget_finished_turns(self) -> None:
        """Drop the turns of people whose next turn is not ahead of the one being served (they
        would start from it anyway), so the map holds only people with a turn still to come."""
        for user in [user for user, turn in self._next_turn.items() if turn <= self._serving]:
            del self._next_turn[user]

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._ready and not self._closed:
                    self._lock.wait()
                if not self._ready:
                    return
                entry = self._ready.popleft()
            try:
                entry.run()
            except BaseException:  # a job must never kill its worker
                log.exception("queued job failed")
            finally:
                with self._lock:
                    self._running[entry.user] -= 1
                    if self._running[entry.user] <= 0:
                        del self._running[entry.user]
                    self._idle += 1
                    self._dispatch()
                    if not self._waiting and not self._running:
                        self._next_turn.clear()  # idle: whoever asks next starts at once anyway
