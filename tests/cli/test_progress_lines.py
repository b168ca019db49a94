"""Progress off a terminal (``bot.progress``): the lines, when they are written, the heartbeat.

Every decision runs on an injected clock: nothing here sleeps or measures time.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest
from rich.console import Console

from bot.context import CliContext
from bot.progress import LineProgress, Snapshot, format_duration, format_end, format_line, format_rate, heartbeat
from retrieval.config import Settings


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def printer(interval: float = 10.0, total: int | None = None, unit: str = "records") -> tuple[LineProgress, list[str], Clock]:
    lines: list[str] = []
    clock = Clock()
    return LineProgress("Indexing", lines.append, total=total, unit=unit, interval=interval, clock=clock), lines, clock


# --- the line -------------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0s"), (44.6, "45s"), (59.4, "59s"), (60, "1m 00s"), (250, "4m 10s"), (3599, "59m 59s"),
    (3600, "1h 00m"), (3900, "1h 05m"), (90000, "25h 00m"), (-3, "0s"),
])
def test_durations(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown


def test_rates_under_one_a_second_are_given_per_minute() -> None:
    assert format_rate(9.12, "records") == "9.1 records/s"
    assert format_rate(1234.5, "records") == "1,234.5 records/s"
    assert format_rate(0.025, "scholars") == "1.5 scholars/min"


def test_a_line_with_a_total_and_a_rate_says_how_long_is_left() -> None:
    line = format_line(Snapshot("Indexing", "records", elapsed=130, done=1200, total=36855, rate=9.1))
    assert line == "Indexing: 1,200 / 36,855 records (3 %), 9.1 records/s, about 1h 05m left"


def test_without_a_total_the_line_gives_the_elapsed_time_instead_of_the_time_left() -> None:
    line = format_line(Snapshot("Fetching", "records", elapsed=130, done=1200, total=None, rate=9.1))
    assert line == "Fetching: 1,200 records, 9.1 records/s, 2m 10s elapsed"


def test_before_a_rate_is_known_the_line_gives_the_elapsed_time() -> None:
    assert format_line(Snapshot("Indexing", "records", elapsed=250, done=0, total=36855)) == (
        "Indexing: 0 / 36,855 records (0 %), 4m 10s elapsed")
    assert format_line(Snapshot("Indexing", "records", elapsed=35)) == "Indexing: 35s elapsed"


def test_all_done_but_still_running_is_finishing_not_zero_seconds_left() -> None:
    line = format_line(Snapshot("Indexing", "records", elapsed=60, done=596, total=596, rate=10.0))
    assert line == "Indexing: 596 / 596 records (100 %), 10.0 records/s, finishing"


def test_the_last_line_says_whether_the_work_completed() -> None:
    snapshot = Snapshot("Indexing", "records", elapsed=4020, done=36855, total=36855, rate=9.17)
    assert format_end(snapshot, completed=True) == "Indexing: done in 1h 07m, 36,855 / 36,855 records (100 %), 9.2 records/s"
    stopped = Snapshot("Indexing", "records", elapsed=130, done=1200, total=36855)
    assert format_end(stopped, completed=False) == "Indexing: stopped after 2m 10s, 1,200 / 36,855 records (3 %)"


# --- when lines are written -----------------------------------------------------------------


def test_reports_within_an_interval_write_no_line() -> None:
    progress, lines, clock = printer(interval=10)
    progress.update(0, 1000)
    for done in range(10, 100, 10):
        clock.advance(1)
        progress.update(done, 1000)
    assert lines == []
    clock.advance(1)  # 10 s since the start
    progress.update(100, 1000)
    assert lines == ["Indexing: 100 / 1,000 records (10 %), 10.0 records/s, about 1m 30s left"]


def test_the_heartbeat_writes_the_last_known_state_when_the_work_does_not_report() -> None:
    progress, lines, clock = printer(interval=10, total=36855)
    progress.update(0, 36855)
    clock.advance(9.5)
    progress.tick()
    assert lines == []
    assert progress.due_in() == 0.5
    clock.advance(0.5)
    assert progress.due_in() == 0
    progress.tick()
    assert lines == ["Indexing: 0 / 36,855 records (0 %), 10s elapsed"]
    clock.advance(10)
    progress.tick()  # still no report (the encoder is being prepared, a batch is long): a line anyway
    assert lines[-1] == "Indexing: 0 / 36,855 records (0 %), 20s elapsed"
    assert progress.due_in() == 10


def test_the_rate_follows_the_recent_pace_not_the_time_spent_before_the_first_records() -> None:
    progress, lines, clock = printer(interval=10, total=2000)
    progress.update(0, 2000)
    clock.advance(250)  # the encoder is prepared: nothing done
    progress.update(256, 2000)
    for done in (512, 768, 1024):
        clock.advance(28)  # then 256 records every 28 s (9.1 a second)
        progress.update(done, 2000)
    assert lines[-1] == "Indexing: 1,024 / 2,000 records (51 %), 9.1 records/s, about 1m 47s left"
    progress.finish(completed=True)  # the whole run's mean, the wait included
    assert lines[-1] == "Indexing: done in 5m 34s, 1,024 / 2,000 records (51 %), 3.1 records/s"


def test_while_the_work_reports_nothing_the_rate_falls_and_the_time_left_grows() -> None:
    progress, lines, clock = printer(interval=10, total=2000)
    progress.update(0, 2000)
    for done in (256, 512, 768):
        clock.advance(28)
        progress.update(done, 2000)
    assert lines[-1] == "Indexing: 768 / 2,000 records (38 %), 9.1 records/s, about 2m 15s left"
    clock.advance(20)
    progress.tick()
    assert lines[-1] == "Indexing: 768 / 2,000 records (38 %), 7.4 records/s, about 2m 47s left"


def test_without_any_report_the_last_line_has_only_the_time() -> None:
    progress, lines, clock = printer(interval=10)
    clock.advance(3)
    progress.finish(completed=False)
    assert lines == ["Indexing: stopped after 3s"]


def test_a_short_run_writes_only_its_last_line() -> None:
    progress, lines, clock = printer(interval=10, unit="scholars")
    progress.update(0, 3)
    for done in (1, 2, 3):
        clock.advance(2)
        progress.update(done, 3)
    progress.finish(completed=True)
    assert lines == ["Indexing: done in 6s, 3 / 3 scholars (100 %), 30.0 scholars/min"]


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval"):
        LineProgress("x", print, interval=0)


# --- the thread -----------------------------------------------------------------------------


class DueAtOnce(LineProgress):
    """A printer whose line is always due, that signals each tick."""

    def __init__(self) -> None:
        super().__init__("Indexing", lambda line: None)
        self.ticked = threading.Event()

    def due_in(self) -> float:
        return 0.0

    def tick(self) -> None:
        self.ticked.set()


def test_the_heartbeat_thread_ticks_while_the_block_runs_and_stops_with_it() -> None:
    progress = DueAtOnce()
    with heartbeat(progress):
        assert progress.ticked.wait(30), "the heartbeat never ticked"
    assert not any(thread.name == "progress-heartbeat" for thread in threading.enumerate())


# --- CliContext.progress off a terminal ------------------------------------------------------


def _context(tmp_path: Path, interval: float) -> tuple[CliContext, io.StringIO]:
    stderr = io.StringIO()
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", progress_interval=interval)
    return CliContext(settings, stdout=io.StringIO(), console=Console(file=stderr, width=200)), stderr


def test_off_a_terminal_the_context_writes_lines_and_a_last_one(tmp_path: Path) -> None:
    ctx, stderr = _context(tmp_path, interval=3600)
    with ctx.progress("Syncing scholars", total=2, unit="scholars") as update:
        update(1, 2)
        update(2, 2)
    [line] = stderr.getvalue().splitlines()
    assert line.startswith("Syncing scholars: done in ") and "2 / 2 scholars (100 %)" in line
    assert "\x1b" not in stderr.getvalue() and "━" not in stderr.getvalue()  # no bar, no escape codes


def test_off_a_terminal_an_error_ends_with_a_stopped_line(tmp_path: Path) -> None:
    ctx, stderr = _context(tmp_path, interval=3600)
    with pytest.raises(KeyboardInterrupt), ctx.progress("Indexing") as update:
        update(5, None)
        raise KeyboardInterrupt
    assert stderr.getvalue().startswith("Indexing: stopped after ") and "5 records" in stderr.getvalue()


def test_the_interval_comes_from_the_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PAPERBOT_PROGRESS_INTERVAL", raising=False)
    assert Settings(_env_file=None, data_dir=tmp_path).progress_interval == 10
    monkeypatch.setenv("PAPERBOT_PROGRESS_INTERVAL", "0.5")
    assert Settings(_env_file=None, data_dir=tmp_path).progress_interval == 0.5
