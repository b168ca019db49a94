"""bot/slack/inbound.py: which payloads paperbot reads, and what of them reaches Bolt."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from bot.slack.inbound import Accepted, Ignored, parse_body, read_payload

MENTION = {"type": "app_mention", "user": "UALICE01", "text": "<@UBOT> hi", "ts": "1.1", "channel": "C1",
           "blocks": [{"type": "rich_text"}], "client_msg_id": "x"}


def test_a_handled_payload_reaches_bolt_as_its_validated_fields_only() -> None:
    body = {"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": MENTION, "enterprise": ["E1"],
            "authorizations": [{"team_id": "T1", "user_id": "UBOT", "is_bot": True, "extra": [1]}], "token": "t"}
    result = read_payload(body)
    assert result == Accepted(kind="event", body={
        "type": "event_callback", "team_id": "T1", "event_id": "Ev1",
        "event": {"type": "app_mention", "user": "UALICE01", "text": "<@UBOT> hi", "ts": "1.1", "channel": "C1"},
        "authorizations": [{"team_id": "T1", "user_id": "UBOT", "is_bot": True}],
    })


@pytest.mark.parametrize(("body", "kind"), [
    ({"type": "url_verification", "challenge": "abc", "token": "t"}, "url_verification"),
    ({"command": "/paperbot", "text": "help", "user_id": "U1", "channel_id": "C1", "team_id": "T1"}, "command"),
    ({"type": "block_actions", "user": {"id": "U1"}, "actions": [{"action_id": "a", "value": "v"}]}, "click"),
    ({"type": "event_callback", "event": {"type": "message", "subtype": "message_changed", "message": {"x": 1}}}, "event"),
    ({"type": "event_callback", "event": {"type": "app_home_opened", "user": "U1", "tab": "home"}}, "event"),
])
def test_handled_shapes(body: dict[str, object], kind: str) -> None:
    result = read_payload(body)
    assert isinstance(result, Accepted) and result.kind == kind


@pytest.mark.parametrize(("body", "malformed"), [
    ({"type": "event_callback", "event": None}, True),
    ({"type": "event_callback", "event": [MENTION]}, True),
    ({"type": "event_callback", "event": {**MENTION, "text": 5}}, True),
    ({"type": "event_callback", "event": {**MENTION, "channel": ["C1"]}}, True),
    ({"type": "event_callback", "event": {**MENTION, "ts": 1.1}}, True),
    ({"type": "event_callback", "event": MENTION, "authorizations": {"team_id": "T1"}}, True),
    ({"type": "block_actions", "user": {"id": "U1"}, "actions": []}, True),
    ({"type": "block_actions", "user": "U1", "actions": [{"action_id": "a"}]}, True),
    ({"command": "/paperbot", "text": "help", "channel_id": "C1"}, True),
    ({"type": "url_verification", "challenge": 5}, True),
    ({"type": "event_callback", "event": {**MENTION, "type": "reaction_added"}}, False),
    ({"type": "view_submission", "view": {"id": "V1"}}, False),
    ({"type": ["block_actions"]}, True),
    ({"ssl_check": "1", "token": "x"}, False),
    ({"token": "x", "team_id": "T1"}, True),
    ({}, True),
])
def test_other_shapes_are_ignored(body: dict[str, object], malformed: bool) -> None:
    result = read_payload(body)
    assert isinstance(result, Ignored) and result.malformed is malformed


def test_what_is_logged_of_an_ignored_payload_holds_none_of_its_values() -> None:
    secret_looking = "xoxb-1234-5678-abcdefgh <!channel>"
    result = read_payload({"type": "event_callback", "event": {**MENTION, "text": {"t": secret_looking},
                                                                "channel": [secret_looking]}})
    assert isinstance(result, Ignored)
    assert result.reason == "a payload (event) with fields of the wrong shape: event.channel, event.text"
    assert "xoxb" not in result.reason and "channel>" not in result.reason
    odd_type = read_payload({"type": secret_looking})
    assert isinstance(odd_type, Ignored) and "xoxb" not in odd_type.reason


@pytest.mark.parametrize(("raw", "content_type", "expected"), [
    (b'{"type": "url_verification"}', "application/json", {"type": "url_verification"}),
    (b' {"a": 1}', None, {"a": 1}),
    (b"command=%2Fpaperbot&text=explain+payload+attacks", "application/x-www-form-urlencoded",
     {"command": "/paperbot", "text": "explain payload attacks"}),  # Bolt 1.30 parsed this to {}
    (b"payload=" + quote(json.dumps({"type": "block_actions"})).encode(), "application/x-www-form-urlencoded",
     {"type": "block_actions"}),
    (b"text=&command=", "application/x-www-form-urlencoded", {"text": "", "command": ""}),
])
def test_parse_body(raw: bytes, content_type: str | None, expected: dict[str, object]) -> None:
    assert parse_body(raw, content_type) == expected


@pytest.mark.parametrize(("raw", "content_type"), [
    (b"[1]", "application/json"),
    (b'"x"', "application/json"),
    (b"{", "application/json"),
    (b'{"a": "\xff"}', "application/json"),
    (b"payload=%5B1%5D", "application/x-www-form-urlencoded"),
    (b"payload=nope", "application/x-www-form-urlencoded"),
    (b"[" * 100_000 + b"]" * 100_000, "application/json"),
    (b"", "application/x-www-form-urlencoded"),
    (b"1" * 5000, "application/json"),
])
def test_unreadable_bodies(raw: bytes, content_type: str) -> None:
    assert parse_body(raw, content_type) is None
