"""`paperbot sync`: fetch new works of every roster scholar from arXiv, OpenAlex and Crossref."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from retrieval.errors import InputError, PaperbotError

if TYPE_CHECKING:
    from bot.context import CliContext
    from retrieval.results import JobProgress, SyncEvent, SyncReport

NEW_SHOWN = 10


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "sync",
        help="fetch what is new for every scholar on the roster and index it",
        description="For each roster scholar, fetch works since their last sync from arXiv, OpenAlex and "
        "Crossref, merge them with what is indexed, and report what is new.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--queue", action="store_true",
                        help="with PAPERBOT_JOB_QUEUE: run the sync as a job of a `paperbot worker` and wait for "
                             "its report (one sync at a time in the deployment); without a queue, here as usual")
    parser.set_defaults(handler=run)


def _progress(ctx: CliContext, update: Callable[[int, int], None]) -> Callable[[SyncEvent], None]:
    def on_event(event: SyncEvent) -> None:
        if event.stage == "start":
            ctx.note(f"[{event.position}/{event.total}] {event.scholar}")
        elif event.stage == "source":
            ctx.note(f"    {event.source}: {event.count} work(s)")
        elif event.stage == "error":
            ctx.note(f"    {event.source} FAILED after {event.count} work(s): {event.message}")
        elif event.stage == "note":
            ctx.note(f"    {event.message}")
        elif event.stage == "done":
            update(event.position, event.total)

    return on_event


def print_report(report: SyncReport, ctx: CliContext) -> None:
    """The human summary: totals, then per scholar what is new (with titles) and what failed."""
    new_ids = report.new_paper_ids
    titles = {paper.id: paper for paper in ctx.assistant.records.papers(new_ids)} if new_ids else {}
    ctx.out(
        f"Synced {len(report.scholars)} scholar(s): {len(new_ids)} new paper(s), "
        f"{len(report.updated_paper_ids)} updated."
    )
    for scholar in report.scholars:
        fetched = ", ".join(f"{source} {count}" for source, count in scholar.fetched.items()) or "no source"
        ctx.out(f"  {scholar.name}: {len(scholar.new)} new, {len(scholar.updated)} updated (fetched: {fetched})")
        for pid in scholar.new[:NEW_SHOWN]:
            paper = titles.get(pid)
            label = f"{paper.title} ({paper.year or 'n.d.'})" if paper else ""
            ctx.out(f"    + {pid}  {label}".rstrip())
        if len(scholar.new) > NEW_SHOWN:
            ctx.out(f"    ... and {len(scholar.new) - NEW_SHOWN} more (use --json to see all).")
        for failure in scholar.errors:
            ctx.out(f"    ! {failure.message} (kept {failure.fetched_before_failure} work(s) fetched before the failure)")
    if not report.ok:
        ctx.out("Some sources failed; run `paperbot sync` again later to complete (nothing will be duplicated).")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    scholars = ctx.assistant.roster.scholars()
    if not scholars:
        raise InputError(
            "The roster is empty: there is nobody to sync.",
            hint='Add a scholar first: paperbot scholars add "Zhao Zhang" --orcid 0000-0002-1825-0097',
        )
    if args.queue:
        report = _sync_as_job(ctx)
    else:
        with ctx.progress("Syncing scholars", total=len(scholars), unit="scholars") as update:
            report = ctx.assistant.fetching.sync(progress=_progress(ctx, update))
    if report.new_paper_ids and not args.queue:  # a job queues them itself
        try:
            ctx.assistant.follows.note_new_papers(report.new_paper_ids)
        except PaperbotError as exc:
            ctx.note(f"Could not queue follow alerts for the new papers: {exc}")
    if args.json:
        ctx.out_json(report.model_dump(mode="json"))
    else:
        print_report(report, ctx)
    return 0 if report.ok else 2


def _sync_as_job(ctx: CliContext) -> SyncReport:
    """``sync --queue``: one job, followed with a line per change of state (in-process without a queue)."""
    from retrieval import JobService

    def show(progress: JobProgress) -> None:
        ctx.note(f"{progress.job}: {progress.state}" + (f" ({progress.message})" if progress.message else ""))

    return JobService(ctx.assistant).sync(progress=show)
