"""Parse the text of ``/paperbot …`` into a typed command.

    /paperbot which papers propose X?            -> ask (a bare question)
    /paperbot ask which papers propose X?        -> ask
    /paperbot summarize Zhao Zhang --since 2020  -> summarize
    /paperbot collaborators optical interconnects --for "Zhao Zhang" --new --limit 5
    /paperbot follow [scholar|topic] <text>      -> follow
    /paperbot unfollow <number or text>          -> unfollow
    /paperbot follows | help
    /paperbot sync                               -> sync (the whole roster; no arguments)

Options are only read by the subcommands that take them; a question keeps its text as typed
(a question may well contain "--"). Bad options raise ``InputError`` with the usage line.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from retrieval.errors import InputError

Verb = Literal["ask", "summarize", "collaborators", "follow", "unfollow", "follows", "help", "sync"]

_ALIASES: dict[str, Verb] = {
    "ask": "ask", "q": "ask",
    "summarize": "summarize", "summarise": "summarize", "summary": "summarize",
    "collaborators": "collaborators", "collaborator": "collaborators", "experts": "collaborators",
    "follow": "follow", "unfollow": "unfollow", "follows": "follows", "following": "follows",
    "help": "help", "-h": "help", "--help": "help",
    "sync": "sync",
}
USAGE = {
    "summarize": "`/paperbot summarize <scholar> [--since YEAR]`",
    "collaborators": "`/paperbot collaborators <topic> [--for NAME] [--new] [--limit N]`",
    "follow": "`/paperbot follow [scholar|topic] <name or topic>`",
    "unfollow": "`/paperbot unfollow <number or name>` (see `/paperbot follows`)",
}


@dataclass(frozen=True)
class Command:
    verb: Verb
    text: str = ""
    since: int | None = None
    for_name: str | None = None
    new_only: bool = False
    limit: int = 10


def parse_command(raw: str) -> Command:
    """Read the slash command text; an empty text means help, an unknown first word means ask."""
    text = " ".join((raw or "").split())
    if not text:
        return Command("help")
    first, _, rest = text.partition(" ")
    verb = _ALIASES.get(first.lower())
    if verb is None:
        return Command("ask", text=text)
    rest = rest.strip()
    if verb in ("help", "follows"):
        return Command(verb)
    if verb == "sync":
        if rest:
            raise InputError("`sync` takes no name: it syncs every scholar on the roster.",
                             hint="Usage: `/paperbot sync`")
        return Command(verb)
    if verb == "summarize":
        words, options = _options(rest, verb, {"--since": "value"})
        since = _year(options.get("--since"), verb)
        return Command(verb, text=_required(words, verb), since=since)
    if verb == "collaborators":
        words, options = _options(rest, verb, {"--for": "value", "--new": "flag", "--limit": "value"})
        limit = _int(options.get("--limit"), verb, default=10, low=1, high=25)
        return Command(verb, text=_required(words, verb), for_name=options.get("--for") or None,
                       new_only="--new" in options, limit=limit)
    if verb in ("follow", "unfollow"):
        return Command(verb, text=_required(rest.strip("\"'"), verb))
    return Command("ask", text=_required(rest, "ask"))


def _options(text: str, verb: str, spec: dict[str, str]) -> tuple[str, dict[str, str]]:
    try:
        tokens = shlex.split(text)
    except ValueError:
        raise InputError("Unbalanced quotes in the command.", hint=f"Usage: {USAGE[verb]}") from None
    words: list[str] = []
    options: dict[str, str] = {}
    index = 0
    while index < len(tokens):
        token = tokens[index]
        name, equals, inline = token.partition("=")
        if name in spec:
            if spec[name] == "flag":
                options[name] = "1"
            elif equals:
                options[name] = inline
            elif index + 1 < len(tokens):
                index += 1
                options[name] = tokens[index]
            else:
                raise InputError(f"{name} needs a value.", hint=f"Usage: {USAGE[verb]}")
        elif token.startswith("--"):
            raise InputError(f"Unknown option {token}.", hint=f"Usage: {USAGE[verb]}")
        else:
            words.append(token)
        index += 1
    return " ".join(words), options


def _required(text: str, verb: str) -> str:
    if not text.strip():
        hint = f"Usage: {USAGE[verb]}" if verb in USAGE else "Usage: `/paperbot <question>`"
        raise InputError(f"`{verb}` needs something to work on.", hint=hint)
    return text.strip()


def _year(value: str | None, verb: str) -> int | None:
    if value is None:
        return None
    if not re.fullmatch(r"\d{4}", value.strip()):
        raise InputError(f"--since takes a year like 2020, not {value!r}.", hint=f"Usage: {USAGE[verb]}")
    return int(value)


def _int(value: str | None, verb: str, *, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if not value.strip().isdigit() or not low <= int(value) <= high:
        raise InputError(f"--limit takes a number from {low} to {high}.", hint=f"Usage: {USAGE[verb]}")
    return int(value)
