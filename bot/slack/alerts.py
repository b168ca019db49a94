"""Follow alerts: post papers that syncs reported as NEW into the channels that follow them.

``paperbot sync`` (any process) hands the ids of new papers to the follows store's queue
(``Assistant.follows.note_new_papers``); the serving bot picks them up every minute, matches
them against the follows and posts each matching paper once per follow. With
``PAPERBOT_SYNC_INTERVAL_HOURS`` set, the bot also runs the sync itself on that schedule.

Every replica of ``paperbot serve`` polls the same queue. Before posting an alert a replica claims
its (follow, paper) pairs in the database (``Assistant.follows.claims``, ``retrieval.alerts.claims``)
and posts only the papers it got; it then records them announced, or gives the claim up when the
post failed for a while (the next pass of any replica retries). An alert too long for one Slack
message goes out as several, each recorded as soon as it is posted, so a retry never repeats a
message that reached the channel. The queued ids are dropped once
every alert made of them is settled: papers another replica is still posting keep them queued,
so that should that replica die, its claim runs out and a later pass posts them.

The scheduled sync (without a job queue) runs once per period for the whole deployment: each
replica's sync falls due every period after its own start, and before running it the replica
claims the period, numbered from the epoch, in the database (``claim_each_period``); the replicas
that find it claimed leave that period's sync to its owner. With a job queue the workers
schedule it instead (``retrieval.jobs.schedule``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.slack.blocks import follow_alert_blocks
from bot.slack.formatting import Block, fallback_text, mark_continued, paginate, truncate
from retrieval.errors import PaperbotError
from retrieval.results import Citation, FollowAlert

if TYPE_CHECKING:
    from bot.slack.store import SlackStore
    from retrieval.assistant import Assistant

log = logging.getLogger(__name__)

LONG_FIELD = 1000  # characters of a title or venue kept when one record would not fit one message

# The channel is gone or the bot was removed: retrying would never succeed.
_PERMANENT = {"channel_not_found", "not_in_channel", "is_archived", "invalid_channel", "restricted_action"}


class FollowAlerts:
    """Matches queued new papers to follows and posts each (follow, paper) once across the replicas
    sharing the database; ``replica`` names this one in the claims (``PAPERBOT_REPLICA_ID``)."""

    def __init__(self, assistant: Assistant, client: WebClient, *, replica: str,
                 clock: Callable[[], float] = time.time) -> None:
        """``clock``: the wall clock (claims are compared across processes and hosts)."""
        self._assistant = assistant
        self._client = client
        self.replica = replica
        self._clock = clock
        self._lock = threading.Lock()  # one pass at a time (scheduler and tests)

    def post_pending(self) -> int:
        """One pass over the queue; returns how many (follow, paper) announcements were posted here.

        Raises ``StorageError`` when the queue or a claim cannot be read or written (nothing of
        this alert was posted; the next pass tries again)."""
        follows = self._assistant.follows
        with self._lock:
            pending = follows.pending()
            if not pending.paper_ids:
                return 0
            posted, complete = 0, True
            for alert in pending.alerts:
                count, settled = self._claim_and_post(alert)
                posted += count
                complete = complete and settled
            if complete:
                follows.done_with(pending.paper_ids)
            return posted

    def _claim_and_post(self, alert: FollowAlert) -> tuple[int, bool]:
        """Claim, post and record one alert: (papers posted here, whether the alert is settled:
        posted or dropped, by this replica or another).

        An alert too long for one Slack message goes out as several (``alert_messages``), each
        recorded as soon as it is posted: a failure or a crash part way leaves only the papers not
        yet posted to be retried, never the messages already in the channel."""
        claims = self._assistant.follows.claims
        follow = alert.follow
        claim = claims.claim(follow.id, [paper.id for paper in alert.papers], replica=self.replica, now=self._clock())
        if claim.held:
            log.info("follow alert for %s: %d paper(s) being posted by another replica", follow.label, len(claim.held))
        if not claim.paper_ids:
            return 0, not claim.held
        messages = messages_carrying(alert, set(claim.paper_ids))
        posted = 0
        for number, (part, blocks) in enumerate(messages):
            unposted = [paper.id for later, _ in messages[number:] for paper in later.papers]
            try:
                outcome = self._post(part, blocks)
            except BaseException:
                self._give_up(follow.id, unposted)
                raise
            if outcome is None:  # transient failure: given up here, the next pass of any replica retries
                self._give_up(follow.id, unposted)
                return posted, False
            # posted: these papers are recorded; dropped for good: so is the rest (the channel refuses it)
            ids = [paper.id for paper in part.papers] if outcome else unposted
            try:
                claims.announced(follow.id, ids, replica=self.replica)
            except PaperbotError as exc:  # posted: its claim runs out, and another replica may post it again
                log.warning("follow alert for %s posted to %s but not recorded: %s", follow.label, follow.channel,
                            exc.user_message)
                return posted + outcome, False
            posted += outcome
            if outcome == 0:
                break
        if posted:
            log.info("posted follow alert for %s to %s: %d paper(s)", follow.label, follow.channel, posted)
        return posted, not claim.held

    def _give_up(self, follow_id: int, paper_ids: list[str]) -> None:
        """Release this replica's claims of the papers not posted (a failed release leaves them
        to run out: another replica then posts them)."""
        if not paper_ids:
            return
        try:
            self._assistant.follows.claims.release(follow_id, paper_ids, replica=self.replica)
        except PaperbotError as exc:
            log.warning("cannot release follow alert claims (they run out instead): %s", exc.user_message)

    def _post(self, part: FollowAlert, blocks: list[Block]) -> int | None:
        """Post one message of an alert (``part``: its follow and the papers of this message):
        how many papers it announced (0: dropped for good), None after a transient failure."""
        channel, label = part.follow.channel, part.follow.label
        text = f"New papers matching {label}: " + "; ".join(paper.title for paper in part.papers)
        try:
            self._client.chat_postMessage(channel=channel, text=fallback_text(text), blocks=blocks,
                                          unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            error = exc.response.get("error")
            if error in _PERMANENT:
                log.warning("follow alert for %s in %s dropped: %s", label, channel, error)
                return 0
            log.warning("follow alert for %s in %s failed (%s); will retry", label, channel, error)
            return None
        except (SlackClientError, OSError) as exc:  # Slack out of reach (after the client's own retries)
            log.warning("follow alert for %s in %s failed (%s); will retry", label, channel, type(exc).__name__)
            return None
        return len(part.papers)


def alert_messages(alert: FollowAlert) -> list[tuple[FollowAlert, list[Block]]]:
    """The messages of one alert, in order: each the alert's follow with a run of its papers (as
    many as fit one message within ``paginate``'s limits, at least one) and its blocks, marked
    "(continued, i/n)" like a long answer when there are several."""
    runs: list[tuple[FollowAlert, list[Block]]] = []  # each run with its blocks, kept from the fit check
    for paper in alert.papers:
        if runs:
            longer = FollowAlert(follow=alert.follow, papers=[*runs[-1][0].papers, paper])
            blocks = _blocks(longer)
            if len(paginate(blocks)) == 1:
                runs[-1] = (longer, blocks)
                continue
        single = FollowAlert(follow=alert.follow, papers=[paper])
        runs.append((single, _blocks(single)))
    pages = mark_continued([blocks for _, blocks in runs])
    return [(run, page) for (run, _), page in zip(runs, pages, strict=True)]


def messages_carrying(alert: FollowAlert, paper_ids: set[str]) -> list[tuple[FollowAlert, list[Block]]]:
    """The messages to post for the papers ``paper_ids`` of ``alert``.

    When those papers are exactly the later messages of the whole alert (``posted_before`` and
    then ``papers``: the rest of an alert whose first messages were posted before a failure),
    these are those messages, numbered as in the whole alert: the channel then reads
    "(continued, 2/3)" after the "(1/3)" it already shows. Otherwise (the queue has changed
    since, or another replica holds some of the papers) they are the messages of those papers
    alone, numbered from 1."""
    whole = alert_messages(FollowAlert(follow=alert.follow, papers=[*alert.posted_before, *alert.papers]))
    rest = [(part, blocks) for part, blocks in whole if {paper.id for paper in part.papers} <= paper_ids]
    if {paper.id for part, _ in rest for paper in part.papers} == paper_ids:
        return rest
    return alert_messages(FollowAlert(follow=alert.follow, papers=[p for p in alert.papers if p.id in paper_ids]))


def _blocks(alert: FollowAlert) -> list[Block]:
    citations = [Citation.from_paper(n, paper, 0.0) for n, paper in enumerate(alert.papers, start=1)]
    blocks = follow_alert_blocks(alert.follow.kind, alert.follow.query, citations)
    if len(citations) == 1 and len(paginate(blocks)) > 1:  # one record's title or venue of many pages
        lone = citations[0]
        citations = [lone.model_copy(update={"title": truncate(lone.title, LONG_FIELD),
                                             "venue": truncate(lone.venue, LONG_FIELD) if lone.venue else lone.venue})]
        blocks = follow_alert_blocks(alert.follow.kind, alert.follow.query, citations)
    return blocks


def claim_each_period(store: SlackStore, replica: str, every_seconds: float, *,
                      wall_clock: Callable[[], float] = time.time) -> Callable[[], bool]:
    """A claim of the current period of the scheduled sync for ``replica``: True for the first
    replica to ask in a period (and again for it), False for any other. Periods of
    ``every_seconds`` are counted from the epoch on ``wall_clock``, so that replicas on several
    hosts number them alike; a claim is kept for two periods (``SlackStore.claim_message``)."""

    def claim() -> bool:
        now = wall_clock()
        period = int(now // every_seconds)
        return store.claim_message(f"scheduled-sync:{period}", event_key=replica, now=now, ttl=2 * every_seconds)

    return claim


class AlertScheduler:
    """Background loop: every ``poll_seconds`` post queued alerts; run a sync when one is due
    (and, given ``claim_sync``, only when this replica gets the period's claim)."""

    def __init__(
        self,
        alerts: FollowAlerts,
        *,
        poll_seconds: float = 60.0,
        sync_every_seconds: float | None = None,
        run_sync: Callable[[], Sequence[str]] | None = None,
        note_new: Callable[[Sequence[str]], object] | None = None,
        claim_sync: Callable[[], bool] | None = None,
        clock: Callable[[], float],
    ) -> None:
        self._alerts = alerts
        self._poll = poll_seconds
        self._sync_every = sync_every_seconds
        self._run_sync = run_sync
        self._note_new = note_new
        self._claim_sync = claim_sync
        self._clock = clock
        self._next_sync = clock() + sync_every_seconds if sync_every_seconds else None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> int:
        """One iteration (what the loop runs); returns the announcements posted."""
        if self._next_sync is not None and self._run_sync is not None and self._clock() >= self._next_sync:
            self._next_sync = self._clock() + (self._sync_every or 0)
            try:
                if self._claim_sync is not None and not self._claim_sync():
                    log.info("scheduled sync: this period's sync is another replica's")
                    return self._post_pending()
                new_ids = self._run_sync()
                if self._note_new is not None:
                    self._note_new(new_ids)
                log.info("scheduled sync found %d new paper(s)", len(new_ids))
            except PaperbotError as exc:
                log.warning("scheduled sync failed: %s", exc)
            except Exception:
                log.exception("scheduled sync failed")
        return self._post_pending()

    def _post_pending(self) -> int:
        try:
            return self._alerts.post_pending()
        except Exception:
            log.exception("posting follow alerts failed")
            return 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="paperbot-alerts", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.wait(self._poll):
            self.tick()
