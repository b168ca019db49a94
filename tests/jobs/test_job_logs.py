"""A worker's log lines name the job running (``retrieval/jobs/logs.py``): lines of other loggers
logged while a job runs get its label in front, each job's thread its own; the tasks' own lines and
procrastinate's, which name the job themselves, are left as they are; lines outside a job too."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from retrieval.jobs.logs import name_jobs_in_logs, running


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def lines() -> Iterator[list[str]]:
    """The lines reaching the root logger at INFO; ``retrieval.jobs`` and procrastinate's loggers pass
    their records up for the test (``paperbot worker`` run in this process gives them handlers of
    their own and stops their propagation)."""
    handler = _Lines()
    root = logging.getLogger()
    own = [logging.getLogger(name) for name in ("retrieval.jobs", "procrastinate", "procrastinate.worker")]
    saved = [(logger, logger.level, logger.propagate, list(logger.handlers)) for logger in [root, *own]]
    for logger in own:
        for existing in list(logger.handlers):
            logger.removeHandler(existing)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)
        for logger, level, propagate, handlers in saved:
            logger.setLevel(level)
            logger.propagate = propagate
            for existing in handlers:
                if existing not in logger.handlers:
                    logger.addHandler(existing)


def test_lines_logged_while_a_job_runs_name_it_in_each_jobs_thread(lines: list[str]) -> None:
    name_jobs_in_logs()
    name_jobs_in_logs()  # once per process: a second call adds no second label
    index, lock = logging.getLogger("retrieval.index.catch_up"), logging.getLogger("retrieval.storage.locks")
    inside = threading.Barrier(2)  # both jobs run at once, in threads of their own (as procrastinate runs them)

    def job(label: str, logger: logging.Logger) -> None:
        with running(label):
            inside.wait(timeout=30)
            logger.warning("waited %d s for the writer lock (%s)", 3, "100%")
            inside.wait(timeout=30)

    threads = [threading.Thread(target=job, args=("job 41 (paperbot.sync)", index)),
               threading.Thread(target=job, args=("job 42 (paperbot.ingest_part, attempt 2) ingest 1f3a part 1", lock))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    logging.getLogger("retrieval.index.dense").warning("outside any job")
    with running("job 43 (paperbot.repair)"):
        logging.getLogger("retrieval.jobs.app").info("%s: repair started", "job 43 (paperbot.repair)")
        logging.getLogger("procrastinate.worker").info("Starting job paperbot.repair[43]()")

    assert sorted(lines[:2]) == [
        "retrieval.index.catch_up: job 41 (paperbot.sync): waited 3 s for the writer lock (100%)",
        "retrieval.storage.locks: job 42 (paperbot.ingest_part, attempt 2) ingest 1f3a part 1: waited 3 s for the "
        "writer lock (100%)",
    ]
    assert lines[2:] == ["retrieval.index.dense: outside any job",
                         "retrieval.jobs.app: job 43 (paperbot.repair): repair started",
                         "procrastinate.worker: Starting job paperbot.repair[43]()"]
