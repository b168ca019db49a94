"""One dispatcher for every surface: slash command, @-mention, direct message, thread follow-up.

Listeners turn a Slack payload into a ``Command`` and a ``Target``; :func:`handle` runs it.
Slow verbs (ask, summarize, collaborators, sync: ``sync_jobs``) go through the queue; the follow verbs only touch
the follows store (``Assistant.follows``) and answer at once.
"""

from __future__ import annotations

import logging

from slack_sdk import WebClient

from bot.slack import blocks as kit
from bot.slack.answering import ask_work, collaborators_work, summarize_work
from bot.slack.command_text import Command
from bot.slack.deps import SlackDeps
from bot.slack.formatting import bold, escape, sections
from bot.slack.jobs import Target, new_reference, notify, submit
from bot.slack.sync_jobs import start_sync
from retrieval.errors import PaperbotError
from retrieval.results import Follow

log = logging.getLogger(__name__)


def handle(deps: SlackDeps, client: WebClient, command: Command, target: Target) -> None:
    """Run ``command`` for ``target`` (errors of the quick verbs are shown, never raised)."""
    asked_by = target.user if target.thread_ts is None else None
    if command.verb == "ask":
        submit(deps, client, target, ask_work(deps, command.text, asked_by=asked_by))
    elif command.verb == "summarize":
        submit(deps, client, target, summarize_work(deps, command.text, since=command.since, asked_by=asked_by))
    elif command.verb == "collaborators":
        submit(deps, client, target, collaborators_work(
            deps, command.text, for_name=command.for_name, new_only=command.new_only,
            limit=command.limit, asked_by=asked_by,
        ))
    elif command.verb == "help":
        notify(client, target, kit.help_blocks(), "How to use paperbot")
    elif command.verb == "sync":
        start_sync(deps, client, target)
    else:
        try:
            _follow_verbs(deps, client, command, target)
        except PaperbotError as exc:
            notify(client, target, sections(kit.error_text(exc.user_message, exc.hint)), exc.user_message)
        except Exception:
            reference = new_reference()
            log.exception("%s failed [ref %s]", command.verb, reference)
            notify(client, target, sections(kit.apology_text(reference)), "Sorry, something went wrong.")


def _follow_verbs(deps: SlackDeps, client: WebClient, command: Command, target: Target) -> None:
    follows = deps.assistant.follows
    if command.verb == "follows":
        notify(client, target, sections(follows_text(follows.list(target.channel))), "Follows of this channel")
        return
    if command.verb == "unfollow":
        removed = follows.unfollow(target.channel, command.text)
        if removed is None:
            text = f"This channel does not follow {bold(command.text)}. `/paperbot follows` lists what it follows."
            notify(client, target, sections(text), "Nothing to unfollow")
        else:
            text = f"Stopped following {_label(removed)} here."
            notify(client, target, sections(text), f"Unfollowed {removed.query}", public=True)
        return
    added = follows.follow(target.channel, command.text, created_by=target.user)
    follow = added.follow
    if not added.created:
        text = f"This channel already follows {_label(follow)} (#{follow.id})."
        notify(client, target, sections(text), "Already followed")
        return
    text = (
        f":bell: Following {_label(follow)} here (#{follow.id}). After each sync I'll post new matching "
        "papers in this channel, each once."
    )
    if added.guessed:
        other = "topic" if follow.kind == "scholar" else "scholar"
        text += (f"\n_Read as a {follow.kind}. If you meant the {other}: `/paperbot unfollow {follow.id}` then "
                 f"`/paperbot follow {other} {escape(follow.query)}`._")
    notify(client, target, sections(text), f"Following {follow.query}", public=True)


def _label(follow: Follow) -> str:
    return f"{follow.kind} {bold(follow.query)}"


def follows_text(follows: list[Follow]) -> str:
    if not follows:
        return "This channel follows nothing yet. Try `/paperbot follow scholar <name>` or `/paperbot follow topic <words>`."
    lines = [f"#{follow.id} · {_label(follow)}" for follow in follows]
    return "*This channel follows:*\n" + "\n".join(lines) + "\n_`/paperbot unfollow <number>` stops one._"
