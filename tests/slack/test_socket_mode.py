"""Socket Mode over a local websocket server: envelopes in, acks out, answers via the Web API."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.server import Server, ServerConnection, serve

from bot.slack.app import build_slack
from retrieval.assistant import Assistant
from tests.slack.conftest import APP_TOKEN, BOT_TOKEN, make_settings
from tests.slack.helpers import final_answer, posts_in_thread
from tests.slack.stand_in import SlackStandIn
from tests.support.patience import patience

pytestmark = pytest.mark.slow


class SocketModeServer:
    """Plays Slack's side of Socket Mode: says hello, pushes envelopes, records the acks."""

    def __init__(self) -> None:
        self.acks: list[dict[str, Any]] = []
        self._connection: ServerConnection | None = None
        self._changed = threading.Condition()
        self.server: Server = serve(self._handle, "127.0.0.1", 0, compression=None)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        port = self.server.socket.getsockname()[1]
        return f"ws://127.0.0.1:{port}/link/?ticket=test"

    def _handle(self, connection: ServerConnection) -> None:
        connection.send(json.dumps({"type": "hello", "num_connections": 1,
                                    "connection_info": {"app_id": "A0TEST"}, "debug_info": {"host": "test"}}))
        with self._changed:
            self._connection = connection
            self._changed.notify_all()
        for message in connection:
            with self._changed:
                self.acks.append(json.loads(message))
                self._changed.notify_all()

    def push(self, envelope: dict[str, Any]) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self._connection is not None, patience(10)), "the app never connected"
            connection = self._connection
        assert connection is not None
        connection.send(json.dumps(envelope))

    def ack_for(self, envelope_id: str) -> dict[str, Any]:
        with self._changed:
            found = self._changed.wait_for(
                lambda: next((a for a in self.acks if a.get("envelope_id") == envelope_id), None), patience(10))
        assert found, f"no ack for {envelope_id}: {self.acks}"
        return found

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def socket_server() -> Iterator[SocketModeServer]:
    server = SocketModeServer()
    yield server
    server.close()


def _mention(ts: str, event_id: str, retry: int) -> dict[str, Any]:
    return {
        "envelope_id": f"env-{event_id}-{retry}", "type": "events_api", "accepts_response_payload": False,
        "retry_attempt": retry, "retry_reason": "timeout" if retry else "",
        "payload": {
            "type": "event_callback", "team_id": "T0TEST", "api_app_id": "A0TEST", "event_id": event_id,
            "event_time": 1, "authorizations": [{"team_id": "T0TEST", "user_id": "UBOTPAPER", "is_bot": True}],
            "event": {"type": "app_mention", "user": "UALICE01", "text": "<@UBOTPAPER> graphene magnetophonon resonance",
                      "ts": ts, "channel": "CGENERAL1", "event_ts": ts},
        },
    }


def test_socket_mode_answers_mentions_and_commands(
    stand_in: SlackStandIn, socket_server: SocketModeServer, assistant: Assistant, tmp_path: Path,
) -> None:
    stand_in.socket_url = socket_server.url
    settings = make_settings(tmp_path, slack_bot_token=BOT_TOKEN, slack_app_token=APP_TOKEN,
                             slack_api_url=stand_in.api_url)
    runtime = build_slack(settings, assistant, http=False, sleep=lambda seconds: None)
    handler = runtime.socket_mode_handler()
    try:
        handler.connect()
        [opened] = stand_in.wait_calls("apps.connections.open")
        assert opened.token == APP_TOKEN

        socket_server.push(_mention("1690000000.000100", "EvSOCK0001", 0))
        socket_server.push(_mention("1690000000.000100", "EvSOCK0001", 1))  # Slack's retry of the same event
        socket_server.ack_for("env-EvSOCK0001-0")
        socket_server.ack_for("env-EvSOCK0001-1")
        final = final_answer(stand_in)
        assert "Graphene" in final.text()

        socket_server.push({
            "envelope_id": "env-cmd-1", "type": "slash_commands", "accepts_response_payload": True,
            "payload": {"command": "/paperbot", "text": "help", "user_id": "UALICE01", "channel_id": "CGENERAL1",
                        "team_id": "T0TEST", "response_url": stand_in.response_url("cmd"), "trigger_id": "1.t"},
        })
        ack = socket_server.ack_for("env-cmd-1")
        assert ack["payload"]["response_type"] == "ephemeral" and "/paperbot summarize" in json.dumps(ack["payload"])

        stand_in.wait_calls("reactions.remove")
        assert len(posts_in_thread(stand_in, "CGENERAL1", "1690000000.000100")) == 1  # the retry was dropped
    finally:
        handler.close()
        runtime.close()


