"""The procrastinate app of a deployment, built from the settings' PostgreSQL URL, and its tasks.

Every task is a thin wrapper: it takes the worker's ``Assistant`` from the job context (the
worker passes it as ``additional_context``), logs the job by id and task (and, through
``logs.running``, names it in every other line logged while it runs), runs the body in
``tasks`` and stores what the job's submitter waits for (``staging.save_result``). A task that
raises is retried up to ``RETRIES`` times (its work is idempotent: a retry merges again what
the failed attempt wrote, which changes nothing); a job whose worker died mid-run is put back by
``schedule.retry_stalled_jobs``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from retrieval.config import Settings
from retrieval.errors import ConfigError
from retrieval.jobs import tasks
from retrieval.jobs.logs import running

if TYPE_CHECKING:
    from procrastinate import App, JobContext

    from retrieval.assistant import Assistant
    from retrieval.results import SyncEvent

log = logging.getLogger(__name__)

QUEUE = "paperbot"
RETRIES = 3  # attempts after the first, for a task that raised
SYNC_TASK = "paperbot.sync"
INGEST_PART_TASK = "paperbot.ingest_part"
REPAIR_TASK = "paperbot.repair"
SCHEDULED_SYNC = "scheduled-sync"  # the periodic id of the scheduled sync (``schedule``)
SYNC_LOCK = "paperbot-sync"  # one sync job at a time in the whole deployment
ASSISTANT = "assistant"  # the key of the worker's Assistant in the job context


def uses_queue(settings: Settings) -> bool:
    """Whether jobs go to the queue: ``PAPERBOT_JOB_QUEUE`` set on a PostgreSQL database.

    ``PAPERBOT_JOB_QUEUE`` without a PostgreSQL ``PAPERBOT_DATABASE_URL`` is a ``ConfigError``:
    the queue lives in that database."""
    if not settings.job_queue:
        return False
    if conninfo(settings) is None:
        raise ConfigError("PAPERBOT_JOB_QUEUE is set, but the job queue needs a PostgreSQL database.",
                          hint="Set PAPERBOT_DATABASE_URL=postgresql+psycopg://... (docs/workers.md), "
                               "or unset PAPERBOT_JOB_QUEUE to run jobs in-process.")
    return True


def conninfo(settings: Settings) -> str | None:
    """The libpq URI of the settings' PostgreSQL database (what psycopg connects with); None on SQLite."""
    from retrieval.storage.database import database_url

    url = database_url(settings)
    if url.get_backend_name() != "postgresql":
        return None
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def build_app(settings: Settings, *, pool_size: int = 2) -> App:
    """The procrastinate app of these settings' database, with paperbot's tasks registered.

    Not opened: a caller opens it (``app.open()`` for deferring and reading, ``open_async`` for
    a worker). ``pool_size``: the most connections it holds. Raises ``ConfigError`` on SQLite.
    """
    try:
        from procrastinate import App, PsycopgConnector, RetryStrategy
    except ModuleNotFoundError:
        raise ConfigError("The job queue needs procrastinate, which is not installed.",
                          hint="pip install 'paperbot[postgres]'") from None

    info = conninfo(settings)
    if info is None:
        raise ConfigError("The job queue needs a PostgreSQL database.",
                          hint="Set PAPERBOT_DATABASE_URL=postgresql+psycopg://... (docs/workers.md).")
    app = App(connector=PsycopgConnector(conninfo=info, min_size=1, max_size=max(2, pool_size),
                                         kwargs={"application_name": "paperbot jobs"}))
    retry = RetryStrategy(max_attempts=RETRIES, wait=1)

    @app.task(name=SYNC_TASK, queue=QUEUE, pass_context=True, retry=retry, lock=SYNC_LOCK)
    def sync(context: JobContext, timestamp: int | None = None) -> dict[str, Any]:
        assistant = _assistant(context)
        label = _label(context)
        with running(label):
            log.info("%s: sync started%s", label, f" (scheduled for {timestamp})" if timestamp else "")
            result = tasks.run_sync(assistant, progress=_sync_progress(assistant, context))
            _finish(assistant, context, result)
            log.info("%s: sync done: %d new, %d updated", label, len(result["new_paper_ids"]),
                     len(result["updated_paper_ids"]))
        return {"new": len(result["new_paper_ids"])}

    @app.task(name=INGEST_PART_TASK, queue=QUEUE, pass_context=True, retry=retry)
    def ingest_part(context: JobContext, ingest_id: str, part: int) -> dict[str, Any]:
        assistant = _assistant(context)
        label = f"{_label(context)} ingest {ingest_id[:8]} part {part}"
        with running(label):
            log.info("%s: started", label)
            counts = tasks.run_ingest_part(assistant, ingest_id, part, say=lambda text: log.info("%s: %s", label, text))
            log.info("%s: done: %s", label, ", ".join(f"{key} {value}" for key, value in counts.items()))
        return counts

    @app.task(name=REPAIR_TASK, queue=QUEUE, pass_context=True, retry=retry, lock=SYNC_LOCK)
    def repair(context: JobContext, force: bool = False) -> dict[str, Any]:
        assistant = _assistant(context)
        label = _label(context)
        with running(label):
            log.info("%s: repair started", label)
            result = tasks.run_repair(assistant, force=force)
            _finish(assistant, context, result)
            log.info("%s: repair done", label)
        return {"ok": result.get("ok")}

    return app


def _assistant(context: JobContext) -> Assistant:
    assistant = context.additional_context.get(ASSISTANT)
    if assistant is None:  # a worker not started by ``worker.run_worker``
        raise ConfigError("This procrastinate worker was not started by `paperbot worker`.",
                          hint="Run the jobs with `paperbot worker`.")
    return assistant


def _label(context: JobContext) -> str:
    """ "job 42 (paperbot.sync, attempt 2)": how the logs name a job."""
    job = context.job
    attempt = f", attempt {job.attempts + 1}" if job.attempts else ""
    return f"job {job.id} ({job.task_name}{attempt})"


def _sync_progress(assistant: Assistant, context: JobContext) -> Callable[[SyncEvent], None]:
    """Writes each scholar done (and the first start) to ``job_progress``, for whoever follows the job."""
    from retrieval.jobs.staging import save_progress

    job_id = context.job.id
    assert job_id is not None

    def on_event(event: SyncEvent) -> None:
        if event.stage == "done" or (event.stage == "start" and event.position == 1):
            done = event.position if event.stage == "done" else 0
            save_progress(assistant.settings, job_id, done, event.total, event.scholar)

    return on_event


def _finish(assistant: Assistant, context: JobContext, result: dict[str, Any]) -> None:
    from retrieval.jobs.staging import save_result

    assert context.job.id is not None
    save_result(assistant.settings, context.job.id, context.job.task_name, result)
