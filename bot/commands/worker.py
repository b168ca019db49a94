"""`paperbot worker`: run the job queue's jobs (syncs, ingest parts, repairs) until stopped.

Needs ``PAPERBOT_JOB_QUEUE`` on a PostgreSQL ``PAPERBOT_DATABASE_URL`` and a Chroma server
(``PAPERBOT_CHROMA_URL``); see docs/workers.md. Progress lines go to stderr: the worker's start,
each job's start and end (named "job ID (task)"), its parts' progress. SIGTERM or Ctrl-C stops
it cleanly: running jobs finish, no new one is taken, exit status 0.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from retrieval.errors import InputError

if TYPE_CHECKING:
    from bot.context import CliContext

# the loggers whose INFO lines are the worker's progress: paperbot's jobs and procrastinate's worker
PROGRESS_LOGGERS = ("retrieval.jobs", "procrastinate.worker")


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "worker",
        help="run queued jobs: syncs, `ingest --jobs` parts, repairs (PAPERBOT_JOB_QUEUE)",
        description="Take jobs from the queue in the PostgreSQL database and run them until stopped (SIGTERM "
        "or Ctrl-C: running jobs finish first). Also queues the scheduled sync (PAPERBOT_SYNC_INTERVAL_HOURS) "
        "once per period for the whole deployment, and puts back the jobs of workers that died. "
        "See docs/workers.md.",
    )
    parser.add_argument("--concurrency", type=int, default=1, metavar="N",
                        help="jobs run at once in this process (default 1; run one worker per host and "
                             "more workers rather than more concurrency for CPU-bound ingests)")
    parser.set_defaults(handler=run)


def _progress_lines() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
    for name in PROGRESS_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.addHandler(handler)
        logger.propagate = False


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    from retrieval import JobService

    if not 1 <= args.concurrency <= 64:
        raise InputError(f"--concurrency must be between 1 and 64 (got {args.concurrency}).")
    service = JobService(ctx.assistant)
    _progress_lines()
    service.run_worker(concurrency=args.concurrency, on_start=lambda name: ctx.note(f"paperbot worker {name}: "
                                                                                   "taking jobs (SIGTERM stops)"))
    ctx.note("paperbot worker: stopped")
    return 0
