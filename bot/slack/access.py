"""Who may use the bot: optional allow-lists of workspaces, channels and users.

Each list is off when empty (``PAPERBOT_SLACK_ALLOWED_TEAMS`` / ``_CHANNELS`` / ``_USERS``).
When set, a request must match every list that is set. Direct messages with the bot (channel
ids starting with ``D``) are governed by the user list only: their ids are per person and
cannot sensibly be listed in advance.

The middleware answers refused requests itself, politely and without saying which list
failed (that would tell an outsider how the bot is configured).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt import BoltResponse
from slack_sdk import WebClient

from bot.slack.jobs import response_client
from retrieval.config import Settings

log = logging.getLogger(__name__)

REFUSAL = (
    "Sorry, I'm not enabled for you here. If you think you should have access, "
    "ask the person who runs paperbot to add this workspace, channel or user to its allow-lists."
)


@dataclass(frozen=True)
class Requester:
    team: str | None
    channel: str | None
    user: str | None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _dict(value: object) -> dict[str, Any]:
    """A payload part that should be an object, or an empty one."""
    return value if isinstance(value, dict) else {}


def _id(value: object) -> str | None:
    if isinstance(value, dict):
        return _str(value.get("id"))
    return _str(value)


def requester_of(body: dict[str, Any]) -> Requester:
    """Workspace, channel and user of an event, slash command or interaction payload."""
    event = _dict(body.get("event"))
    container = _dict(body.get("container"))
    team = _str(body.get("team_id")) or _id(body.get("team")) or _str(event.get("team"))
    channel = (
        _str(event.get("channel")) or _str(body.get("channel_id")) or _id(body.get("channel"))
        or _str(container.get("channel_id"))
    )
    user = _str(event.get("user")) or _str(body.get("user_id")) or _id(body.get("user"))
    return Requester(team=team, channel=channel, user=user)


def is_allowed(settings: Settings, requester: Requester) -> bool:
    if settings.slack_allowed_teams and requester.team not in settings.slack_allowed_teams:
        return False
    if settings.slack_allowed_users and requester.user not in settings.slack_allowed_users:
        return False
    if settings.slack_allowed_channels and not (requester.channel or "").startswith("D"):  # a DM is no channel
        return requester.channel in settings.slack_allowed_channels
    return True


def access_middleware(settings: Settings, client: WebClient, background: Callable[[Callable[[], None]], object]) -> Callable[..., Any]:
    """Bolt middleware: refused requests get a polite answer and never reach a listener.

    ``background`` runs the refusal message off the request thread (Slack needs the ack fast).
    """

    def check_access(body: dict[str, Any], next: Callable[[], Any]) -> Any:
        requester = requester_of(body)
        if requester.user is None or is_allowed(settings, requester):
            return next()
        log.info("refused %s in %s/%s", requester.user, requester.team, requester.channel)
        if body.get("command"):
            payload = {"response_type": "ephemeral", "text": REFUSAL}
            return BoltResponse(status=200, body=json.dumps(payload), headers={"content-type": "application/json"})
        if body.get("type") == "block_actions":
            url = _str(body.get("response_url"))
            if url:
                background(lambda: _respond(url))
            return BoltResponse(status=200, body="")
        event = _dict(body.get("event"))
        if _addressed_to_bot(event) and requester.channel:
            thread = _str(event.get("thread_ts")) or _str(event.get("ts"))
            background(lambda: _post(client, requester, thread))
        return BoltResponse(status=200, body="")

    return check_access


def _addressed_to_bot(event: dict[str, Any]) -> bool:
    if event.get("type") == "app_mention":
        return True
    return event.get("type") == "message" and event.get("channel_type") == "im" and not event.get("subtype") \
        and not event.get("bot_id")


def _post(client: WebClient, requester: Requester, thread_ts: str | None) -> None:
    try:
        client.chat_postMessage(channel=requester.channel or "", thread_ts=thread_ts, text=REFUSAL,
                                unfurl_links=False, unfurl_media=False)
    except Exception:  # a refusal that cannot be delivered is only logged
        log.warning("could not deliver an access refusal", exc_info=True)


def _respond(url: str) -> None:
    try:
        response_client(url).send(text=REFUSAL, response_type="ephemeral", replace_original=False)
    except Exception:
        log.warning("could not deliver an access refusal", exc_info=True)
