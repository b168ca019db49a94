"""Bolt listeners, one module per kind; each exposes ``register(app, deps)``."""

from __future__ import annotations

from slack_bolt import App

from bot.slack.deps import SlackDeps
from bot.slack.listeners import actions, commands, events


def register_all(app: App, deps: SlackDeps) -> None:
    commands.register(app, deps)
    actions.register(app, deps)
    events.register(app, deps)  # last: its catch-all "message" listener must come after the rest