ODD_PAYLOADS = [
    ("events_api", {"type": "event_callback", "team_id": "T0TEST", "event_id": "EvODD1", "event": None}),
    ("events_api", {"type": "event_callback", "team_id": "T0TEST", "event_id": "EvODD2",
                    "event": {"type": "app_mention", "user": "UALICE01", "text": 42, "ts": "1.2", "channel": "C1"}}),
    ("events_api", {"type": "event_callback", "team_id": "T0TEST", "event_id": "EvODD3",
                    "event": {"type": "app_mention", "user": "UALICE01", "text": "hi", "ts": "1.3", "channel": ["C1"]}}),
    ("interactive", {"type": "view_submission", "user": {"id": "UALICE01"}, "view": {"id": "V1"}}),
    ("interactive", {"type": "block_actions", "team": {"id": "T0TEST"}, "user": {"id": "UALICE01"},
                     "api_app_id": "A0TEST", "actions": [], "container": {"type": "message", "channel_id": "CGENERAL1"}}),
    ("slash_commands", {"command": "/paperbot", "text": "help", "channel_id": "CGENERAL1"}),
]


def test_socket_mode_acks_payloads_of_other_shapes_and_runs_nothing(
    stand_in: SlackStandIn, socket_server: SocketModeServer, assistant: Assistant, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The Socket Mode door sorts payloads as the HTTP door does (``bot/slack/socket_door.py``)."""
    caplog.set_level(logging.DEBUG)
    stand_in.socket_url = socket_server.url
    settings = make_settings(tmp_path, slack_bot_token=BOT_TOKEN, slack_app_token=APP_TOKEN,
                             slack_api_url=stand_in.api_url)
    runtime = build_slack(settings, assistant, http=False, sleep=lambda seconds: None)
    handler = runtime.socket_mode_handler()
    try:
        handler.connect()
        for n, (kind, payload) in enumerate(ODD_PAYLOADS):
            socket_server.push({"envelope_id": f"env-odd-{n}", "type": kind, "accepts_response_payload": True,
                                "payload": payload})
        for n in range(len(ODD_PAYLOADS)):
            assert "payload" not in socket_server.ack_for(f"env-odd-{n}")
        socket_server.push({  # answered after them: whatever they started has run by now
            "envelope_id": "env-help", "type": "slash_commands", "accepts_response_payload": True,
            "payload": {"command": "/paperbot", "text": "help", "user_id": "UALICE01", "channel_id": "CGENERAL1"},
        })
        assert "/paperbot summarize" in json.dumps(socket_server.ack_for("env-help")["payload"])
        runtime.deps.queue.close(timeout=5)
        assert [call.method for call in stand_in.calls] == ["auth.test", "apps.connections.open"]
        assert [record.getMessage() for record in caplog.records if record.exc_info or record.levelno >= logging.ERROR] == []
    finally:
        handler.close()
        runtime.close()


def test_two_socket_mode_replicas_answer_an_event_sent_to_both_once(
    stand_in: SlackStandIn, assistant: Assistant, tmp_path: Path, database_url: str | None,
) -> None:
    """Slack may send an event and its retry over two replicas' connections: the claim in the
    shared database (``bot/slack/deliveries.py``) lets one of them answer."""
    servers = [SocketModeServer(), SocketModeServer()]
    runtimes, handlers = [], []
    try:
        for n, server in enumerate(servers):
            stand_in.socket_url = server.url
            settings = make_settings(tmp_path, slack_bot_token=BOT_TOKEN, slack_app_token=APP_TOKEN,
                                     slack_api_url=stand_in.api_url, database_url=database_url,
                                     replica_id=f"socket-{n}")
            runtimes.append(build_slack(settings, assistant, http=False, sleep=lambda seconds: None))
            handlers.append(runtimes[-1].socket_mode_handler())
            handlers[-1].connect()
            stand_in.wait_calls("apps.connections.open", n + 1)
        threads = [threading.Thread(target=server.push, args=(_mention("1690000000.000200", "EvSOCK0002", retry),))
                   for retry, server in enumerate(servers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        for retry, server in enumerate(servers):
            server.ack_for(f"env-EvSOCK0002-{retry}")
        assert "Graphene" in final_answer(stand_in, root="1690000000.000200").text()
        for runtime in runtimes:  # every started answer has finished
            runtime.deps.queue.close(timeout=30)
        assert len(posts_in_thread(stand_in, "CGENERAL1", "1690000000.000200")) == 1
    finally:
        for handler in handlers:
            handler.close()
        for runtime in runtimes:
            runtime.close()
        for server in servers:
            server.close()
