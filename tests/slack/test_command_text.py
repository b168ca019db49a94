"""Parsing `/paperbot …` text."""

from __future__ import annotations

import pytest

from bot.slack.command_text import Command, parse_command
from retrieval.errors import InputError


@pytest.mark.parametrize(("text", "expected"), [
    ("", Command("help")),
    ("help", Command("help")),
    ("which papers propose X?", Command("ask", text="which papers propose X?")),
    ("ask  which papers -- propose X?", Command("ask", text="which papers -- propose X?")),
    ("summarize Zhao Zhang --since 2020", Command("summarize", text="Zhao Zhang", since=2020)),
    ("summarise 'Zhao Zhang'", Command("summarize", text="Zhao Zhang")),
    ('collaborators optical interconnects --for "Zhao Zhang" --new --limit 5',
     Command("collaborators", text="optical interconnects", for_name="Zhao Zhang", new_only=True, limit=5)),
    ("follow scholar Zhao Zhang", Command("follow", text="scholar Zhao Zhang")),
    ("unfollow 3", Command("unfollow", text="3")),
    ("follows", Command("follows")),
    ("sync", Command("sync")),
    ("explain payload attacks", Command("ask", text="explain payload attacks")),
])
def test_parse(text: str, expected: Command) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("summarize", "needs something"),
    ("summarize Zhang --since last-year", "--since takes a year"),
    ("collaborators optics --limit 500", "--limit takes"),
    ("collaborators optics --bogus", "Unknown option --bogus"),
    ('collaborators "optics', "Unbalanced quotes"),
    ("follow", "needs something"),
    ("sync Zhao Zhang", "syncs every scholar on the roster"),
])
def test_bad_input_names_the_problem(text: str, message: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_command(text)
    assert message in raised.value.user_message
    assert raised.value.hint and "Usage" in raised.value.hint
