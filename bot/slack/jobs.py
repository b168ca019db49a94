"""Running slow requests: queue, working indicator, progressive message, errors.

``submit`` puts a unit of work on the ``WorkQueue`` and, when it has to wait, posts "you're
in position N" where the answer will appear. The work receives a :class:`Reply`: one Slack
message that shows progress (reusing the queue notice), streams text through throttled
``chat.update`` calls, and finally becomes the result, continuing into further messages when
the content exceeds Slack's limits.

Errors never escape as raw exceptions: a ``PaperbotError`` shows its ``user_message``; anything
else is logged with a short reference id and the user sees an apology with that id.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
from slack_sdk.webhook import WebhookClient

from bot.slack.blocks import WORKING_TEXT, apology_text, error_text, queued_text
from bot.slack.deliveries import Delivery
from bot.slack.deps import SlackDeps
from bot.slack.formatting import Block, context, fallback_text, paginate, redact, sections
from bot.slack.queue import QueueFullError
from retrieval.errors import PaperbotError

log = logging.getLogger(__name__)

WORKING_REACTION = "hourglass_flowing_sand"
# chat.postMessage errors after which the reply goes to the slash command's response_url
_CANNOT_POST = {"not_in_channel", "channel_not_found", "is_archived", "restricted_action"}


@dataclass
class Target:
    """Where a reply goes and on whose behalf."""

    channel: str
    user: str
    thread_ts: str | None = None  # None: the reply starts a new top-level message (slash commands)
    team: str | None = None
    react_to: str | None = None  # the user's message that shows the working reaction
    response_url: str | None = None  # slash commands: fallback when the bot cannot post here
    delivery: Delivery | None = None  # the claimed event this replies to (``bot/slack/deliveries.py``)


def new_reference() -> str:
    return secrets.token_hex(4)


def response_client(url: str) -> WebhookClient:
    """A client for a slash command's or button's ``response_url``, retrying 429s like the Web API."""
    return WebhookClient(url, retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=2),
                                              RateLimitErrorRetryHandler(max_retry_count=3)])


class Reply:
    """One reply: a progress message that becomes the result (see module docstring)."""

    def __init__(self, deps: SlackDeps, client: WebClient, target: Target, *, message_ts: str | None = None) -> None:
        self.deps = deps
        self.client = client
        self.target = target
        self.message_ts = message_ts
        self.via_response_url = False
        self._last_update: float | None = None

    @property
    def thread_ts(self) -> str | None:
        """The thread everything of this reply goes into."""
        return self.target.thread_ts or self.message_ts

    # --- indicator ---------------------------------------------------------------------------

    def indicator_on(self) -> None:
        if self.target.react_to:
            self._reaction("reactions_add")

    def indicator_off(self) -> None:
        if self.target.react_to:
            self._reaction("reactions_remove")

    def _reaction(self, method: str) -> None:
        try:
            getattr(self.client, method)(channel=self.target.channel, timestamp=self.target.react_to, name=WORKING_REACTION)
        except SlackApiError as exc:  # cosmetic: missing scope, already reacted, message deleted
            log.debug("%s failed: %s", method, exc.response.get("error"))

    # --- the progress message ----------------------------------------------------------------

    def begin(self, intro: Sequence[Block] = ()) -> None:
        """Show that work started: the queue notice (or a new message) turns into "Working on it"."""
        blocks = [*intro, *sections(WORKING_TEXT)]
        if self.message_ts:
            self._update(blocks, WORKING_TEXT)
            self._remember_thread()
            return
        try:
            self.message_ts = self._post(blocks, WORKING_TEXT)
        except SlackApiError as exc:
            if not self._can_fall_back(exc):
                raise
            self.via_response_url = True
            self._respond(blocks, WORKING_TEXT)
            return
        if self.target.delivery is not None:  # a replica taking the event over answers into it
            self.target.delivery.remember_reply(self.message_ts)
        self._remember_thread()

    def stream(self, blocks: Sequence[Block], fallback: str) -> bool:
        """Show partial content if ≥ ``update_interval`` passed since the last update; True if shown.

        ``chat.update`` is rate-limited per method (Tier 3), so only updates count here.
        """
        if self.via_response_url or self.message_ts is None:
            return False
        now = self.deps.clock()
        if self._last_update is not None and now - self._last_update < self.deps.update_interval:
            return False
        self._update(blocks, fallback_text(fallback))
        return True

    def status(self, blocks: Sequence[Block], fallback: str) -> bool:
        """Show what the work waits for (a model reading the records) if the update slot is free;
        True if shown. It does not hold the slot: the answer's first text may follow at once, so
        a fast model's words are not delayed by the status it made obsolete."""
        shown = self.stream(blocks, fallback)
        if shown:
            self._last_update = None
        return shown

    def finish(self, blocks: Sequence[Block], *, fallback: str, footer: Sequence[Block] = ()) -> list[str]:
        """Replace the progress message with the result; overflow continues in the thread."""
        pages = paginate(blocks, footer=footer)
        text = fallback_text(fallback)
        if self.via_response_url:
            for page in pages:
                self._respond(page, text)
            return []
        posted: list[str] = []
        first, *rest = pages
        if self.message_ts:
            self._wait_for_update_slot()
            self._update(first, text)
            posted.append(self.message_ts)
        else:
            self.message_ts = self._post(first, text)
            posted.append(self.message_ts)
        posted.extend(self._post(page, text, thread_ts=self.thread_ts) for page in rest)
        self._remember_thread()
        return posted

    def _remember_thread(self) -> None:
        """From now on, untagged messages in this thread are follow-ups for the bot."""
        if self.thread_ts:
            self.deps.store.remember_thread(self.target.channel, self.thread_ts)

    def fail(self, text: str) -> None:
        """Show a (pre-escaped) error in place of the progress message; never raises."""
        blocks = sections(text)
        plain = "Sorry, I could not answer this."
        try:
            if self.via_response_url:
                self._respond(blocks, plain)
            elif self.message_ts:
                self._update(blocks, plain)
            else:
                self._post(blocks, plain)
        except Exception:
            log.warning("could not deliver an error message", exc_info=True)

    def note(self, text: str) -> None:
        """A short extra line in the reply's thread (pre-escaped mrkdwn)."""
        if self.via_response_url:
            self._respond([context(text)], text)
        else:
            self._post([context(text)], text, thread_ts=self.thread_ts)

    def upload(self, files: Sequence[Path] = (), *, content: str | None = None, filename: str = "",
               title: str = "", comment: str | None = None) -> bool:
        """Attach files (or one text file from ``content``) in the reply's thread (files_upload_v2)."""
        if self.via_response_url:
            self.note("I can attach files only in channels I'm a member of: invite me with `/invite @paperbot`.")
            return False
        if content is not None:
            self.client.files_upload_v2(
                content=content, filename=filename, title=title or filename, channel=self.target.channel,
                thread_ts=self.thread_ts, initial_comment=comment,
            )
            return True
        uploads = [{"file": str(path), "filename": path.name, "title": path.stem.replace("_", " ")} for path in files]
        if not uploads:
            return False
        self.client.files_upload_v2(
            file_uploads=uploads, channel=self.target.channel, thread_ts=self.thread_ts, initial_comment=comment,
        )
        return True

    # --- Web API -----------------------------------------------------------------------------

    def _post(self, blocks: Sequence[Block], text: str, *, thread_ts: str | None = None) -> str:
        response = self.client.chat_postMessage(
            channel=self.target.channel, thread_ts=thread_ts or self.target.thread_ts, text=text,
            blocks=list(blocks), unfurl_links=False, unfurl_media=False,
        )
        return str(response["ts"])

    def _update(self, blocks: Sequence[Block], text: str) -> None:
        assert self.message_ts is not None, "only a posted message is updated"
        self.client.chat_update(channel=self.target.channel, ts=self.message_ts, text=text, blocks=list(blocks), parse="none")
        self._last_update = self.deps.clock()

    def _wait_for_update_slot(self) -> None:
        if self._last_update is None:
            return
        remaining = self.deps.update_interval - (self.deps.clock() - self._last_update)
        if remaining > 0:
            self.deps.sleep(remaining)

    def _can_fall_back(self, exc: SlackApiError) -> bool:
        return bool(self.target.response_url) and exc.response.get("error") in _CANNOT_POST

    def _respond(self, blocks: Sequence[Block], text: str) -> None:
        assert self.target.response_url
        response_client(self.target.response_url).send(
            text=text, blocks=list(blocks), response_type="ephemeral", replace_original=False,
            unfurl_links=False, unfurl_media=False,
        )


