"""The real ChatOpenAI path (build_chat_model) against the local stub server: no network.

Retry delays come from the stub's ``retry-after-ms`` headers (honoured by
``retrieval.answers.model_calls``), and time limits are a fraction of a second; a server that
stalls is released when the test's server stops, so each bound is asserted by what the server
saw (how many requests) and what the user is told, never by the clock.
"""

from __future__ import annotations

import re
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
    model = build_chat_model(llm_settings(server, llm_timeout=7.5, llm_stall_timeout=9.0, llm_max_retries=4,
                                          llm_temperature=0.3))
    assert model is not None
    assert model.model_name == "stub-model" and model.openai_api_base == server.base_url  # type: ignore[attr-defined]
    assert model.temperature == 0.3  # type: ignore[attr-defined]
    # the transport's read timeout is a backstop behind the first-token and stall limits, and
    # the SDK never retries: retrieval.answers.model_calls decides, within the deadline
    timeout = model.request_timeout  # type: ignore[attr-defined]
    assert (timeout.read, timeout.connect) == (9.0, 7.5) and model.max_retries == 0  # type: ignore[attr-defined]
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


def test_a_server_that_never_answers_is_asked_once(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    server.script(StubReply(delay=5.0))  # no headers at all; released when the server stops
    result = answer_question(DDA, retriever=retriever, settings=llm_settings(server, llm_timeout=0.15, llm_max_retries=2))
    assert result.mode == "extractive" and len(result.citations) == 3
    assert re.fullmatch(r"The model was too slow \(it did not start answering within 0\.15 s for a prompt of "
                        r"~[\d,]+ tokens; raise PAPERBOT_LLM_TIMEOUT or lower PAPERBOT_LLM_PROMPT_BUDGET\): extractive "
                        r"answer instead\.", result.notice or ""), result.notice
    assert len(server.chat_requests) == 1  # the same prompt would be as slow again: not retried


@pytest.mark.parametrize("pings", [False, True])
def test_a_server_still_reading_the_prompt_is_not_unreachable(server: OpenAIStubServer, retriever: LexicalRetriever,
                                                              pings: bool) -> None:
    """llama.cpp sends the headers, then nothing until it has read the prompt; SSE pings are no answer."""
    server.script(StubReply(text="Convergence was analysed [1].", stall_at=0, stall=5.0, pings=pings))
    result = answer_question(DDA, retriever=retriever, settings=llm_settings(server, llm_timeout=0.2))
    assert result.mode == "extractive"
    assert (result.notice or "").startswith("The model was too slow (it did not start answering within 0.2 s")
    assert "unreachable" not in (result.notice or "")
    assert len(server.chat_requests) == 1


def test_a_reply_that_stops_mid_way_is_left_at_the_stall_limit(server: OpenAIStubServer,
                                                                retriever: LexicalRetriever) -> None:
    server.script(StubReply(text="Convergence was analysed [1]. The overview", stall_at=3, stall=5.0, pings=True))
    settings = llm_settings(server, llm_timeout=5.0, llm_stall_timeout=0.2)
    events = list(stream_answer(DDA, retriever=retriever, settings=settings))
    result = events[-1].result  # type: ignore[union-attr]
    assert result.mode == "extractive"
    assert result.notice == ("The model was too slow (it stopped writing for 0.2 s mid-reply; raise "
                             "PAPERBOT_LLM_STALL_TIMEOUT): extractive answer instead.")
    assert len(server.chat_requests) == 1


def test_the_deadline_bounds_every_attempt_together(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    """Retries happen inside the deadline: with the first-token limit at 5 s and the deadline at
    0.4 s, the second attempt (after a 503) is cut by the deadline, and no third is sent."""
    server.script(StubReply(status=503, headers=FAST_RETRY), StubReply(delay=5.0))
    settings = llm_settings(server, llm_timeout=5.0, llm_deadline=0.4, llm_max_retries=5)
    result = answer_question(DDA, retriever=retriever, settings=settings)
    assert result.mode == "extractive"
    assert (result.notice or "").startswith("The model was too slow (it had not started answering when the 0.4 s "
                                            "deadline passed for a prompt of ~")
    assert len(server.chat_requests) == 2


def test_a_back_off_past_the_deadline_is_not_waited(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    server.script(StubReply(status=503, headers={"retry-after": "600"}))
    result = answer_question(DDA, retriever=retriever, settings=llm_settings(server, llm_deadline=5.0))
    assert result.notice == "LLM unreachable (HTTP 503 after 1 attempt): extractive answer instead."
    assert len(server.chat_requests) == 1


def test_unreachable_endpoint_is_retried_then_falls_back(retriever: LexicalRetriever) -> None:
    with OpenAIStubServer() as gone:
        url = gone.base_url
    settings = make_settings(openai_base_url=url, llm_timeout=1.0, llm_max_retries=1)
    result = answer_question(DDA, retriever=retriever, settings=settings)
    assert result.mode == "extractive"
    assert result.notice == "LLM unreachable (cannot connect, 2 attempts): extractive answer instead."


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
    """A server that pings between pieces never trips a per-read timeout: the deadline stops it."""
    words = ["Convergence ", "was ", "analysed ", "[1]. ", "More ", "words ", "keep ", "coming ", "in."]
    server.script(StubReply(chunks=tuple(words), piece_delay=0.15))
    settings = llm_settings(server, llm_timeout=1.0, llm_deadline=0.5)
    events = list(stream_answer(DDA, retriever=retriever, settings=settings))
    result = events[-1].result  # type: ignore[union-attr]
    assert result.mode == "extractive"
    assert result.notice == ("The model was too slow (it was still writing when the 0.5 s deadline passed; raise "
                             "PAPERBOT_LLM_DEADLINE or lower PAPERBOT_LLM_MAX_TOKENS): extractive answer instead.")


def test_a_runaway_reply_is_cut_at_the_character_cap(server: OpenAIStubServer, retriever: LexicalRetriever) -> None:
    endless = tuple(f"Convergence was analysed again and again, sentence {n} [1]. " for n in range(200))
    server.script(StubReply(chunks=endless))
    events = list(stream_answer(DDA, retriever=retriever, settings=llm_settings(server)))
    result = events[-1].result  # type: ignore[union-attr]
    assert result.mode == "extractive" and "ran past" in (result.notice or "")
    shown = "".join(e.text for e in events[:-1])  # type: ignore[union-attr]
    assert len(shown) <= 6_000


# A 200 that is not a chat completion, for a call (invoke) and a stream: what langchain-openai
# and the SDK raise on it differs by body and by release (JSONDecodeError, IndexError,
# AttributeError; langchain-core's ValueError for a stream without events); the caller always
# sees one MalformedResponseError, and the request is not sent again.
GARBAGE = {
    "html": StubReply(raw_body=b"<html>502 Bad Gateway</html>", headers={"Content-Type": "text/html"}),
    "truncated-json": StubReply(raw_body=b'{"choices": [{"message": {"content": "Conv'),
    "no-choices": StubReply(raw_body=b'{"id": "x", "object": "chat.completion", "choices": []}'),
    "no-events": StubReply(raw_body=b"event: nothing\n\n", headers={"Content-Type": "text/event-stream"}),
}


@pytest.mark.parametrize("streamed", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("garbage", GARBAGE, ids=list(GARBAGE))
def test_a_reply_that_is_no_chat_completion_is_malformed(server: OpenAIStubServer, garbage: str,
                                                         streamed: bool) -> None:
    from langchain_core.messages import HumanMessage

    from retrieval.answers.llm import LLM_FAILURES, MalformedResponseError, describe_failure
    from retrieval.answers.model_calls import CallLimits, CallReport, invoke_within, stream_within

    server.script(GARBAGE[garbage])
    settings = llm_settings(server)
    model = build_chat_model(settings)
    assert model is not None
    messages = [HumanMessage(content="Say hello.")]
    report = CallReport()
    with pytest.raises(LLM_FAILURES) as failed:
        if streamed:
            list(stream_within(lambda: model.stream(messages), CallLimits.from_settings(settings), report=report))
        else:
            invoke_within(model, messages, CallLimits.from_settings(settings), report=report)
    assert isinstance(failed.value, MalformedResponseError), repr(failed.value)
    assert describe_failure(failed.value, report.attempts) == "malformed response"
    assert len(server.chat_requests) == 1 and report.attempts == 1


def test_only_an_unreadable_reply_becomes_malformed() -> None:
    import openai

    from retrieval.answers.llm import PROVIDER_RETRIES, MalformedResponseError

    unreadable = IndexError("list index out of range")
    turned = PROVIDER_RETRIES.failure(unreadable)
    assert isinstance(turned, MalformedResponseError) and turned.__cause__ is unreadable
    refused = openai.APIConnectionError(request=__import__("httpx").Request("POST", "http://127.0.0.1:9/v1"))
    assert PROVIDER_RETRIES.failure(refused) is refused
    bug = RuntimeError("a bug of ours")
    assert PROVIDER_RETRIES.failure(bug) is bug
