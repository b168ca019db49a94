"""The queue's state for ``paperbot doctor``: jobs by state and task, and the workers seen.

Job counts come from procrastinate's ``JobManager.list_tasks``. The workers are procrastinate's
``procrastinate_workers`` rows (an id and the last heartbeat: the table its documentation
describes, which its API lists no other way) joined with paperbot's ``job_workers`` (host:pid
and concurrency, written by ``worker.run_worker``). A worker that stopped cleanly has left
both; a killed one stays, ``stalled``, until a starting worker prunes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text

from retrieval.config import Settings
from retrieval.results import QueueStatus, WorkerSeen
from retrieval.storage.database import open_database

if TYPE_CHECKING:
    from procrastinate import App


def queue_status(settings: Settings, app: App) -> QueueStatus:
    """The state of the queue of ``app`` (opened) in the settings' database."""
    from retrieval.jobs.schedule import STALLED_AFTER

    waiting = running = failed = succeeded = 0
    running_by_task: dict[str, int] = {}
    for row in app.job_manager.list_tasks():
        waiting += int(row["todo"])
        running += int(row["doing"])
        failed += int(row["failed"])
        succeeded += int(row["succeeded"])
        if row["doing"]:
            running_by_task[str(row["name"])] = int(row["doing"])
    limit = settings.worker_heartbeat_seconds * STALLED_AFTER
    with open_database(settings).reading("list the queue's workers") as connection:
        rows = connection.execute(text(
            "SELECT w.id, EXTRACT(EPOCH FROM (now() - w.last_heartbeat)), j.name, j.concurrency"
            " FROM procrastinate_workers w LEFT JOIN job_workers j ON j.worker_id = w.id ORDER BY w.id")).all()
    workers = [WorkerSeen(worker_id=int(row[0]), name=row[2] or "(not a paperbot worker)",
                          concurrency=int(row[3] or 1), seconds_since_heartbeat=float(row[1]),
                          stalled=float(row[1]) > limit) for row in rows]
    return QueueStatus(configured=True, waiting=waiting, running=running, failed=failed, succeeded=succeeded,
                       running_by_task=running_by_task, workers=workers)
