"""Correctly signed Slack requests (events, slash commands, block actions) sent over HTTP."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

import httpx

_ids = itertools.count(1)


def signature(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


class SlackSender:
    """Posts to a running app's ``/slack/events`` the way Slack does."""

    def __init__(self, events_url: str, secret: str, *, team: str = "T0TEST", app_id: str = "A0TEST",
                 bot_user_id: str = "UBOTPAPER") -> None:
        self.url, self.secret, self.team, self.app_id, self.bot = events_url, secret, team, app_id, bot_user_id
        self.http = httpx.Client(timeout=10, trust_env=False)

    def post(self, body: bytes, content_type: str, *, headers: dict[str, str] | None = None,
             timestamp: str | None = None, secret: str | None = None) -> httpx.Response:
        ts = timestamp or str(int(time.time()))
        sent = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": signature(secret or self.secret, ts, body),
            **(headers or {}),
        }
        return self.http.post(self.url, content=body, headers=sent)

    def replay(self, response: httpx.Response) -> httpx.Response:
        """Send the request of ``response`` again, byte for byte (same timestamp and signature)."""
        sent = response.request
        return self.http.post(sent.url, content=sent.content, headers=sent.headers)

    def event(self, event: dict[str, Any], *, event_id: str | None = None, retry: int | None = None,
              **options: Any) -> httpx.Response:
        body = {
            "token": "unused", "team_id": self.team, "api_app_id": self.app_id, "type": "event_callback",
            "event": event, "event_id": event_id or f"Ev{next(_ids):08d}", "event_time": int(time.time()),
            "authorizations": [{"team_id": self.team, "user_id": self.bot, "is_bot": True}],
        }
        headers = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"} if retry else None
        return self.post(json.dumps(body).encode(), "application/json", headers=headers, **options)

    def mention(self, text: str, *, user: str = "UALICE01", channel: str = "CGENERAL1", ts: str | None = None,
                thread_ts: str | None = None, **options: Any) -> tuple[httpx.Response, str]:
        ts = ts or f"1690000000.{next(_ids):06d}"
        event = {"type": "app_mention", "user": user, "text": f"<@{self.bot}> {text}", "ts": ts,
                 "channel": channel, "event_ts": ts}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return self.event(event, **options), ts

    def message(self, text: str, *, user: str = "UALICE01", channel: str = "CGENERAL1", channel_type: str = "channel",
                ts: str | None = None, thread_ts: str | None = None, **options: Any) -> tuple[httpx.Response, str]:
        ts = ts or f"1690000000.{next(_ids):06d}"
        event = {"type": "message", "user": user, "text": text, "ts": ts, "channel": channel,
                 "channel_type": channel_type, "event_ts": ts}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return self.event(event, **options), ts

    def command(self, text: str, *, user: str = "UALICE01", channel: str = "CGENERAL1",
                response_url: str = "http://127.0.0.1:9/unused", **options: Any) -> httpx.Response:
        form = {
            "token": "unused", "team_id": self.team, "team_domain": "test", "channel_id": channel,
            "channel_name": "general", "user_id": user, "user_name": "alice", "command": "/paperbot",
            "text": text, "api_app_id": self.app_id, "response_url": response_url,
            "trigger_id": f"{next(_ids)}.trigger",
        }
        return self.post(urlencode(form).encode(), "application/x-www-form-urlencoded", **options)

    def action(self, action_id: str, value: str, *, user: str = "UALICE01", channel: str = "CGENERAL1",
               message_ts: str = "1700000000.000001", thread_ts: str | None = None,
               response_url: str = "http://127.0.0.1:9/unused", actions: list[dict[str, Any]] | None = None,
               **options: Any) -> httpx.Response:
        """A ``block_actions`` click on button ``action_id``; ``actions`` replaces the clicked actions."""
        container = {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False}
        if thread_ts:
            container["thread_ts"] = thread_ts
        payload = {
            "type": "block_actions", "team": {"id": self.team, "domain": "test"},
            "user": {"id": user, "username": "alice", "team_id": self.team}, "api_app_id": self.app_id,
            "container": container, "trigger_id": f"{next(_ids)}.trigger", "channel": {"id": channel, "name": "general"},
            "message": {"type": "message", "ts": message_ts, "thread_ts": thread_ts},
            "response_url": response_url,
            "actions": [{"action_id": action_id, "block_id": "b1", "type": "button", "value": value,
                         "action_ts": str(time.time())}] if actions is None else actions,
        }
        body = urlencode({"payload": json.dumps(payload)}).encode()
        return self.post(body, "application/x-www-form-urlencoded", **options)
