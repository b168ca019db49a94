"""Finished jobs and what they left, deleted once older than ``PAPERBOT_JOB_RETENTION_DAYS``.

Every worker runs ``prune_finished`` from its scheduler loop at most once an hour
(``schedule.scheduler_loop``): the queue library deletes its own finished jobs of the ``paperbot``
queue (procrastinate's ``JobManager.delete_old_jobs``: succeeded, failed, cancelled and aborted
alike, by the time they finished), and paperbot deletes, by their own timestamps, the results
and progress rows of jobs (``job_results``, ``job_progress``), the Slack messages that followed
finished jobs (``slack_jobs``) and the staged records of ingests older than that
(``job_parts``: a submitter that was killed leaves them). Deleting is idempotent, so two
workers pruning at once do no harm. Waiting and running jobs are never touched.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import delete

from retrieval.config import Settings
from retrieval.jobs.app import QUEUE
from retrieval.storage.database import open_database
from retrieval.storage.schema import job_parts, job_progress, job_results, slack_jobs

if TYPE_CHECKING:
    from procrastinate import App

PRUNE_EVERY = 3600.0  # seconds between two prunings by one worker


@dataclass(frozen=True)
class PrunedRows:
    """How many rows of paperbot's own job tables one pruning deleted (the queue library's
    finished jobs are deleted too, uncounted)."""

    results: int = 0
    progress: int = 0
    slack_messages: int = 0
    staged_parts: int = 0


def retention(settings: Settings) -> timedelta | None:
    """How long finished jobs are kept; None: for ever (``PAPERBOT_JOB_RETENTION_DAYS=0``)."""
    return timedelta(days=settings.job_retention_days) if settings.job_retention_days > 0 else None


async def prune_finished(app: App, settings: Settings, *, older_than: timedelta,
                         now: datetime | None = None) -> PrunedRows:
    """Delete the jobs of the ``paperbot`` queue that finished more than ``older_than`` ago (by
    the database's clock, in whole hours), and paperbot's rows about jobs older than that, as of
    ``now`` (default: this host's clock; module docstring); returns the rows deleted."""
    hours = max(0, int(older_than.total_seconds() // 3600))
    await app.job_manager.delete_old_jobs(nb_hours=hours, queue=QUEUE, include_failed=True,
                                          include_cancelled=True, include_aborted=True)
    cutoff = ((now or datetime.now(UTC)) - older_than).isoformat(timespec="seconds")
    return await asyncio.to_thread(_prune_tables, settings, cutoff)


def _prune_tables(settings: Settings, cutoff: str) -> PrunedRows:
    with open_database(settings).writing("delete finished jobs' rows") as connection:
        return PrunedRows(
            results=connection.execute(delete(job_results).where(job_results.c.finished_at < cutoff)).rowcount,
            progress=connection.execute(delete(job_progress).where(job_progress.c.updated_at < cutoff)).rowcount,
            slack_messages=connection.execute(delete(slack_jobs).where(
                slack_jobs.c.finished_at.is_not(None), slack_jobs.c.finished_at < cutoff)).rowcount,
            staged_parts=connection.execute(delete(job_parts).where(job_parts.c.created_at < cutoff)).rowcount,
        )
