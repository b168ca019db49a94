"""``/paperbot sync``: a roster sync started from Slack, its progress and outcome in one message.

Who may start one: the user ids of ``PAPERBOT_SLACK_SYNC_USERS``, or everyone the allow-lists
admit when it is ``*``; nobody when it is empty (the default): a sync calls three outside APIs
for every roster scholar and writes the index, so a deployment opts in. Others are told whom to ask.

Without a queue the sync runs on the bot's work queue in this process (``JobService.sync``, what
``paperbot sync`` runs); with one (``PAPERBOT_JOB_QUEUE`` on PostgreSQL) it is a job of a
``paperbot worker``, and this replica follows it from the database (``job_progress``). Either
way one message shows "scholars done / total" (``chat.update``, throttled by ``Reply.stream``),
then becomes the outcome: new papers, and each scholar's failed sources with what to do next.
The new papers go to the follow alerts as a CLI sync's do (``tasks.run_sync`` notes them).

One sync at a time: a second ``/paperbot sync`` while one runs (started here, by another replica,
the schedule or the CLI) is answered with a pointer to the running one, and nothing is queued.

A queued job's message is stored with its id (``slack_jobs``, with the replica following it).
If that replica stops, a live replica's heartbeat (``ReplicaLoop``) takes the row over and
finishes the message from the job's state, so the outcome is not lost with the replica.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from slack_sdk import WebClient
from sqlalchemy import insert, select, update

from bot.slack.blocks import error_text
from bot.slack.formatting import Block, bold, context, escape, sections
from bot.slack.jobs import Reply, Target, notify, run_safely, submit
from retrieval import JobService
from retrieval.errors import InputError, PaperbotError, StoppedFollowingError
from retrieval.results import JobProgress, SyncReport
from retrieval.storage.schema import cluster_members, slack_jobs

if TYPE_CHECKING:
    from bot.slack.deps import SlackDeps

log = logging.getLogger(__name__)

NEW_SHOWN = 5  # titles listed per scholar in the outcome
NEXT_STEP = "Run `/paperbot sync` again later to complete it: nothing found so far is fetched or posted twice."


def may_start_sync(deps: SlackDeps, user: str) -> bool:
    """Whether ``user`` may start a sync (module docstring: ``PAPERBOT_SLACK_SYNC_USERS``)."""
    allowed = deps.settings.slack_sync_users
    return "*" in allowed or user in allowed


def refusal_text(deps: SlackDeps) -> str:
    """Why a sync was refused and whom to ask (mrkdwn)."""
    people = [user for user in deps.settings.slack_sync_users if user != "*"]
    if people:
        names = ", ".join(f"<@{escape(user)}>" for user in people)
        text = f":no_entry: Only {names} can start a sync of the roster here: ask one of them."
    else:
        text = (":no_entry: Syncs are not started from Slack in this deployment. Ask the person who runs "
                "paperbot to run `paperbot sync`, or to add you to `PAPERBOT_SLACK_SYNC_USERS`.")
    if deps.settings.sync_interval_hours:
        text += f"\nThe roster is also synced every {deps.settings.sync_interval_hours:g} hour(s) anyway."
    return text


def start_sync(deps: SlackDeps, client: WebClient, target: Target) -> None:
    """``/paperbot sync`` for ``target``: refused, pointed at the running sync, or started (never raises)."""
    try:
        if not may_start_sync(deps, target.user):
            notify(client, target, sections(refusal_text(deps)), "You cannot start a sync")
            return
        if not deps.assistant.roster.scholars():
            raise InputError("The roster is empty: there is nobody to sync.",
                             hint='Whoever runs paperbot adds scholars: paperbot scholars add "Name" --orcid ...')
        running = _running_elsewhere(deps)
        if running is None and not deps.syncs.claim(target.user, target.channel):
            running = _running_text(deps.syncs.channel, deps.syncs.message_ts, deps.syncs.user)
        if running is not None:
            notify(client, target, sections(running), "A sync is already running")
            return
    except PaperbotError as exc:
        notify(client, target, sections(error_text(exc.user_message, exc.hint)), exc.user_message)
        return
    if submit(deps, client, target, _sync_work(deps, target)) < 0:  # the work queue refused it (said so)
        deps.syncs.release()


def _running_elsewhere(deps: SlackDeps) -> str | None:
    """What to say about a sync job on the queue (from any replica, the schedule or the CLI)."""
    job_id = JobService(deps.assistant).running_sync()
    if job_id is None:
        return None
    row = SyncMessages(deps).find(job_id)
    if row is None:
        return (f":arrows_counterclockwise: A sync is already running (job {job_id}, started by the schedule "
                "or the command line). I won't start a second one: it fetches everything new, and new papers "
                "reach the follows of each channel.")
    return _running_text(row.channel, row.message_ts, row.user, job_id=job_id)


def _running_text(channel: str | None, message_ts: str | None, user: str | None, *, job_id: int | None = None) -> str:
    where = f" (<{message_link(channel, message_ts)}|see its progress>)" if channel and message_ts else ""
    who = f" started by <@{escape(user)}>" if user else ""
    job = f" as job {job_id}" if job_id is not None else ""
    return (f":arrows_counterclockwise: A sync is already running{job}{who}{where}. I won't start a second one: "
            "it fetches everything new.")


def message_link(channel: str, ts: str) -> str:
    """The Slack link of message ``ts`` in ``channel``."""
    return f"https://slack.com/archives/{channel}/p{ts.replace('.', '')}"


def _sync_work(deps: SlackDeps, target: Target) -> Callable[[Reply], None]:
    def work(reply: Reply) -> None:
        messages = SyncMessages(deps)
        job: dict[str, int] = {}

        def on_queued(job_id: int) -> None:
            job["id"] = job_id
            deps.syncs.follow(job_id)  # before it is stored: never taken for a restarted replica's
            if reply.message_ts is not None:  # not via response_url: another replica can finish it
                messages.save(job_id, target, reply.message_ts)

        try:
            reply.begin([context(f"<@{escape(target.user)}> started a sync of the roster.")])
            deps.syncs.started(reply.message_ts)
            report = JobService(deps.assistant).sync(progress=_shown(deps, reply, target.user), on_queued=on_queued,
                                                     keep_following=lambda: not deps.queue.closed)
        except StoppedFollowingError:
            log.info("stopping: sync job %s left to another replica", job.get("id"))
            return  # the message keeps its last progress; a live replica finishes it (``resume_orphaned_syncs``)
        except PaperbotError:
            _done(messages, job.get("id"))  # the failure is shown in the message (``run_safely``)
            raise
        finally:
            deps.syncs.release()
        _finish(deps, reply, report)
        _done(messages, job.get("id"))

    return work


def _shown(deps: SlackDeps, reply: Reply, user: str | None) -> Callable[[JobProgress], None]:
    def show(progress: JobProgress) -> None:
        blocks = progress_blocks(progress, user)
        reply.stream(blocks, "Syncing the roster")

    return show


def progress_blocks(progress: JobProgress, user: str | None) -> list[Block]:
    """The message while a sync runs: scholars done of total, or what it waits for."""
    if progress.state == "waiting":
        line = f":hourglass: The sync is queued, {escape(progress.message or 'waiting for a worker')}."
    elif progress.total:
        line = f":arrows_counterclockwise: Syncing the roster: {progress.done}/{progress.total} scholars done"
        line += f" (last: {bold(progress.message)})." if progress.message and progress.done else "."
    else:
        line = ":arrows_counterclockwise: Syncing the roster…"
    started = [context(f"<@{escape(user)}> started a sync of the roster.")] if user else []
    return [*started, *sections(line)]


def _finish(deps: SlackDeps, reply: Reply, report: SyncReport) -> None:
    new_ids = report.new_paper_ids
    titles = {paper.id: paper.title for paper in deps.assistant.records.papers(new_ids)} if new_ids else {}
    blocks = outcome_blocks(report, titles)
    reply.finish(blocks, fallback=f"Sync finished: {len(new_ids)} new paper(s)")


def outcome_blocks(report: SyncReport, titles: dict[str, str]) -> list[Block]:
    """A finished sync: totals, then per scholar what is new and which sources failed, and what next."""
    new_ids = report.new_paper_ids
    mark = ":white_check_mark:" if report.ok else ":warning:"
    lines = [f"{mark} *Sync finished*: {len(report.scholars)} scholar(s), {len(new_ids)} new paper(s), "
             f"{len(report.updated_paper_ids)} updated."]
    for scholar in report.scholars:
        line = f"• {bold(scholar.name)}: {len(scholar.new)} new"
        for pid in scholar.new[:NEW_SHOWN]:
            line += f"\n    + {escape(titles.get(pid) or pid)}"
        if len(scholar.new) > NEW_SHOWN:
            line += f"\n    … and {len(scholar.new) - NEW_SHOWN} more"
        for failure in scholar.errors:
            line += (f"\n    :warning: {escape(failure.message)} (kept {failure.fetched_before_failure} "
                     "work(s) fetched before the failure)")
        lines.append(line)
    if new_ids:
        lines.append("_New papers are posted in the channels that follow their scholar or topic._")
    if not report.ok:
        lines.append(f":point_right: Some sources failed. {NEXT_STEP}")
    return sections("\n".join(lines))


# --- the stored messages of queued syncs ------------------------------------------------------


class SyncMessages:
    """``slack_jobs``: the message of each queued sync started from Slack, and its follower."""

    def __init__(self, deps: SlackDeps) -> None:
        self.database = deps.store.database
        self.replica = deps.deliveries.replica
        self.syncs = deps.syncs

    def save(self, job_id: int, target: Target, message_ts: str) -> None:
        """Remember that this replica shows job ``job_id`` in ``message_ts``."""
        with self.database.writing("remember a sync's Slack message") as db:
            db.execute(insert(slack_jobs).values(job_id=job_id, channel=target.channel, message_ts=message_ts,
                                                 thread_ts=target.thread_ts, requested_by=target.user, replica=self.replica,
                                                 created_at=_now()))

    def find(self, job_id: int) -> StoredSync | None:
        with self.database.reading("read a sync's Slack message") as db:
            row = db.execute(select(slack_jobs).where(slack_jobs.c.job_id == job_id)).mappings().first()
        return StoredSync(**row) if row is not None else None

    def finish(self, job_id: int) -> None:
        """The outcome (or the failure) of ``job_id`` is shown: nobody needs to follow it again."""
        with self.database.writing("mark a sync's Slack message done") as db:
            db.execute(update(slack_jobs).where(slack_jobs.c.job_id == job_id).values(finished_at=_now()))
        self.syncs.followed(job_id)

    def orphans(self, *, now: float, dead_after: float) -> list[StoredSync]:
        """Unfinished messages whose follower replica is not alive (no heartbeat within ``dead_after``),
        or is this replica's name but not followed by this process (a restart under the same name)."""
        with self.database.reading("read the syncs' Slack messages") as db:
            live = set(db.execute(select(cluster_members.c.id)
                                  .where(cluster_members.c.last_seen >= now - dead_after)).scalars())
            rows = [StoredSync(**row) for row in
                    db.execute(select(slack_jobs).where(slack_jobs.c.finished_at.is_(None))).mappings()]
        mine = [row for row in rows if row.replica == self.replica and not self.syncs.is_following(row.job_id)]
        return [row for row in rows if row.replica not in live and row.replica != self.replica] + mine

    def take(self, row: StoredSync) -> bool:
        """Move ``row`` to this replica; False when another replica took it first."""
        with self.database.writing("take over a sync's Slack message") as db:
            return bool(db.execute(update(slack_jobs).where(
                slack_jobs.c.job_id == row.job_id, slack_jobs.c.replica == row.replica,
                slack_jobs.c.finished_at.is_(None)).values(replica=self.replica)).rowcount)


