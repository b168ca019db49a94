"""What paperbot reads from Slack: the payload shapes it handles, as pydantic models.

Both doors (``http_door`` after the signature check, ``socket_mode`` for each envelope) pass
every payload through :func:`read_payload` before Bolt sees it. A payload of a handled shape
is re-built from its validated fields only (:class:`Accepted`), so Bolt, our middleware and
our listeners never meet a field of an unexpected type: an ``event`` that is ``null``, a list
or a string, a ``text`` that is a number, a ``channel`` that is a list. Anything else is
:class:`Ignored`, and never reaches Bolt: a Slack payload of a type paperbot does not handle
is acknowledged (an empty 200 or envelope ack: Slack does not send it again), a malformed one
(no type, or fields of the wrong shape) gets a 400 over HTTP (an ack in Socket Mode, which has
no status). Either is logged in one line, never with a traceback.

Handled shapes:

* ``url_verification`` (the challenge Bolt echoes);
* ``event_callback`` carrying an ``app_mention``, ``message`` or ``app_home_opened`` event;
* a slash command (form fields; ``command``, ``user_id`` and ``channel_id`` required);
* ``block_actions`` with at least one action (our buttons).

Ignored: every other type (``view_submission``, shortcuts, other events, ``ssl_check``) and a
handled type whose fields have the wrong shape (malformed).

:func:`parse_body` reads the raw bytes of an HTTP request as Slack sends them: JSON for events,
a form for slash commands, a form with one ``payload`` field (JSON) for clicks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, ValidationError

HANDLED_EVENTS = frozenset({"app_mention", "message", "app_home_opened"})


class _Shape(BaseModel):
    """Only the declared fields are kept, each of exactly its type (no coercion)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class _Ref(_Shape):
    """``{"id": ...}`` objects: a user, team, channel or enterprise of an interaction."""

    id: str


class _Authorization(_Shape):
    enterprise_id: str | None = None
    team_id: str | None = None
    user_id: str | None = None
    is_bot: bool | None = None
    is_enterprise_install: bool | None = None


class _Event(_Shape):
    type: str
    user: str | None = None
    text: str | None = None
    channel: str | None = None
    channel_type: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    event_ts: str | None = None
    subtype: str | None = None
    bot_id: str | None = None
    team: str | None = None
    tab: str | None = None


class EventCallback(_Shape):
    type: Literal["event_callback"]
    event: _Event
    event_id: str | None = None
    team_id: str | None = None
    enterprise_id: str | None = None
    api_app_id: str | None = None
    is_ext_shared_channel: bool | None = None
    authorizations: list[_Authorization] | None = None


class UrlVerification(_Shape):
    type: Literal["url_verification"]
    challenge: str


class SlashCommand(_Shape):
    command: str
    user_id: str
    channel_id: str
    text: str = ""
    team_id: str | None = None
    enterprise_id: str | None = None
    is_enterprise_install: str | None = None
    api_app_id: str | None = None
    response_url: str | None = None
    trigger_id: str | None = None
    user_name: str | None = None
    channel_name: str | None = None
    team_domain: str | None = None


class _ClickUser(_Shape):
    id: str
    team_id: str | None = None
    username: str | None = None


class _Container(_Shape):
    type: str | None = None
    message_ts: str | None = None
    channel_id: str | None = None
    thread_ts: str | None = None
    is_ephemeral: bool | None = None


class _ClickedMessage(_Shape):
    ts: str | None = None
    thread_ts: str | None = None


class _Action(_Shape):
    action_id: str
    block_id: str | None = None
    type: str | None = None
    value: str | None = None
    action_ts: str | None = None


class BlockActions(_Shape):
    type: Literal["block_actions"]
    user: _ClickUser
    actions: list[_Action] = Field(min_length=1)
    team: _Ref | None = None
    enterprise: _Ref | None = None
    is_enterprise_install: bool | None = None
    api_app_id: str | None = None
    channel: _Ref | None = None
    container: _Container | None = None
    message: _ClickedMessage | None = None
    response_url: str | None = None
    trigger_id: str | None = None


Kind = Literal["url_verification", "event", "command", "click"]


@dataclass(frozen=True)
class Accepted:
    """A payload of a handled shape: ``body`` holds its validated fields only."""

    kind: Kind
    body: dict[str, Any]


@dataclass(frozen=True)
class Ignored:
    """A payload paperbot does not act on; ``reason`` is one line without any of its values.

    ``malformed``: not what Slack sends (no type, or a handled type with fields of the wrong
    shape), as opposed to a Slack payload of a type paperbot does not handle.
    """

    reason: str
    malformed: bool = False


def read_payload(body: Mapping[str, Any]) -> Accepted | Ignored:
    """Sort a parsed Slack payload into a handled shape (re-built from validated fields) or not."""
    kind = body.get("type")
    name: Kind
    model: type[_Shape]
    if "command" in body:
        name, model = "command", SlashCommand
    elif kind == "url_verification":
        name, model = "url_verification", UrlVerification
    elif kind == "block_actions":
        name, model = "click", BlockActions
    elif kind == "event_callback":
        event = body.get("event")
        if not isinstance(event, Mapping) or not isinstance(event.get("type"), str):
            return Ignored("an event_callback whose event is not an object with a type", malformed=True)
        if event["type"] not in HANDLED_EVENTS:
            return Ignored("an event type paperbot does not handle")
        name, model = "event", EventCallback
    elif "ssl_check" in body:
        return Ignored("an SSL check")
    elif isinstance(kind, str) and kind:
        return Ignored(f"a payload of type {_shown(kind)} paperbot does not handle")
    else:
        return Ignored("a payload without a type", malformed=True)
    try:
        valid = model.model_validate(body)
    except ValidationError as exc:
        return Ignored(f"a payload ({name}) with fields of the wrong shape: {_fields(exc)}", malformed=True)
    return Accepted(kind=name, body=valid.model_dump(exclude_none=True))


def parse_body(raw: bytes, content_type: str | None) -> dict[str, Any] | None:
    """The payload of a request body, or ``None`` when it cannot be read.

    JSON when the content type says so or the body starts with ``{``; otherwise a form, whose
    ``payload`` field (a click) holds the JSON payload. Unreadable: empty, not UTF-8, not a
    JSON object, nested beyond the parser's recursion limit. (Bolt 1.30 takes any form *containing*
    the substring ``payload``, e.g. ``/paperbot explain payload attacks``, for a click; this
    looks for the field.)
    """
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
        if content_type == "application/json" or text.lstrip().startswith("{"):
            parsed = json.loads(text)
        else:
            fields = dict(parse_qsl(text, keep_blank_values=True))
            parsed = json.loads(fields["payload"]) if "payload" in fields else fields
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _fields(exc: ValidationError) -> str:
    """Where validation failed, e.g. ``event.channel``: locations only, never the values sent."""
    places = sorted({".".join(str(part) for part in error["loc"]) or "(top)" for error in exc.errors()})
    return ", ".join(places[:5]) + (", ..." if len(places) > 5 else "")


def _shown(kind: object) -> str:
    """A payload's ``type`` for a log line: short identifiers only."""
    if isinstance(kind, str) and kind.replace("_", "").isalnum() and len(kind) <= 40:
        return repr(kind)
    return "(none)" if kind is None else "(unreadable)"
