"""Answers written by a (scripted, streaming) chat model: throttled chat.update streaming,
escaping of model text, and the thread's history reaching the model on follow-ups."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from retrieval.assistant import Assistant
from tests.slack.conftest import BotFactory, make_settings
from tests.slack.helpers import final_answer, has_button, scripted_model
from tests.slack.stand_in import Call

pytestmark = pytest.mark.slow

QUESTION = "which papers study the discrete dipole approximation?"
# evidence [1] is the overview, [2] the convergence paper: each claim cites the record it names
REPLY = (
    "The convergence of the discrete dipole approximation is analysed theoretically [2]. "
    "An overview of the method and its recent developments is given as well [1]. "
    "<!channel> see <http://evil.example|doi.org> for the full story @here [1]."
)


class FakeClock:
    """Advances a little on every reading; sleeping advances it by the time slept."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.3
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_model_text_streams_into_the_message_at_most_once_a_second(make_bot: BotFactory, assistant: Assistant) -> None:
    model = scripted_model(REPLY)
    core = Assistant(make_settings(assistant.settings.data_dir), index=assistant.index, chat_model=model)
    clock = FakeClock()
    bot = make_bot(core=core, clock=clock, sleep=clock.sleep)
    update_times: list[float] = []

    def observe(call: Call) -> None:  # the answer's updates (the status before them holds no slot)
        if call.method == "chat.update" and "the language model is reading" not in call.text():
            update_times.append(clock.now)

    bot.api.on_record = observe
    bot.sender.mention(QUESTION)
    final = final_answer(bot.api)

    updates = [c for c in bot.api.calls_to("chat.update") if c.params["ts"] == final.params["ts"]]
    partial = [c for c in updates if "writing…" in c.text()]
    assert partial, "no partial update was streamed"
    assert len(updates) < len(REPLY.split())  # throttled, not one edit per token
    gaps = [later - earlier for earlier, later in itertools.pairwise(update_times)]
    assert gaps and min(gaps) >= 1.0 - 1e-9
    assert "[1]" in final.text() and "*Sources*" in final.text()
    for call in bot.api.calls:  # the ping is removed and the link loses its target, live and at the end
        for raw in ("<!channel>", "<http://evil.example", "<!here>", "evil.example"):
            assert raw not in call.text()
    assert "see doi.org for the full story" in final.text()


def test_follow_up_sends_the_thread_as_history_to_the_model(make_bot: BotFactory, assistant: Assistant) -> None:
    model = scripted_model(REPLY, "How fast does the discrete dipole approximation converge?", REPLY)
    core = Assistant(make_settings(assistant.settings.data_dir), index=assistant.index, chat_model=model)
    bot = make_bot(core=core)
    _, root = bot.sender.mention(QUESTION)
    first = final_answer(bot.api)
    bot.sender.message("and how fast does it converge?", thread_ts=root)
    final_answer(bot.api, count=2)
    condense_prompt = " ".join(str(message.content) for message in model.seen[1])
    assert QUESTION in condense_prompt and "and how fast does it converge?" in condense_prompt
    assert bot.runtime.deps.store.thread_history("CGENERAL1", root)[0][0] == QUESTION
    assert first.params["ts"] != final_answer(bot.api, count=2).params["ts"]


def test_a_long_answer_continues_in_further_messages(make_bot: BotFactory, assistant: Assistant,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # the pagination of a long answer, with the model's size caps lifted (they are policy: a
    # listing or a longer cap must still page correctly); 200 sentences, about 13,000 characters,
    # overflow one message's text budget (11,000): the validated stream re-reads its whole prefix
    # on every token, so each sentence more costs more (400 took 9 s of CPU)
    monkeypatch.setattr("retrieval.answers.model_output.MAX_REPLY_CHARS", 100_000)
    monkeypatch.setattr("retrieval.answers.model_output.MAX_REPLY_SENTENCES", 1_000)
    long_reply = " ".join(f"Finding {i} on the discrete dipole approximation is reported [1]." for i in range(200))
    core = Assistant(make_settings(assistant.settings.data_dir), index=assistant.index,
                     chat_model=scripted_model(long_reply))
    bot = make_bot(core=core)
    _, ts = bot.sender.mention(QUESTION)
    bot.api.wait_calls("chat.postMessage", where=has_button("paperbot_vote_up"))  # buttons close the last page
    placeholder, *pages = [c for c in bot.api.calls_to("chat.postMessage") if c.params.get("thread_ts") == ts]
    first_ts = next(m["ts"] for m in bot.api.messages["CGENERAL1"].values() if m.get("thread_ts") == ts)
    final = [c for c in bot.api.calls_to("chat.update") if c.params["ts"] == first_ts][-1]
    assert "Working on it" in placeholder.text() and pages, "the overflow was not posted"
    shown = final.text() + "".join(page.text() for page in pages)
    assert all(f"Finding {i} on" in shown for i in range(200))  # nothing dropped
    for call in [final, *pages]:
        blocks = call.params["blocks"]
        assert len(blocks) <= 50
        assert all(len(b["text"]["text"]) <= 3000 for b in blocks if b["type"] == "section")
    assert "Continued in the next message" in final.text() and "(continued, 2/" in pages[0].text()
    assert "paperbot_vote_up" in pages[-1].text() and "paperbot_vote_up" not in final.text()


class SilentModel(BaseChatModel):
    """A model that takes the request and says nothing until ``release`` is set (a server still
    reading a long prompt, or hung)."""

    release: threading.Event

    @property
    def _llm_type(self) -> str:
        return "silent"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.release.wait(60)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="Too late [1]."))])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        self.release.wait(60)
        yield ChatGenerationChunk(message=AIMessageChunk(content="Too late [1]."))


def test_a_silent_model_holds_the_answer_worker_no_longer_than_its_limit(make_bot: BotFactory,
                                                                         assistant: Assistant) -> None:
    release = threading.Event()
    try:
        settings = make_settings(assistant.settings.data_dir, llm_timeout=0.2, llm_deadline=1.0)
        core = Assistant(settings, index=assistant.index, chat_model=SilentModel(release=release))
        bot = make_bot(core=core)
        bot.sender.mention(QUESTION)
        final = final_answer(bot.api)
        bot.idle()
        # the worker is free again while the model still holds its call: the limit, not the model, ended it
        assert not release.is_set() and bot.runtime.deps.queue.busy() == 0
        assert "The model was too slow (it did not start answering within 0.2 s" in final.text()
        assert "*Sources*" in final.text()  # the extractive answer, with its records
    finally:
        release.set()


def test_the_progress_message_says_the_model_is_reading_before_it_writes(make_bot: BotFactory,
                                                                          assistant: Assistant) -> None:
    core = Assistant(make_settings(assistant.settings.data_dir), index=assistant.index,
                     chat_model=scripted_model(REPLY))
    clock = FakeClock()
    bot = make_bot(core=core, clock=clock, sleep=clock.sleep)
    bot.sender.mention(QUESTION)
    final = final_answer(bot.api)

    updates = [c.text() for c in bot.api.calls_to("chat.update") if c.params["ts"] == final.params["ts"]]
    reading = [n for n, text in enumerate(updates) if "the language model is reading them" in text]
    writing = [n for n, text in enumerate(updates) if "writing…" in text]
    assert reading and writing and reading[0] < writing[0]  # what the wait is for, then the text as it comes
    assert "the language model is reading" not in final.text()
