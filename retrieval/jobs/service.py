"""``JobService``: what the doors use to have slow work done, on the queue or in-process.

With a queue (``app.uses_queue``: ``PAPERBOT_JOB_QUEUE`` on a PostgreSQL database) each call
submits jobs and follows them to their outcome, telling ``progress`` what they do; the
``paperbot worker`` processes do the work. Without one (the embedded default) the same call does
the work in this process, exactly as the ``Assistant`` always has: no queue, no worker.

A job that fails after its retries is a ``StorageError`` naming it (what was written stays
written; submitting again completes it without duplicating anything).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.errors import BusyError, StoppedFollowingError, StorageError
from retrieval.results import IngestReport, JobProgress, QueueStatus, SkippedItem, SyncEvent, SyncReport

if TYPE_CHECKING:
    from procrastinate import App

    from retrieval.assistant import Assistant
    from retrieval.index.maintenance import ConsistencyReport

POLL_SECONDS = 0.25  # how often a submitter reads the state of up to 8 jobs (more: proportionally less often)


class JobService:
    """Submit and follow jobs for one ``Assistant`` (module docstring)."""

    def __init__(self, assistant: Assistant) -> None:
        self.assistant = assistant
        self.settings = assistant.settings

    @property
    def queued(self) -> bool:
        """Whether the work goes to the queue; ``ConfigError`` for a queue without PostgreSQL."""
        from retrieval.jobs.app import uses_queue

        return uses_queue(self.settings)

    # --- ingest -------------------------------------------------------------------------------

    def ingest_files(self, paths: Sequence[Path], *, parts: int, fmt: str | None = None,
                     progress: Callable[[JobProgress], None] | None = None) -> IngestReport:
        """Index the files as ``parts`` jobs that several workers write at once
        (``ingest_parts``): the same records and provenance as ``Assistant.ingest_files``, which
        is what runs without a queue. The report's ids are those each part's last attempt wrote."""
        if not self.queued:
            return self.assistant.library.ingest_files(list(paths), fmt=fmt)
        from retrieval.ingest.pipeline import read_files
        from retrieval.jobs.app import INGEST_PART_TASK, build_app
        from retrieval.jobs.ingest_parts import split
        from retrieval.jobs.staging import clear_ingest, parts_done, stage_parts

        papers, report = read_files(list(paths), fmt=fmt)
        chunks, prepared = split(papers, parts)
        report.extend(prepared)
        if not chunks:
            return report
        ingest_id = stage_parts(self.settings, chunks)
        app = build_app(self.settings)
        with app.open():
            jobs = [app.tasks[INGEST_PART_TASK].defer(ingest_id=ingest_id, part=number) for number in range(len(chunks))]
            label = f"ingest {ingest_id[:8]}"

            def counts() -> tuple[int, int, str]:
                return len(parts_done(self.settings, ingest_id)), len(chunks), ""

            self._follow(app, jobs, label, progress, counts=counts)
        for part in parts_done(self.settings, ingest_id):
            report.added.extend(part.get("added", []))
            report.updated.extend(part.get("updated", []))
            report.unchanged.extend(part.get("unchanged", []))
            report.warnings.extend(SkippedItem(item["item"], item["reason"]) for item in part.get("warnings", []))
        clear_ingest(self.settings, ingest_id)
        return report

    # --- sync and repair ------------------------------------------------------------------------

    def sync(self, *, progress: Callable[[JobProgress], None] | None = None,
             on_queued: Callable[[int], None] | None = None,
             keep_following: Callable[[], bool] | None = None) -> SyncReport:
        """A sync of the roster, its new papers queued for the follow alerts (``tasks.run_sync``):
        one job on the queue (one sync at a time in the deployment), else in this process.

        ``progress`` is told the scholars done of the roster's total as they are committed (from
        the worker's ``job_progress`` on the queue). ``on_queued`` is told the job's id once it is
        queued (never without a queue). A sync already waiting on the queue is a ``BusyError``:
        one is enough, it will fetch everything new. ``keep_following`` (see ``follow_sync``)."""
        from retrieval.jobs import tasks

        if not self.queued:
            return SyncReport.model_validate(tasks.run_sync(self.assistant, progress=_scholars_done(progress)))
        job_id = self._defer_sync()
        if on_queued is not None:
            on_queued(job_id)
        return self.follow_sync(job_id, progress=progress, keep_following=keep_following)

    def follow_sync(self, job_id: int, *, progress: Callable[[JobProgress], None] | None = None,
                    keep_following: Callable[[], bool] | None = None) -> SyncReport:
        """Follow the queued sync job ``job_id`` (queued by this process or another) to its report;
        a job that failed after its retries is a ``StorageError`` naming it. ``keep_following``
        is asked at each poll: False (this process is stopping) raises ``StoppedFollowingError``
        and leaves the job running."""
        from retrieval.jobs.app import build_app
        from retrieval.jobs.staging import load_progress

        app = build_app(self.settings)
        with app.open():
            self._follow(app, [job_id], f"sync (job {job_id})", progress,
                         counts=lambda: load_progress(self.settings, job_id), keep_following=keep_following)
        return SyncReport.model_validate(self._result(job_id, "sync"))

    def running_sync(self) -> int | None:
        """The id of the sync job running (else waiting) on the queue; None when there is none or no queue."""
        if not self.queued:
            return None
        from retrieval.jobs.app import SYNC_TASK, build_app

        app = build_app(self.settings)
        with app.open():
            for status in ("doing", "todo"):
                ids = sorted(job.id for job in app.job_manager.list_jobs(task=SYNC_TASK, status=status) if job.id)
                if ids:
                    return ids[0]
        return None

    def _defer_sync(self) -> int:
        from procrastinate.exceptions import AlreadyEnqueued

        from retrieval.jobs.app import SYNC_LOCK, SYNC_TASK, build_app

        app = build_app(self.settings)
        with app.open():
            try:
                return app.tasks[SYNC_TASK].configure(queueing_lock=SYNC_LOCK).defer()
            except AlreadyEnqueued:
                raise BusyError("A sync is already waiting on the job queue; it will fetch everything new.",
                                hint="Wait for it (`paperbot doctor` shows the queue), or check that a "
                                     "`paperbot worker` is running.", activity="sync") from None

    def repair(self, *, force: bool = False, progress: Callable[[JobProgress], None] | None = None,
               ) -> ConsistencyReport:
        """The index re-indexed where it disagrees (``Assistant.repair``): one job on the queue
        (never at the same time as a sync), else in this process."""
        from retrieval.index.maintenance import ConsistencyReport
        from retrieval.jobs.app import REPAIR_TASK

        if not self.queued:
            return self.assistant.upkeep.repair(force=force)
        result = self._one_job(REPAIR_TASK, "repair", progress, force=force)
        names = {item.name for item in dataclasses.fields(ConsistencyReport)}
        return ConsistencyReport(**{key: value for key, value in result.items() if key in names})

    def _one_job(self, task: str, label: str, progress: Callable[[JobProgress], None] | None,
                 **kwargs: Any) -> dict[str, Any]:
        from retrieval.jobs.app import build_app

        app = build_app(self.settings)
        with app.open():
            job_id = app.tasks[task].defer(**kwargs)
            self._follow(app, [job_id], f"{label} (job {job_id})", progress)
        return self._result(job_id, label)

    def _result(self, job_id: int, label: str) -> dict[str, Any]:
        from retrieval.jobs.staging import load_result

        result = load_result(self.settings, job_id)
        if result is None:
            raise StorageError(f"The {label} job {job_id} finished without leaving its report.",
                               hint="See the worker's log for that job id.")
        return result

    # --- following jobs -------------------------------------------------------------------------

    def _follow(self, app: App, job_ids: Sequence[int], label: str, progress: Callable[[JobProgress], None] | None,
                *, counts: Callable[[], tuple[int, int, str]] | None = None,
                keep_following: Callable[[], bool] | None = None) -> None:
        """Wait until every job ended; ``progress`` is told each change of state and of ``counts()``
        (done, total, what was last done)."""
        last: JobProgress | None = None
        while True:
            states = [app.job_manager.get_job_status(job_id).value for job_id in job_ids]
            failed = [job_id for job_id, state in zip(job_ids, states, strict=True)
                      if state in ("failed", "cancelled", "aborted")]
            if failed:
                raise StorageError(f"The {label} job(s) {', '.join(map(str, failed))} failed after their retries; "
                                   "what they wrote before failing stays written.",
                                   hint="See the worker logs for those job ids, fix the cause and submit again "
                                        "(nothing is duplicated).")
            state = ("succeeded" if all(s == "succeeded" for s in states)
                     else "running" if any(s in ("doing", "succeeded") for s in states) else "waiting")
            done, total, last_done = counts() if counts else (0, 0, "")
            now = JobProgress(job=label, state=state, done=done, total=total,
                              message=last_done if state != "waiting" else "waiting for a `paperbot worker`")
            if progress is not None and now != last:
                progress(now)
            last = now
            if state == "succeeded":
                return
            if keep_following is not None and not keep_following():
                raise StoppedFollowingError(f"Stopped following the {label} job(s); they run on.",
                                            hint="Their reports stay in the database (job_results).")
            time.sleep(POLL_SECONDS * max(1.0, len(job_ids) / 8))  # other processes' progress: polled, gently

    # --- the queue ------------------------------------------------------------------------------

    def status(self) -> QueueStatus:
        """The queue's jobs and workers (``paperbot doctor``); ``configured=False`` without a queue."""
        if not self.queued:
            return QueueStatus(configured=False)
        from retrieval.jobs.app import build_app
        from retrieval.jobs.status import queue_status
        from retrieval.storage.database import open_database

        open_database(self.settings)  # the queue's tables exist once the schema is current
        app = build_app(self.settings)
        with app.open():
            return queue_status(self.settings, app)

    def run_worker(self, *, concurrency: int = 1, on_start: Callable[[str], None] | None = None) -> None:
        """Run this process as a queue worker until SIGTERM/SIGINT (``worker.run_worker``)."""
        from retrieval.jobs.worker import run_worker

        run_worker(self.assistant, concurrency=concurrency, on_start=on_start)


def _scholars_done(progress: Callable[[JobProgress], None] | None) -> Callable[[SyncEvent], None] | None:
    """An in-process sync's events as the ``JobProgress`` a queued one reports: scholars done of total."""
    if progress is None:
        return None
    report = progress

    def on_event(event: SyncEvent) -> None:
        if event.stage == "done" or (event.stage == "start" and event.position == 1):
            done = event.position if event.stage == "done" else 0
            report(JobProgress(job="sync", state="running", done=done, total=event.total, message=event.scholar))

    return on_event
