"""`paperbot export`, `paperbot stats`, `paperbot doctor`: see and check what is indexed."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from bot.render import hang, hang_items, model_probe_text
from retrieval.errors import InputError

if TYPE_CHECKING:
    from bot.context import CliContext
    from retrieval.results import ClusterStatus, JobProgress, QueueStatus


def register(subparsers: Subcommands) -> None:
    export = subparsers.add_parser("export", help="print every indexed record with its provenance")
    export.add_argument("--format", choices=("jsonl", "bibtex"), default="jsonl")
    export.set_defaults(handler=run_export, reads_only=True)

    stats = subparsers.add_parser("stats", help="counts by source, year and scholar")
    stats.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    stats.set_defaults(handler=run_stats, reads_only=True)

    doctor = subparsers.add_parser("doctor", help="check (and with --repair fix) consistency of the record store, Chroma "
                                                  "and the lexical index; show the database's schema revision, the "
                                                  "Chroma server, the replicas and the job queue (docs/deploy.md)")
    doctor.add_argument("--repair", action="store_true",
                        help="fix what the check finds (a damaged vector index is rebuilt from the record store)")
    doctor.add_argument("--force", action="store_true",
                        help="with --repair: drop the vectors even when the record store looks lost "
                             "(empty, or missing most of the indexed papers)")
    doctor.add_argument("--no-model", action="store_true",
                        help="do not measure the configured chat model (by default one short request)")
    doctor.add_argument("--queue", action="store_true",
                        help="with --repair and PAPERBOT_JOB_QUEUE: run the repair as a job of a `paperbot worker` "
                             "and wait for it (docs/workers.md); without a queue, here as usual")
    doctor.add_argument("--json", action="store_true", help="print the check (and any repair) as one JSON object")
    doctor.set_defaults(handler=run_doctor)


def run_export(args: argparse.Namespace, ctx: CliContext) -> int:
    for chunk in ctx.assistant.records.export(args.format):
        ctx.stdout.write(chunk)
    return 0


def run_stats(args: argparse.Namespace, ctx: CliContext) -> int:
    stats = ctx.assistant.records.stats()
    per_scholar = ctx.assistant.records.papers_per_scholar()
    payload = {**stats.model_dump(mode="json"), "by_scholar": per_scholar}
    if args.json:
        ctx.out_json(payload)
        return 0
    width = ctx.width
    ctx.out(hang(f"Papers: {stats.papers:,}   Scholars on the roster: {stats.scholars}   "
                 f"Last sync: {stats.last_sync or 'never'}", width))
    ctx.out(hang_items("By source:  ", [f"{k} {v:,}" for k, v in stats.by_source.items()], width))
    ctx.out(hang_items("By year:    ", [f"{k}: {v}" for k, v in stats.by_year.items()], width))
    if per_scholar:
        ctx.out(hang_items("By scholar: ", [f"{k} {v}" for k, v in per_scholar.items()], width))
    if stats.by_file:
        ctx.out(hang_items("By file:    ", [f"{k} {v:,}" for k, v in stats.by_file.items()], width))
    return 0


def run_doctor(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.force and not args.repair:
        raise InputError("--force only applies with --repair.", hint="Run `paperbot doctor --repair --force`.")
    if args.queue and not args.repair:
        raise InputError("--queue only applies with --repair.", hint="Run `paperbot doctor --repair --queue`.")
    if not args.repair and (cluster := ctx.assistant.upkeep.cluster_status()) is not None and not cluster.ok:
        return _without_index(args, ctx, cluster)  # the index check would only repeat the Chroma server's error
    if args.repair and args.queue:
        from retrieval import JobService

        report = JobService(ctx.assistant).repair(force=args.force, progress=_job_lines(ctx))
    elif args.repair:
        with ctx.progress("Repairing (re-embedding where needed)", total=None) as update:
            report = ctx.assistant.upkeep.repair(progress=update, force=args.force)  # under the data dir's writer lock
    else:
        report = ctx.assistant.upkeep.check_consistency()
    database = ctx.assistant.upkeep.database_status()
    queue = _queue_status(ctx)
    cluster = ctx.assistant.upkeep.cluster_status()  # (again after a check: its count is the index's now)
    # the model is measured by a check only (a repair is about the index); it never changes the exit status
    probe = None if (args.repair or args.no_model) else ctx.assistant.upkeep.probe_model()
    if args.json:
        ctx.out_json({**dataclasses.asdict(report), "ok": report.ok,
                      "database": {**dataclasses.asdict(database), "current": database.current},
                      **({"queue": dataclasses.asdict(queue)} if queue is not None else {}),
                      **({"cluster": _cluster_json(cluster)} if cluster is not None else {}),
                      **({"model": dataclasses.asdict(probe)} if probe is not None else {})})
    else:
        ctx.out(str(report))
        if report.encoder_choice:
            ctx.out(report.encoder_choice)
        ctx.out(f"Encoder cache (ONNX exports, auto choice; shared by all data dirs): {ctx.settings.encoder_cache_dir}")
        ctx.out(database.describe())
        if cluster is not None:
            ctx.out(cluster.describe())
        if queue is not None:
            ctx.out(queue.describe())
        if probe is not None:
            ctx.out(model_probe_text(probe, ctx.settings))
    return 0 if (args.repair or report.ok) else 3


def _without_index(args: argparse.Namespace, ctx: CliContext, cluster: ClusterStatus) -> int:
    """``doctor`` while the Chroma server cannot be reached: the database, the replicas, the queue
    and the server's error (with what to do next), no consistency check; exit status 3 as for
    any failed check. ``--json``: ``ok`` false, ``index_checked`` false, no consistency fields."""
    database = ctx.assistant.upkeep.database_status()
    queue = _queue_status(ctx)
    if args.json:
        ctx.out_json({"ok": False, "index_checked": False,
                      "database": {**dataclasses.asdict(database), "current": database.current},
                      **({"queue": dataclasses.asdict(queue)} if queue is not None else {}),
                      "cluster": _cluster_json(cluster)})
    else:
        ctx.out("Index not checked: the Chroma server cannot be reached (below).")
        ctx.out(database.describe())
        ctx.out(cluster.describe())
        if queue is not None:
            ctx.out(queue.describe())
    return 3


def _cluster_json(cluster: ClusterStatus) -> dict[str, object]:
    return {**dataclasses.asdict(cluster), "ok": cluster.ok}


def _queue_status(ctx: CliContext) -> QueueStatus | None:
    """The job queue's state (``JobService.status``) when one is configured; None without one,
    so that `doctor` says and prints nothing new for an installation without a queue."""
    if not ctx.settings.job_queue:
        return None
    from retrieval import JobService

    return JobService(ctx.assistant).status()


def _job_lines(ctx: CliContext) -> Callable[[JobProgress], None]:
    """A job's progress as one line per change of state on stderr."""

    def show(progress: JobProgress) -> None:
        ctx.note(f"{progress.job}: {progress.state}" + (f" ({progress.message})" if progress.message else ""))

    return show
