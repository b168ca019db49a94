"""Events: @-mentions, direct messages, untagged follow-ups in answered threads, App Home.

Events are acknowledged by Bolt before these run; listeners only parse and enqueue. Each event
was claimed by this replica (``bot/slack/deliveries.py``); a listener holds its delivery (the
hold taken by ``listener_hold_middleware``) until it returns, and a queued job until its reply is
finished.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient

from bot.slack.blocks import error_text
from bot.slack.command_text import parse_command
from bot.slack.deliveries import Deliveries, Delivery
from bot.slack.deps import SlackDeps
from bot.slack.formatting import incoming_text, mentions_other_user, mentions_user, sections
from bot.slack.handlers import handle
from bot.slack.home import HomeTab
from bot.slack.jobs import Target, notify
from retrieval.errors import InputError

log = logging.getLogger(__name__)


LISTENER_HOLD = "paperbot_listener_hold"  # context key: the listener holds this delivery


def listener_hold_middleware(deliveries: Deliveries) -> Callable[..., Any]:
    """Bolt middleware (the last): an event this replica claimed is held for its listener, which
    Bolt starts after the dispatch returned (``delivering`` releases the hold)."""

    def hold_for_listener(body: dict[str, Any], context: BoltContext, next: Callable[[], Any]) -> Any:
        delivery = deliveries.active(body)
        if delivery is not None:
            delivery.hold()
            context[LISTENER_HOLD] = delivery
        return next()

    return hold_for_listener


@contextmanager
def delivering(context: BoltContext) -> Iterator[Delivery | None]:
    """The listener's delivery, released when the listener returns (whatever happened)."""
    delivery = context.get(LISTENER_HOLD)
    try:
        yield delivery if isinstance(delivery, Delivery) else None
    finally:
        if isinstance(delivery, Delivery):
            delivery.release()


def register(app: App, deps: SlackDeps) -> None:
    home = HomeTab(deps)

    @app.event("app_mention")
    def on_mention(event: dict[str, Any], context: BoltContext, client: WebClient) -> None:
        with delivering(context) as delivery:
            answer_message(deps, client, event, context, delivery=delivery)

    @app.event("app_home_opened")
    def on_home_opened(event: dict[str, Any], context: BoltContext, client: WebClient) -> None:
        with delivering(context):
            if event.get("tab", "home") == "home" and event.get("user"):
                home.publish(client, event["user"])

    @app.event("message")
    def on_message(event: dict[str, Any], context: BoltContext, client: WebClient) -> None:
        with delivering(context) as delivery:
            _on_message(deps, client, event, context, delivery)

    def _on_message(deps: SlackDeps, client: WebClient, event: dict[str, Any], context: BoltContext,
                    delivery: Delivery | None) -> None:
        """Direct messages and thread follow-ups; everything else (edits, joins, bots) is ignored."""
        if event.get("subtype") or event.get("bot_id") or not event.get("user"):
            return
        if event.get("channel_type") == "im":
            answer_message(deps, client, event, context, delivery=delivery)
            return
        thread_ts = event.get("thread_ts")
        if not thread_ts or thread_ts == event.get("ts"):
            return
        bot = context.bot_user_id
        if mentions_user(event.get("text"), bot):
            return  # the app_mention event for the same message answers it
        if mentions_other_user(event.get("text"), bot):
            return  # addressed to someone else in the thread
        if deps.store.is_bot_thread(event.get("channel", ""), thread_ts):
            answer_message(deps, client, event, context, delivery=delivery)


def answer_message(deps: SlackDeps, client: WebClient, event: dict[str, Any], context: BoltContext, *,
                   delivery: Delivery | None = None) -> None:
    """Treat a message as a command or question and reply in its thread."""
    channel, ts, user = event.get("channel"), event.get("ts"), event.get("user")
    if not channel or not ts or not user:
        return
    key = f"message:{channel}:{ts}"
    first = deps.deliveries.first_message(key, delivery)
    if not (deps.deduper.first(key) if first is None else first):
        return  # the same message arrived as another event type
    target = Target(
        channel=channel, user=user, thread_ts=event.get("thread_ts") or ts,
        team=event.get("team") or context.team_id, react_to=ts, delivery=delivery,
    )
    text = incoming_text(event.get("text"), bot_user_id=context.bot_user_id)
    try:
        command = parse_command(text)
    except InputError as exc:
        notify(client, target, sections(error_text(exc.user_message, exc.hint)), exc.user_message)
        return
    handle(deps, client, command, target)
