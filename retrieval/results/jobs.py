"""What the job queue reports (``retrieval.jobs``): its state for ``paperbot doctor``, and a job's progress."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class WorkerSeen:
    """One ``paperbot worker`` the queue knows: its name (host:pid), how many jobs it runs at
    once, and how long ago it last said it was alive (``stalled``: silent for 3 heartbeats)."""

    worker_id: int
    name: str
    concurrency: int
    seconds_since_heartbeat: float
    stalled: bool


@dataclass(frozen=True)
class QueueStatus:
    """The job queue of a deployment (``paperbot doctor``): jobs by state and the workers seen.

    ``configured`` is False when there is no queue (no PostgreSQL database, or
    ``PAPERBOT_JOB_QUEUE`` unset): jobs then run in the process that asks for them and every
    count is 0. ``waiting``: queued, not started; ``running``: taken by a worker; ``failed``:
    ended in an error after their retries; ``succeeded``: done. ``running_by_task`` names what runs."""

    configured: bool
    waiting: int = 0
    running: int = 0
    failed: int = 0
    succeeded: int = 0
    running_by_task: dict[str, int] = field(default_factory=dict)
    workers: list[WorkerSeen] = field(default_factory=list)

    def describe(self) -> str:
        """Lines for ``paperbot doctor``."""
        if not self.configured:
            return "Job queue: none (jobs run in the process that asks for them)."
        alive = [worker for worker in self.workers if not worker.stalled]
        lines = [f"Job queue: {self.waiting} waiting, {self.running} running, {self.failed} failed, "
                 f"{self.succeeded} succeeded; {len(alive)} worker(s) alive."]
        for worker in self.workers:
            state = "STALLED (its jobs are retried)" if worker.stalled else "alive"
            lines.append(f"  worker {worker.name} (id {worker.worker_id}, {worker.concurrency} at once): {state}, "
                         f"last heartbeat {worker.seconds_since_heartbeat:.0f} s ago")
        if self.waiting and not alive:
            lines.append("  Jobs are waiting and no worker is alive: start one with `paperbot worker`.")
        if self.failed:
            lines.append("  Failed jobs are listed in procrastinate_jobs (status 'failed'); the worker logs name them.")
        return "\n".join(lines)


@dataclass(frozen=True)
class JobProgress:
    """A job's progress as its submitter sees it: ``done`` of ``total`` parts or records, and
    its state (``waiting``, ``running``, ``succeeded``, ``failed``)."""

    job: str
    state: str
    done: int = 0
    total: int = 0
    message: str = ""
