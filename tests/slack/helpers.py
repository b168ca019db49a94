"""Small helpers shared by the Slack integration tests."""

from __future__ import annotations

import json
import socket
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from tests.slack.stand_in import Call, SlackStandIn


def button_value(call: Call, action_id: str) -> str:
    """The value of the button ``action_id`` in a posted/updated message."""
    for block in call.params.get("blocks") or []:
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return element["value"]
    raise AssertionError(f"no {action_id} button in {json.dumps(call.params.get('blocks'))[:500]}")


def has_button(action_id: str) -> Any:
    return lambda call: action_id in json.dumps(call.params.get("blocks") or [])


def final_answer(api: SlackStandIn, *, channel: str = "CGENERAL1", root: str | None = None, count: int = 1,
                 timeout: float = 20.0) -> Call:
    """Wait for the ``count``-th finished answer (the message gaining the vote buttons)."""
    def finished(call: Call) -> bool:
        if call.params.get("channel") != channel or "paperbot_vote_up" not in json.dumps(call.params.get("blocks") or []):
            return False
        if root is None:
            return True
        return call.params.get("ts") == root or call.params.get("thread_ts") == root or _thread_of(api, call) == root

    calls = api.wait_calls("chat.update", count, where=finished, timeout=timeout)
    return calls[count - 1]


def _thread_of(api: SlackStandIn, call: Call) -> str | None:
    message = api.messages[call.params.get("channel", "")].get(call.params.get("ts", ""), {})
    return message.get("thread_ts")


def posts_in_thread(api: SlackStandIn, channel: str, thread_ts: str) -> list[Call]:
    return [c for c in api.calls_to("chat.postMessage")
            if c.status == 200 and c.params.get("channel") == channel and c.params.get("thread_ts") == thread_ts]


class RecordingChatModel(GenericFakeChatModel):
    """langchain's fake chat model (scripted replies, streamed word by word) keeping every prompt."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def scripted_model(*replies: str) -> RecordingChatModel:
    return RecordingChatModel(messages=iter([AIMessage(content=reply) for reply in replies]))


def server_closed(sock: socket.socket) -> bool:
    """The server closed the connection (EOF or reset) within the socket's timeout; whatever it
    still sends before (a body without a length) is read and dropped."""
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True
