"""Every log line a worker writes while a job runs names the job.

The tasks (``app``) log their own lines with the job's label (``job 42 (paperbot.ingest_part,
attempt 2) ...``) and procrastinate names the job in its own (``paperbot.ingest_part[42]``). Any
other logger called while a job runs (the index, the sources, the writer lock, the database)
does not know the job: :func:`name_jobs_in_logs` installs a log-record factory that puts the label
of the job running in the calling context (:func:`running`, a context variable: each job's
thread has its own) in front of those lines' messages. It changes records, not handlers, so it
holds whatever handlers and formats the process sets up, before or after.

A line logged from a thread the job starts itself (a pool of its own) does not inherit the
context variable and is not named.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

NAMED_BY_THEMSELVES = ("retrieval.jobs", "procrastinate")  # loggers whose lines already name their job

_RUNNING: ContextVar[str | None] = ContextVar("paperbot_job", default=None)
_INSTALLED = threading.Lock()
_installed = False


@contextmanager
def running(label: str) -> Iterator[None]:
    """Within the block, lines logged in this context are named ``label`` (``job 42 (paperbot.sync)``)."""
    token = _RUNNING.set(label)
    try:
        yield
    finally:
        _RUNNING.reset(token)


def name_jobs_in_logs() -> None:
    """Install the record factory (module docstring) once per process; later calls do nothing."""
    global _installed
    with _INSTALLED:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            label = _RUNNING.get()
            if label is not None and not record.name.startswith(NAMED_BY_THEMSELVES):
                record.msg = f"{label}: {record.msg}"  # a label holds no '%': the arguments still apply
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
