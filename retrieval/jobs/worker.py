"""A worker process (``paperbot worker``): runs the queue's jobs until SIGTERM or Ctrl-C.

It builds one ``Assistant`` (its own index, encoder and embedding cache; the encoder is loaded
before the first job is taken) and hands it to every job through the job context; runs procrastinate's ``Worker`` with ``concurrency`` jobs at once
(threads of this process: a job that encodes uses this process's cores), heartbeats every
``PAPERBOT_WORKER_HEARTBEAT_SECONDS``; and beside it ``schedule.scheduler_loop`` (the scheduled
sync, stalled jobs retried). It names itself host:pid in ``job_workers`` for ``doctor``.

SIGTERM or SIGINT stops it cleanly: no new job is taken, the running ones finish, the worker
unregisters, and the call returns. A worker killed outright (SIGKILL, a lost host) leaves its
running jobs to the other workers, which retry them after ``schedule.STALLED_AFTER`` missed
heartbeats.

The vectors must be shared by every worker, so a worker needs a Chroma server
(``PAPERBOT_CHROMA_URL``) besides the PostgreSQL database; ``ConfigError`` otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import delete, insert

from retrieval.config import Settings
from retrieval.errors import ConfigError
from retrieval.jobs.app import ASSISTANT, QUEUE, build_app, uses_queue
from retrieval.jobs.logs import name_jobs_in_logs
from retrieval.jobs.schedule import STALLED_AFTER, scheduler_loop
from retrieval.storage.database import open_database
from retrieval.storage.schema import job_workers

if TYPE_CHECKING:
    from procrastinate import App
    from procrastinate.worker import Worker

    from retrieval.assistant import Assistant

log = logging.getLogger(__name__)


def check_worker_settings(settings: Settings) -> None:
    """``ConfigError`` unless these settings name a queue and a Chroma server (module docstring)."""
    if not uses_queue(settings):
        raise ConfigError("`paperbot worker` runs jobs of the queue, and PAPERBOT_JOB_QUEUE is not set.",
                          hint="Set PAPERBOT_JOB_QUEUE=true and PAPERBOT_DATABASE_URL=postgresql+psycopg://... "
                               "(docs/workers.md); without a queue, commands run their work themselves.")
    if settings.chroma_url is None:
        raise ConfigError("`paperbot worker` needs a Chroma server that every worker writes to.",
                          hint="Set PAPERBOT_CHROMA_URL=http://HOST:PORT of a `chroma run` server (docs/workers.md).")


def worker_name() -> str:
    """ "host:pid", how the logs and ``doctor`` name this worker."""
    return f"{socket.gethostname()}:{os.getpid()}"


def run_worker(assistant: Assistant, *, concurrency: int = 1,
               on_start: Callable[[str], None] | None = None) -> None:
    """Run jobs until stopped (module docstring); ``on_start`` is told this worker's name once it
    is registered. Raises ``ConfigError`` for settings without a queue or a Chroma server."""
    settings = assistant.settings
    check_worker_settings(settings)
    name_jobs_in_logs()  # every line logged while a job runs names it (``logs``)
    open_database(settings)  # the schema, the queue's included, upgraded first if behind
    _ = assistant.index.encoder  # loaded before the first job, which then encodes at full speed
    app = build_app(settings, pool_size=concurrency + 3)
    asyncio.run(_run(app, assistant, concurrency, on_start))


async def _run(app: App, assistant: Assistant, concurrency: int, on_start: Callable[[str], None] | None) -> None:
    from procrastinate.worker import Worker

    settings = assistant.settings
    heartbeat = settings.worker_heartbeat_seconds
    async with app.open_async():
        worker = Worker(app, queues=[QUEUE], name=worker_name(), concurrency=concurrency,
                        additional_context={ASSISTANT: assistant}, update_heartbeat_interval=heartbeat,
                        stalled_worker_timeout=heartbeat * STALLED_AFTER, fetch_job_polling_interval=heartbeat)
        running = asyncio.create_task(worker.run(), name="paperbot worker")
        side = asyncio.create_task(_beside(app, worker, settings, concurrency, on_start), name="paperbot scheduler")
        try:
            await running
        finally:
            side.cancel()
            with suppress(asyncio.CancelledError):
                await side


async def _beside(app: App, worker: Worker, settings: Settings, concurrency: int,
                  on_start: Callable[[str], None] | None) -> None:
    """Name the worker once procrastinate registered it, then run the scheduler loop; unname it at the end."""
    while worker.worker_id is None:
        await asyncio.sleep(0.05)
    worker_id = worker.worker_id
    await asyncio.to_thread(_name_worker, settings, worker_id, concurrency)
    if on_start is not None:
        on_start(f"{worker_name()} (worker {worker_id}, {concurrency} job(s) at once)")
    try:
        await scheduler_loop(app, settings)
    finally:
        with suppress(Exception):  # best effort: doctor lists only workers procrastinate still knows
            _unname_worker(settings, worker_id)


def _name_worker(settings: Settings, worker_id: int, concurrency: int) -> None:
    with open_database(settings).writing("register a queue worker") as connection:
        connection.execute(delete(job_workers).where(job_workers.c.worker_id == worker_id))
        connection.execute(insert(job_workers).values(worker_id=worker_id, name=worker_name(), concurrency=concurrency,
                                                      started_at=datetime.now(UTC).isoformat(timespec="seconds")))


def _unname_worker(settings: Settings, worker_id: int) -> None:
    with open_database(settings).writing("unregister a queue worker") as connection:
        connection.execute(delete(job_workers).where(job_workers.c.worker_id == worker_id))
