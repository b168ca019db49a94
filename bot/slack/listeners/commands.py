"""The ``/paperbot`` slash command: ack at once, then dispatch like any other surface."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App
from slack_sdk import WebClient

from bot.slack.blocks import error_text, help_blocks
from bot.slack.command_text import parse_command
from bot.slack.deps import SlackDeps
from bot.slack.formatting import fallback_text, incoming_text, sections
from bot.slack.handlers import handle
from bot.slack.jobs import Target
from retrieval.errors import InputError

SLASH_COMMAND = "/paperbot"


def register(app: App, deps: SlackDeps) -> None:
    @app.command(SLASH_COMMAND)
    def on_command(ack: Ack, command: dict[str, Any], client: WebClient) -> None:
        try:
            parsed = parse_command(incoming_text(command.get("text")))
        except InputError as exc:
            ack(response_type="ephemeral", text=fallback_text(exc.user_message),
                blocks=sections(error_text(exc.user_message, exc.hint)))
            return
        if parsed.verb == "help":
            ack(response_type="ephemeral", text="How to use paperbot", blocks=help_blocks())
            return
        ack()
        target = Target(
            channel=command["channel_id"], user=command["user_id"], team=command.get("team_id"),
            response_url=command.get("response_url"),
        )
        handle(deps, client, parsed, target)
