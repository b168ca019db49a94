"""A degenerate reply stops as soon as it is recognisable, not at the token limit.

A 0.5B model wrote "[1] [2] [3] … [180]" until its 800-token limit (one call: 1,220 s) before the
guard rejected the finished reply (issue #29). The models here count the pieces they were asked
for, so the bound is structural: the call stopped within a few pieces of the loop's start.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from retrieval.answers.chain import answer_question
from retrieval.answers.model_calls import READ_AHEAD
from retrieval.answers.model_output import (
    MAX_CITATION_RUN,
    MAX_WORDLESS_CITATIONS,
    MIN_REPEATS,
    DegenerationGuard,
    ReplyRejected,
)
from tests.answers.conftest import LexicalRetriever, make_settings
from tests.answers.openai_stub_server import OpenAIStubServer, StubReply

DDA = "Which papers study the convergence of the discrete dipole approximation?"
LOOPS = {
    "marks": ("", [f"[{n}] " for n in range(1, 181)], "it wrote citation marks and no words", MAX_WORDLESS_CITATIONS),
    "marks after words": ("The papers ", [f"[{n}] " for n in range(1, 181)],
                          f"it wrote {MAX_CITATION_RUN} or more citation marks in a row with no words", MAX_CITATION_RUN),
    "words": ("Convergence was analysed [1]. ", ["of the model "] * 180, "it repeated the same words over and over",
              MIN_REPEATS),
}


class CountingLoop(BaseChatModel):
    """Streams ``opening`` then ``pieces``, counting how many pieces the caller asked for."""

    opening: str
    pieces: list[str]
    pulled: int = 0

    @property
    def _llm_type(self) -> str:
        return "counting-loop"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.opening + "".join(self.pieces)))])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        if self.opening:
            yield ChatGenerationChunk(message=AIMessageChunk(content=self.opening))
        for piece in self.pieces:
            self.pulled += 1
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))


@pytest.mark.parametrize("loop", list(LOOPS))
def test_a_loop_is_cut_where_it_is_recognisable(retriever: LexicalRetriever, loop: str) -> None:
    opening, pieces, reason, recognisable = LOOPS[loop]
    model = CountingLoop(opening=opening, pieces=pieces)
    result = answer_question(DDA, retriever=retriever, settings=make_settings(), chat_model=model)
    assert result.mode == "extractive" and not result.abstained and len(result.citations) == 3
    assert result.notice == f"The model's reply was unusable ({reason}): extractive answer instead."
    # stopped within the worker's read-ahead of where the loop became recognisable, not at piece 180
    assert model.pulled <= recognisable + READ_AHEAD + 2, model.pulled


@pytest.mark.parametrize("reply", [
    "Convergence was analysed [1][2][3]. The overview reviews it [3].",
    "[1] Convergence was analysed. [2] The overview reviews it.",
    "Three papers [1], [2], [3], [4], [5], [6], [7], [8] study the method, each differently.",
    "- The theory paper analyses convergence [1].\n- The overview reviews the method [3].\n- It is also applied [2].",
    "The method converges; the method is accurate; the method is fast [1].",
])
def test_ordinary_answers_pass_the_guard(reply: str) -> None:
    guard = DegenerationGuard()
    for word in reply.split(" "):
        guard.feed(word + " ")


def test_a_stub_server_s_loop_is_cut_and_the_request_closed(retriever: LexicalRetriever) -> None:
    loop = tuple(f"[{n}] " for n in range(1, 181))
    with OpenAIStubServer([StubReply(chunks=loop)]) as server:
        settings = make_settings(openai_base_url=server.base_url, llm_timeout=5.0, llm_frequency_penalty=0.2)
        result = answer_question(DDA, retriever=retriever, settings=settings)
    assert result.notice == ("The model's reply was unusable (it wrote citation marks and no words): extractive "
                             "answer instead.")
    body = server.chat_requests[0].body
    assert body["frequency_penalty"] == 0.2 and len(server.chat_requests) == 1


def test_no_frequency_penalty_is_sent_by_default(retriever: LexicalRetriever) -> None:
    with OpenAIStubServer([StubReply(text="Convergence was analysed [1].")]) as server:
        answer_question(DDA, retriever=retriever, settings=make_settings(openai_base_url=server.base_url))
    assert "frequency_penalty" not in server.chat_requests[0].body


def test_the_guard_names_what_it_saw() -> None:
    guard = DegenerationGuard()
    with pytest.raises(ReplyRejected, match="citation marks and no words"):
        for n in range(1, 10):
            guard.feed(f"[{n}] ")
