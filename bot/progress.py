"""Progress off a terminal: plain lines on a schedule, for a log (cron, nohup, CI, a container).

A rich bar redraws itself in place, which a file or a pipe cannot show, so off a terminal it
prints nothing until the end. ``line_progress`` writes lines instead::

    Indexing: 1,200 / 36,855 records (3 %), 9.1 records/s, about 1h 05m left

at most one per ``interval`` seconds, and at least one per interval while the work runs: the work
may report rarely (once per batch, and not at all while the encoder is prepared), so a heartbeat
thread writes the last known state when a line is due and no report came. A last line says how
it ended (``done in`` or ``stopped after``).

``LineProgress`` decides and formats, on an injected clock (no thread, no sleeping: its tests need
no timing); ``heartbeat`` is the thread; ``line_progress`` puts the two together.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

Update = Callable[[int, int | None], None]  # ``update(done, total)``; total None: not known

RATE_WINDOW = 60.0  # seconds the rate is measured over (the latest pace, not the mean since the start)


def format_duration(seconds: float) -> str:
    """``45s``, ``4m 10s``, ``1h 05m`` (whole seconds, rounded; negative counts as 0)."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def format_rate(per_second: float, unit: str) -> str:
    """``9.1 records/s``; under one a second, per minute (``2.5 scholars/min``)."""
    if per_second >= 1:
        return f"{per_second:,.1f} {unit}/s"
    return f"{per_second * 60:,.1f} {unit}/min"


@dataclass(frozen=True)
class Snapshot:
    """What is known of a piece of work at one moment. ``done`` None: nothing reported yet;
    ``rate`` (units a second) None: not measurable yet (fewer than two reports that differ)."""

    description: str
    unit: str
    elapsed: float
    done: int | None = None
    total: int | None = None
    rate: float | None = None


def format_line(snapshot: Snapshot) -> str:
    """One progress line while the work runs.

    ``Indexing: 1,200 / 36,855 records (3 %), 9.1 records/s, about 1h 05m left``; without a total
    ``Indexing: 1,200 records, 9.1 records/s, 2m 10s elapsed``; before a rate can be measured the
    elapsed time stands in for it (``Indexing: 0 / 36,855 records (0 %), 4m 10s elapsed``), and
    before anything was reported it is all there is (``Indexing: 35s elapsed``).
    """
    s = snapshot
    parts = [] if s.done is None else [_count(s.done, s.total, s.unit)]
    if s.rate is None or s.rate <= 0:
        parts.append(f"{format_duration(s.elapsed)} elapsed")
        return f"{s.description}: {', '.join(parts)}"
    parts.append(format_rate(s.rate, s.unit))
    if s.total is None or s.done is None:
        parts.append(f"{format_duration(s.elapsed)} elapsed")
    elif s.done >= s.total:
        parts.append("finishing")
    else:
        parts.append(f"about {format_duration((s.total - s.done) / s.rate)} left")
    return f"{s.description}: {', '.join(parts)}"


def format_end(snapshot: Snapshot, *, completed: bool) -> str:
    """The last line: ``Indexing: done in 1h 07m, 36,855 / 36,855 records (100 %), 9.1 records/s``,
    or ``stopped after`` when the work raised (an interrupt, an error reported next)."""
    s = snapshot
    parts = [f"{'done in' if completed else 'stopped after'} {format_duration(s.elapsed)}"]
    if s.done is not None:
        parts.append(_count(s.done, s.total, s.unit))
    if s.rate is not None and s.rate > 0:
        parts.append(format_rate(s.rate, s.unit))
    return f"{s.description}: {', '.join(parts)}"


def _count(done: int, total: int | None, unit: str) -> str:
    if total is None:
        return f"{done:,} {unit}"
    share = done * 100 // total if total > 0 else 100
    return f"{done:,} / {total:,} {unit} ({share} %)"


class LineProgress:
    """The state of one piece of work and when its next line is due; thread-safe.

    ``update(done, total)`` is the work's report (a line when one is due); ``tick()`` is the
    heartbeat's (the last known state, when a line is due); ``due_in()`` is how long until the
    next one is; ``finish(completed)`` writes the last line. A line is due ``interval`` seconds
    after the previous one (or after the start). ``write`` gets each line without its newline.
    """

    def __init__(self, description: str, write: Callable[[str], None], *, total: int | None = None,
                 unit: str = "records", interval: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, not {interval}")
        self.description = description
        self.unit = unit
        self.interval = interval
        self._write = write
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._last_line = self._started
        self._total = total
        self._done: int | None = None
        self._first: tuple[float, int] | None = None  # the first report (time, done): the mean rate's start
        self._recent: deque[tuple[float, int]] = deque()  # reports that moved ``done``, within RATE_WINDOW

    def update(self, done: int, total: int | None) -> None:
        """The work's report: ``done`` so far of ``total`` (None: not known). A line if one is due."""
        with self._lock:
            now = self._clock()
            self._total = total
            if self._first is None:
                self._first = (now, done)
            if done != self._done:
                self._recent.append((now, done))
                while len(self._recent) > 2 and self._recent[1][0] < now - RATE_WINDOW:
                    self._recent.popleft()  # keeps one report at or before the window's start
            self._done = done
            self._line_if_due(now)

    def tick(self) -> None:
        """The heartbeat: the last known state, if a line is due (the work has not reported since)."""
        with self._lock:
            self._line_if_due(self._clock())

    def due_in(self) -> float:
        """Seconds until the next line is due (0 when it is)."""
        with self._lock:
            return max(0.0, self._last_line + self.interval - self._clock())

    def finish(self, *, completed: bool) -> None:
        """Write the last line (``done in``, or ``stopped after`` when not ``completed``)."""
        with self._lock:
            now = self._clock()
            self._write(format_end(self._snapshot(now, mean=True), completed=completed))
            self._last_line = now

    def _line_if_due(self, now: float) -> None:
        if now - self._last_line >= self.interval:
            self._write(format_line(self._snapshot(now, mean=False)))
            self._last_line = now

    def _snapshot(self, now: float, *, mean: bool) -> Snapshot:
        """The state now. The rate runs from the oldest recent report (``mean``: the first report)
        to now, so that it falls while the work reports nothing and the time left grows."""
        start = self._first if mean else (self._recent[0] if self._recent else None)
        rate = None
        if start is not None and self._done is not None and self._done != start[1] and now > start[0]:
            rate = (self._done - start[1]) / (now - start[0])
        return Snapshot(self.description, self.unit, now - self._started, self._done, self._total, rate)


MIN_WAIT = 0.05  # the heartbeat never wakes more often than this (a due line is written by then)


@contextmanager
def heartbeat(progress: LineProgress) -> Iterator[None]:
    """While the block runs, a daemon thread calls ``progress.tick()`` whenever a line is due,
    so that a line comes at least once an interval however rarely the work reports. Stopped
    (and joined) when the block ends, however it ends."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(max(MIN_WAIT, progress.due_in())):
            progress.tick()

    thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def line_progress(description: str, write: Callable[[str], None], *, total: int | None = None,
                  unit: str = "records", interval: float = 10.0) -> Iterator[Update]:
    """Progress as lines (``LineProgress``) kept coming by a ``heartbeat``; yields ``update(done, total)``.

    The last line says ``done`` when the block completes, ``stopped`` when it raises (the
    exception goes on)."""
    progress = LineProgress(description, write, total=total, unit=unit, interval=interval)
    completed = False
    try:
        with heartbeat(progress):
            yield progress.update
        completed = True
    finally:
        progress.finish(completed=completed)