class StoredSync:
    """One ``slack_jobs`` row."""

    def __init__(self, *, job_id: int, channel: str, message_ts: str, thread_ts: str | None, requested_by: str,
                 replica: str, created_at: str, finished_at: str | None) -> None:
        self.job_id, self.channel, self.message_ts, self.thread_ts = job_id, channel, message_ts, thread_ts
        self.user, self.replica, self.created_at, self.finished_at = requested_by, replica, created_at, finished_at


def resume_orphaned_syncs(deps: SlackDeps, client: WebClient, *, now: float, dead_after: float) -> int:
    """Take over the messages of queued syncs whose replica stopped, and finish each from its job
    (progress, then outcome, in the same message); returns how many were taken over."""
    if not deps.settings.job_queue:
        return 0
    messages = SyncMessages(deps)
    taken = 0
    for row in messages.orphans(now=now, dead_after=dead_after):
        if not messages.take(row):
            continue
        log.info("following sync job %d, left by replica %s", row.job_id, row.replica)
        deps.syncs.follow(row.job_id)
        target = Target(channel=row.channel, user=row.user, thread_ts=row.thread_ts)
        try:
            deps.queue.submit(row.user, _resume_job(deps, client, target, row, messages))
        except PaperbotError as exc:  # the queue is full: the message says so; the job still runs
            log.warning("cannot follow sync job %d: %s", row.job_id, exc.user_message)
            continue
        taken += 1
    return taken


def _resume_job(deps: SlackDeps, client: WebClient, target: Target, row: StoredSync,
                messages: SyncMessages) -> Callable[[], None]:
    def work(reply: Reply) -> None:
        try:
            report = JobService(deps.assistant).follow_sync(row.job_id, progress=_shown(deps, reply, row.user),
                                                            keep_following=lambda: not deps.queue.closed)
        except StoppedFollowingError:
            return  # stopping too: the next live replica takes it over
        except PaperbotError:
            messages.finish(row.job_id)
            raise
        _finish(deps, reply, report)
        messages.finish(row.job_id)

    return lambda: run_safely(Reply(deps, client, target, message_ts=row.message_ts), work)


def _done(messages: SyncMessages, job_id: int | None) -> None:
    if job_id is not None:
        messages.finish(job_id)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
