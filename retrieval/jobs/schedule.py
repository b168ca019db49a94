"""The scheduled sync, once per period for the whole deployment; the jobs of dead workers, retried.

Every worker runs ``scheduler_loop`` beside its jobs. Each period of
``PAPERBOT_SYNC_INTERVAL_HOURS`` starts at a multiple of the period since the epoch; at each
start, every worker offers the queue one sync job for that start through procrastinate's
``defer_periodic_job``, which records (task, periodic id, timestamp) under a unique key: the
first offer is queued, the others are refused by the database. procrastinate keeps only the
latest timestamp, so the offers take turns under an advisory lock and one older than the latest
is dropped (``offer_scheduled_sync``). Three workers, or thirty, queue
one sync per period, and a worker that starts late in a period queues nothing for it (the
period's sync was queued, or the period began more than ``MAX_LATE`` seconds ago).

The same loop puts back the jobs of workers that stopped saying they are alive (killed, frozen,
cut off): procrastinate's ``get_stalled_jobs`` finds the running jobs of workers whose heartbeat
is older than ``STALLED_AFTER`` heartbeats, and ``retry_job`` makes them wait for a worker again.
Two workers retrying the same job at once is harmless: the second finds it no longer running.
Once an hour it also deletes the finished jobs past their retention (``retention``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import TYPE_CHECKING

from retrieval.config import Settings
from retrieval.jobs.app import SCHEDULED_SYNC, SYNC_TASK
from retrieval.jobs.retention import PRUNE_EVERY, prune_finished, retention

if TYPE_CHECKING:
    from procrastinate import App

log = logging.getLogger(__name__)

STALLED_AFTER = 3  # heartbeats a worker may miss before its running jobs are retried
MAX_LATE = 600.0  # seconds: a period that began longer ago than this is not caught up on
SCHEDULE = 0x70627363  # pg_advisory_lock key the offers of the scheduled sync take ("pbsc")


def sync_period(settings: Settings) -> float | None:
    """Seconds between scheduled syncs; None when none is scheduled."""
    return settings.sync_interval_hours * 3600 if settings.sync_interval_hours else None


def period_start(now: float, period: float) -> int:
    """The start (epoch seconds) of the period holding ``now``: the same in every process."""
    return int(math.floor(now / period) * period)


async def offer_scheduled_sync(app: App, settings: Settings, start: int) -> int | None:
    """Offer the sync of the period starting at ``start``; its job id when this call queued it,
    None when another process already had, or had queued a later period's.

    procrastinate keeps only the latest (task, periodic id) timestamp: an offer of an earlier one
    would be taken. So the offers of every process go one at a time, under the advisory lock
    ``SCHEDULE``, and an offer older than the latest recorded is dropped (a process that woke a
    whole period late)."""
    loop = asyncio.get_running_loop()
    return await asyncio.to_thread(_offer_under_lock, app, settings, start, loop)


def _offer_under_lock(app: App, settings: Settings, start: int, loop: asyncio.AbstractEventLoop) -> int | None:
    from sqlalchemy import text

    from retrieval.storage.database import open_database

    database = open_database(settings)
    with database.engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": SCHEDULE})
        try:
            latest = connection.execute(text(
                "SELECT max(defer_timestamp) FROM procrastinate_periodic_defers"
                " WHERE task_name = :task AND periodic_id = :id"), {"task": SYNC_TASK, "id": SCHEDULED_SYNC}).scalar()
            connection.commit()
            if latest is not None and int(latest) >= start:
                return None
            deferrer = app.tasks[SYNC_TASK].configure(task_kwargs={"timestamp": start})
            offer = app.job_manager.defer_periodic_job(deferrer.job, periodic_id=SCHEDULED_SYNC, defer_timestamp=start)
            job_id = asyncio.run_coroutine_threadsafe(offer, loop).result()
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": SCHEDULE})
            connection.commit()
    if job_id is not None:
        log.info("scheduled sync for %s queued as job %s", time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(start)),
                 job_id)
    return job_id


async def retry_stalled_jobs(app: App, heartbeat: float) -> list[int]:
    """Put the running jobs of stalled workers back in the queue; their ids."""
    retried = []
    for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=heartbeat * STALLED_AFTER):
        assert job.id is not None
        try:
            await app.job_manager.retry_job(job)
        except Exception as exc:  # noqa: BLE001 - another worker retried it first, or it just finished
            log.debug("job %s was not retried: %s", job.id, exc)
            continue
        log.warning("job %s (%s) was running on a worker that stopped answering; queued again", job.id,
                    job.task_name)
        retried.append(job.id)
    return retried


async def scheduler_loop(app: App, settings: Settings) -> None:
    """Run until cancelled: offer each period's sync, retry stalled jobs, every heartbeat; delete
    finished jobs past their retention once an hour (``retention``)."""
    period = sync_period(settings)
    heartbeat = settings.worker_heartbeat_seconds
    keep = retention(settings)
    offered: int | None = None
    pruned_at = float("-inf")
    while True:
        now = time.time()
        if period is not None:
            start = period_start(now, period)
            if start != offered and now - start <= min(MAX_LATE, period):
                await offer_scheduled_sync(app, settings, start)
            offered = start
        await retry_stalled_jobs(app, heartbeat)
        if keep is not None and now - pruned_at >= PRUNE_EVERY:
            pruned_at = now
            try:
                pruned = await prune_finished(app, settings, older_than=keep)
                log.info("finished jobs older than %s deleted (%s)", keep, pruned)
            except Exception as exc:  # noqa: BLE001 - a failed pruning is retried in an hour, jobs go on
                log.warning("could not delete the finished jobs older than %s: %s", keep, exc)
        wait = heartbeat
        if period is not None:
            wait = min(wait, period_start(now, period) + period - time.time() + 0.05)
        await asyncio.sleep(max(0.05, wait))
