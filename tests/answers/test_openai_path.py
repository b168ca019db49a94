"""The real ChatOpenAI path (build_chat_model) against the local stub server: no network.

Retry delays come from the stub's ``retry-after-ms`` headers (honoured by the openai SDK), and
timeouts are a fraction of a second, so the whole file runs in about two seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from retrieval.answers.chain import AnswerOptions, answer_question, stream_answer
from retrieval.answers.llm import PLACEHOLDER_API_KEY, build_chat_model
from retrieval.config import Settings
from retrieval.results import Final, TextDelta
from tests.answers.conftest import LexicalRetriever, make_settings
from tests.answers.openai_stub_server import OpenAIStubServer, StubReply

DDA = "Which papers study the convergence of the discrete dipole approximation?"
FAST_RETRY = {"retry-after-ms": "5"}


@pytest.fixture()
def server() -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer() as srv:
        yield srv


def llm_settings(server: OpenAIStubServer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"openai_base_url": server.base_url, "llm_model": "stub-model",
                              "llm_timeout": 2.0, "llm_max_retries": 2, "llm_temperature": 0.0}
    values.update(overrides)
    return make_settings(**values)


def test_no_endpoint_means_no_model() -> None:
    assert build_chat_model(make_settings()) is None


def test_model_is_built_from_settings(server: OpenAIStubServer) -> None:
    model = build_chat_model(llm_settings(server, llm_timeout=7.5, llm_max_retries=4, llm_temperature=0.3))
    assert model is not None
    assert model.model_name == "stub-model" and model.openai_api_base == server.base_url  # type: ignore[attr-defined]
    assert model.request_timeout == 7.5 and model.max_retries == 4 and model.temperature == 0.3  # type: ignore[attr-defined]
    assert model.use_responses_api is False  # type: ignore[attr-defined]
    keyed = build_chat_model(make_settings(openai_api_key="sk-test"))
    assert keyed is not None and keyed.openai_api_key.get_secret_value() == "sk-test"  # type: ignore[attr-defined]


def test_streamed_answer_over_sse(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    server.script(StubReply(text="The theory paper analyses convergence [1]. The overview reviews the method [3]. Also [9]."))
    events = list(stream_answer(DDA, retriever=retriever, settings=llm_settings(server)))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    final = events[-1]
    assert isinstance(final, Final)
    # validated sentences only, never the invented [9]
    assert [d.text for d in deltas] == ["The theory paper analyses convergence [1].", " The overview reviews the method [2]."]
    assert final.result.mode == "llm" and final.result.notice is None
    assert final.result.answer == "The theory paper analyses convergence [1]. The overview reviews the method [2]."
    assert final.result.citations[1].title.startswith("The discrete dipole approximation: an overview")
    request = server.chat_requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.body["stream"] is True and request.body["model"] == "stub-model"
    assert [m["role"] for m in request.body["messages"]] == ["system", "user"]
    assert request.headers["authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"  # base URL only: placeholder key
    # the answer is bounded under both names (local servers may know only the older one)
    assert request.body["max_completion_tokens"] == 800 and request.body["max_tokens"] == 800


def test_followup_rewrite_uses_a_plain_json_completion(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    server.script(StubReply(text="magnetophonon resonance in graphene"), StubReply(text="A fine structure is described [1]."))
    history = [("Which papers study magnetophonon resonance in graphene?", "One does [1].")]
    result = answer_question("And what else?", retriever=retriever, settings=llm_settings(server),
                             options=AnswerOptions(history=history))
    assert retriever.queries == ["magnetophonon resonance in graphene"]
    assert [r.body.get("stream", False) for r in server.chat_requests] == [False, True]
    assert result.answer == "A fine structure is described [1]."


def test_server_error_is_retried_then_answers(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    server.script(StubReply(status=500, headers=FAST_RETRY), StubReply(status=503, headers=FAST_RETRY),
                  StubReply(text="Convergence was analysed [1]."))
    result = answer_question(DDA, retriever=retriever, settings=llm_settings(server))
    assert result.mode == "llm" and result.answer == "Convergence was analysed [1]."
    assert len(server.chat_requests) == 3
    assert [r.headers.get("x-stainless-retry-count") for r in server.chat_requests] == ["0", "1", "2"]


def test_rate_limit_honours_retry_after(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    server.script(StubReply(status=429, headers={"retry-after": "0.01"}), StubReply(text="Convergence was analysed [1]."))
    result = answer_question(DDA, retriever=retriever, settings=llm_settings(server))
    assert result.mode == "llm" and len(server.chat_requests) == 2


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (StubReply(status=500, headers=FAST_RETRY), "HTTP 500 after 3 attempts"),
        (StubReply(status=429, headers=FAST_RETRY), "rate limited (HTTP 429) after 3 attempts"),
        (StubReply(status=401), "HTTP 401: check OPENAI_API_KEY"),
        (StubReply(raw_body=b"<html>Bad gateway</html>"), "malformed response"),
    ],
)
def test_persistent_failures_fall_back_to_extractive(
    server: OpenAIStubServer, retriever: LexicalRetriever, reply: StubReply, cause: str
) -> None:
    server.script(reply)
    result = answer_question(DDA, retriever=retriever, settings=llm_settings(server))
    assert result.mode == "extractive" and not result.abstained and len(result.citations) == 3
    assert result.notice == f"LLM unreachable ({cause}): extractive answer instead."


def test_timeout_falls_back_after_every_attempt(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    server.script(StubReply(delay=5.0))  # released when the server stops
    result = answer_question(DDA, retriever=retriever, settings=llm_settings(server, llm_timeout=0.15, llm_max_retries=1))
    assert result.mode == "extractive" and len(result.citations) == 3
    assert result.notice == "LLM unreachable (timeout after 2 attempts): extractive answer instead."
    assert len(server.chat_requests) == 2


def test_unreachable_endpoint_falls_back(retriever: LexicalRetriever) -> None:
    with OpenAIStubServer() as gone:
        url = gone.base_url
    settings = make_settings(openai_base_url=url, llm_timeout=1.0, llm_max_retries=0)
    result = answer_question(DDA, retriever=retriever, settings=settings)
    assert result.mode == "extractive"
    assert result.notice == "LLM unreachable (cannot connect, 1 attempt): extractive answer instead."


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (StubReply(text=""), "it held no words, only citation marks or markers"),
        (StubReply(text="[1]"), "it held no words, only citation marks or markers"),
        (StubReply(text="The theory paper analyses convergence [1]. The overview", cut=True),
         "the stream ended before the reply was complete"),
        (StubReply(text="The theory paper analyses convergence [1]. The overview", finish_reason="length"),
         "it was cut at the 800-token limit"),
    ],
)
def test_a_reply_the_server_sent_but_that_is_no_answer_is_unusable_not_unreachable(
    server: OpenAIStubServer, retriever: LexicalRetriever, reply: StubReply, cause: str
) -> None:
    server.script(reply)
    result = answer_question(DDA, retriever=retriever, settings=llm_settings(server))
    assert result.mode == "extractive" and not result.abstained and len(result.citations) == 3
    assert result.notice == f"The model's reply was unusable ({cause}): extractive answer instead."
    assert len(server.chat_requests) == 1  # an answer came back: nothing to retry


def test_a_slow_trickle_is_stopped_at_the_deadline(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    """The per-read timeout never fires on a server that pings between pieces: the deadline does."""
    words = ["Convergence ", "was ", "analysed ", "[1]. ", "More ", "words ", "keep ", "coming ", "in."]
    server.script(StubReply(chunks=tuple(words), piece_delay=0.15))
    settings = llm_settings(server, llm_timeout=1.0, llm_deadline=0.5)
    events = list(stream_answer(DDA, retriever=retriever, settings=settings))
    result = events[-1].result  # type: ignore[union-attr]
    assert result.mode == "extractive"
    assert result.notice == "The model's reply was unusable (it took longer than 0.5 s): extractive answer instead."


def test_a_runaway_reply_is_cut_at_the_character_cap(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    endless = tuple(f"Convergence was analysed again and again, sentence {n} [1]. " for n in range(200))
    server.script(StubReply(chunks=endless))
    events = list(stream_answer(DDA, retriever=retriever, settings=llm_settings(server)))
    result = events[-1].result  # type: ignore[union-attr]
    assert result.mode == "extractive" and "ran past" in (result.notice or "")
    shown = "".join(e.text for e in events[:-1])  # type: ignore[union-attr]
    assert len(shown) <= 6_000