Work = Callable[[Reply], None]


def run_safely(reply: Reply, work: Work) -> None:
    """Run ``work`` with the working indicator; turn every failure into a message for the user."""
    reply.indicator_on()
    try:
        work(reply)
    except PaperbotError as exc:
        log.info("request ended with %s: %s", type(exc).__name__, exc.user_message)
        reply.fail(error_text(redact(exc.user_message, reply.deps.secrets),
                              redact(exc.hint, reply.deps.secrets) if exc.hint else None))
    except Exception:
        reference = new_reference()
        log.exception("request failed [ref %s]", reference)
        reply.fail(apology_text(reference))
    finally:
        reply.indicator_off()


def submit(deps: SlackDeps, client: WebClient, target: Target, work: Work) -> int:
    """Queue ``work`` for ``target.user``; returns the position shown (0 = started at once).

    The event's delivery (``target.delivery``) is held until the reply is finished (answered or
    failed with a message); a job dropped at shutdown never releases it, so its claim stays open
    for another replica. An event taken over from a stopped replica is answered into the message
    that replica had posted (``Delivery.reply_ts``), with no new queue notice.
    """
    delivery = target.delivery
    resumed_ts = delivery.reply_ts if delivery is not None else None
    notice_done = threading.Event()
    notice: dict[str, str | None] = {"ts": resumed_ts}

    def job() -> None:
        notice_done.wait(deps.queue_notice_wait)
        if delivery is not None and not delivery.still_ours():
            return  # taken over by another replica while it waited: the answer is theirs (never settled here)
        run_safely(Reply(deps, client, target, message_ts=notice["ts"]), work)
        if delivery is not None:
            delivery.release()

    if delivery is not None:
        delivery.hold()
    try:
        position = deps.queue.submit(target.user, job)
    except QueueFullError as exc:
        notify(client, target, sections(error_text(exc.user_message, exc.hint)), exc.user_message)
        if delivery is not None:
            delivery.release()  # refused with a message: answered
        return -1
    try:
        if position > 0 and resumed_ts is None:
            notice["ts"] = _post_notice(client, target, queued_text(position))
            if delivery is not None and notice["ts"] is not None:
                delivery.remember_reply(notice["ts"])
    except Exception:
        log.warning("could not post the queue position", exc_info=True)
    finally:
        notice_done.set()
    return position


def _post_notice(client: WebClient, target: Target, text: str) -> str | None:
    try:
        response = client.chat_postMessage(channel=target.channel, thread_ts=target.thread_ts, text=text,
                                           blocks=sections(text), unfurl_links=False, unfurl_media=False)
        return str(response["ts"])
    except SlackApiError as exc:
        if target.response_url and exc.response.get("error") in _CANNOT_POST:
            response_client(target.response_url).send(text=text, response_type="ephemeral", replace_original=False)
            return None
        raise


def notify(client: WebClient, target: Target, blocks: list[Block], text: str, *, public: bool = False) -> None:
    """A short message: via the slash command's response_url when there is one, else in the thread."""
    try:
        if target.response_url:
            response_client(target.response_url).send(
                text=fallback_text(text), blocks=blocks, response_type="in_channel" if public else "ephemeral",
                replace_original=False, unfurl_links=False, unfurl_media=False,
            )
        else:
            client.chat_postMessage(channel=target.channel, thread_ts=target.thread_ts, text=fallback_text(text),
                                    blocks=blocks, unfurl_links=False, unfurl_media=False)
    except Exception:
        reference = new_reference()
        log.exception("could not deliver a message [ref %s]", reference)
