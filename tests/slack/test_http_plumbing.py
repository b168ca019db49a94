"""HTTP mode plumbing over real HTTP: signatures, URL verification, acks, help, access lists."""

from __future__ import annotations

import json
import logging
import re
import threading
import time

import httpx
import pytest

from bot.slack.access import REFUSAL
from tests.slack.conftest import Bot, BotFactory

pytestmark = pytest.mark.slow  # the app fixture holds the session index (embedding model)


def test_url_verification_echoes_the_challenge(bot: Bot) -> None:
    body = json.dumps({"token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
                       "type": "url_verification"}).encode()
    response = bot.sender.post(body, "application/json")
    assert response.status_code == 200
    assert "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" in response.text


@pytest.mark.parametrize("kind", ["bad", "missing", "stale", "other-secret"])
def test_unsigned_or_badly_signed_requests_are_rejected(bot: Bot, kind: str) -> None:
    body = json.dumps({"type": "event_callback", "team_id": "T0TEST", "event_id": "EvBAD",
                       "event": {"type": "app_mention", "user": "UALICE01", "text": "hi", "ts": "1.1",
                                 "channel": "C1"}}).encode()
    if kind == "missing":
        response = httpx.post(bot.sender.url, content=body, headers={"Content-Type": "application/json"}, trust_env=False)
    elif kind == "bad":
        response = bot.sender.post(body, "application/json", headers={"X-Slack-Signature": "v0=" + "0" * 64})
    elif kind == "stale":
        response = bot.sender.post(body, "application/json", timestamp=str(int(time.time()) - 600))
    else:
        response = bot.sender.post(body, "application/json", secret="not-the-signing-secret")
    assert response.status_code == 401
    calls = [call.method for call in bot.api.calls]
    assert calls == ["auth.test"]  # nothing reached a listener


def test_health_endpoint(bot: Bot) -> None:
    response = httpx.get(bot.sender.url.replace("/slack/events", "/healthz"), trust_env=False)
    assert response.status_code == 200 and response.text == "ok"


def test_a_liveness_check_that_fails_is_logged_and_counts_as_alive(
        bot: Bot, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A bug in the hung-answer check must not make a probe restart a working replica."""
    loop = bot.runtime.replica
    monkeypatch.setattr(loop, "_started", loop._clock())  # as if started: the check runs
    monkeypatch.setattr(loop, "hung", lambda: 1 / 0)
    with caplog.at_level(logging.ERROR, logger="bot.slack.http_door"):
        response = httpx.get(bot.sender.url.replace("/slack/events", "/healthz"), trust_env=False)
    assert response.status_code == 200 and response.text == "ok"
    assert re.search(r"liveness check failed \[ref [0-9a-f]+\]", caplog.text), caplog.text


def test_help_is_acked_at_once(bot: Bot) -> None:
    started = time.monotonic()
    response = bot.sender.command("help")
    assert time.monotonic() - started < 3
    assert response.status_code == 200
    payload = response.json()
    assert payload["response_type"] == "ephemeral" and "/paperbot summarize" in json.dumps(payload["blocks"])


def test_bad_command_options_get_a_specific_message(bot: Bot) -> None:
    response = bot.sender.command("summarize Zhang --since last-year")
    assert response.status_code == 200
    assert "--since takes a year" in response.json()["text"]


def test_access_lists_refuse_politely_everywhere(make_bot: BotFactory) -> None:
    bot = make_bot(slack_allowed_users="UALICE01", slack_allowed_teams="T0TEST")
    refused = bot.sender.command("ask what is graphene?", user="UMALLORY1")
    assert refused.status_code == 200 and refused.json()["text"] == REFUSAL

    response, ts = bot.sender.mention("what is graphene?", user="UMALLORY1", channel="CGENERAL1")
    assert response.status_code == 200
    [post] = bot.api.wait_calls("chat.postMessage", where=lambda c: c.params.get("text") == REFUSAL)
    assert post.params["thread_ts"] == ts and post.params["channel"] == "CGENERAL1"

    clicked = bot.sender.action("paperbot_vote_up", '{"answer_id": "ab12cd34ab12cd34"}', user="UMALLORY1",
                                response_url=bot.api.response_url("refused"))
    assert clicked.status_code == 200
    [note] = bot.api.wait_calls("respond", where=lambda c: c.path.endswith("/refused"))
    assert note.params["text"] == REFUSAL and note.params["response_type"] == "ephemeral"

    allowed = bot.sender.command("help")  # Alice, in the allowed workspace
    assert allowed.json()["response_type"] == "ephemeral" and "/paperbot summarize" in allowed.text
    bot.idle()
    assert not bot.api.calls_to("reactions.add")  # the refused mention never started work


def test_listener_crash_is_logged_with_a_reference_not_shown(bot: Bot, monkeypatch: pytest.MonkeyPatch) -> None:
    logged = threading.Event()
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())
            if record.exc_info:
                logged.set()

    def broken_queue(user: str, job: object) -> int:
        raise RuntimeError("the work queue broke")

    monkeypatch.setattr(bot.runtime.deps.queue, "submit", broken_queue)  # a bug escaping the listener
    handler = Capture(level=logging.ERROR)
    logging.getLogger("bot.slack.app").addHandler(handler)
    try:
        response = bot.sender.command("ask what is graphene?")
        assert response.status_code == 200
        assert "RuntimeError" not in response.text and "queue broke" not in response.text
        assert logged.wait(10)
    finally:
        logging.getLogger("bot.slack.app").removeHandler(handler)
    assert any(re.search(r"unhandled error in a Slack listener \[ref [0-9a-f]{8}\]", line) for line in lines)


def test_no_spurious_token_warning_when_the_token_is_in_the_environment(
    make_bot: BotFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.slack.conftest import BOT_TOKEN

    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)  # how a deployment sets it; Bolt reads it too
    with caplog.at_level(logging.WARNING):
        bot = make_bot()
    assert bot.runtime.app.client.token == BOT_TOKEN
    assert not [r for r in caplog.records if "unused" in r.getMessage()], caplog.text
