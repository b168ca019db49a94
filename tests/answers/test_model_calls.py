"""``retrieval.answers.model_calls``: one model call within its first-token, stall and deadline limits.

The calls here are plain generators standing in for a model's stream. A stream that "never
answers" waits on an event the test releases at its end, so every bound is shown structurally:
the caller got its error while the stream was still holding its call. Back-offs use an injected
clock and sleep.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk

from retrieval.answers.model_calls import (
    CallLimits,
    CallReport,
    DeadlinePassed,
    FirstTokenLate,
    ModelStalled,
    invoke_within,
    stream_within,
)


class Retryable(Exception):
    """A failure the test policy retries (a 503, say)."""


class Final(Exception):
    """A failure the test policy does not retry (a 401, say)."""


class TimedOut(Exception):
    """The transport's own read timeout."""


class Policy:
    def __init__(self, delay: float = 0.01) -> None:
        self.wait = delay

    def delay(self, error: BaseException, attempt: int) -> float | None:
        return self.wait if isinstance(error, Retryable) else None

    def is_timeout(self, error: BaseException) -> bool:
        return isinstance(error, TimedOut)

    def failure(self, error: Exception) -> Exception:
        return error


class Clock:
    """Time that passes only when slept."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def limits(*, first_token: float = 5.0, stall: float = 5.0, deadline: float = 10.0, retries: int = 2,
           now: float | None = None) -> CallLimits:
    """Limits from ``now`` (default: the real monotonic clock's now)."""
    start = time.monotonic() if now is None else now
    return CallLimits(first_token=first_token, stall=stall, deadline=start + deadline, deadline_seconds=deadline,
                      retries=retries, prompt_tokens=1200)


@pytest.fixture()
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def chunks(*texts: str) -> list[AIMessageChunk]:
    return [AIMessageChunk(content=text) for text in texts]


def text_of(stream: Iterator[Any]) -> str:
    return "".join(str(chunk.content) for chunk in stream)


def test_a_stream_passes_through_and_is_reported() -> None:
    report = CallReport()
    assert text_of(stream_within(lambda: iter(chunks("Hello ", "world.")), limits(), report=report,
                                 policy=Policy())) == "Hello world."
    assert report.attempts == 1 and report.pieces == 2 and report.first_token_seconds is not None


def test_no_first_token_in_time_is_first_token_late(release: threading.Event) -> None:
    def silent() -> Iterator[AIMessageChunk]:
        release.wait(30)
        yield from chunks("late")

    with pytest.raises(FirstTokenLate) as raised:
        list(stream_within(silent, limits(first_token=0.05), policy=Policy()))
    assert not release.is_set()  # the caller was given up on the call while it still hung
    assert raised.value.reason == ("it did not start answering within 0.05 s for a prompt of ~1,200 tokens; "
                                   "raise PAPERBOT_LLM_TIMEOUT or lower PAPERBOT_LLM_PROMPT_BUDGET")


def test_chunks_without_content_are_not_an_answer(release: threading.Event) -> None:
    """A role chunk, an empty delta: what a server sends while it still reads the prompt."""

    def pinging() -> Iterator[AIMessageChunk]:
        while not release.wait(0.01):
            yield AIMessageChunk(content="")

    with pytest.raises(FirstTokenLate):
        list(stream_within(pinging, limits(first_token=0.1), policy=Policy()))


def test_a_pause_mid_reply_is_a_stall(release: threading.Event) -> None:
    def stalling() -> Iterator[AIMessageChunk]:
        yield from chunks("Hello ")
        release.wait(30)
        yield from chunks("world.")

    received: list[str] = []
    with pytest.raises(ModelStalled) as raised:
        received.extend(chunk.content for chunk in stream_within(stalling, limits(stall=0.05), policy=Policy()))
    assert received == ["Hello "] and not release.is_set()
    assert raised.value.reason == "it stopped writing for 0.05 s mid-reply; raise PAPERBOT_LLM_STALL_TIMEOUT"


def test_the_deadline_comes_before_the_per_request_limits(release: threading.Event) -> None:
    def silent() -> Iterator[AIMessageChunk]:
        release.wait(30)
        yield from chunks("late")

    with pytest.raises(DeadlinePassed) as raised:
        list(stream_within(silent, limits(first_token=5.0, deadline=0.05), policy=Policy()))
    assert not release.is_set()
    assert raised.value.reason == ("it had not started answering when the 0.05 s deadline passed for a prompt of "
                                   "~1,200 tokens; raise PAPERBOT_LLM_DEADLINE or lower PAPERBOT_LLM_PROMPT_BUDGET")


def test_a_failure_before_any_content_is_retried_after_the_back_off() -> None:
    clock = Clock()
    calls: list[int] = []

    def flaky() -> Iterator[AIMessageChunk]:
        calls.append(1)
        if len(calls) < 3:
            raise Retryable("503")
        return iter(chunks("Fine."))

    report = CallReport()
    text = text_of(stream_within(flaky, limits(retries=2, now=clock.now), report=report, policy=Policy(0.5),
                                 clock=clock, sleep=clock.sleep))
    assert text == "Fine." and report.attempts == 3 and clock.slept == [0.5, 0.5]


def test_retries_stop_at_the_retry_count_and_at_the_deadline() -> None:
    clock = Clock()

    def down() -> Iterator[AIMessageChunk]:
        raise Retryable("503")

    report = CallReport()
    with pytest.raises(Retryable):
        list(stream_within(down, limits(retries=2, now=clock.now), report=report, policy=Policy(0.5), clock=clock, sleep=clock.sleep))
    assert report.attempts == 3
    clock, report = Clock(), CallReport()
    with pytest.raises(Retryable):  # a back-off that would end past the deadline is not waited
        list(stream_within(down, limits(retries=5, deadline=3.0, now=clock.now), report=report, policy=Policy(2.0), clock=clock,
                           sleep=clock.sleep))
    assert report.attempts == 2 and clock.slept == [2.0]


def test_timeouts_other_failures_and_failures_after_content_are_not_retried() -> None:
    clock = Clock()
    for error, chunked, expected in [(TimedOut("read"), False, FirstTokenLate), (TimedOut("read"), True, ModelStalled),
                                     (Final("401"), False, Final), (Retryable("503"), True, Retryable)]:
        def call(error: Exception = error, chunked: bool = chunked) -> Iterator[AIMessageChunk]:
            if chunked:
                yield from chunks("Part ")
            raise error

        report = CallReport()
        with pytest.raises(expected):
            list(stream_within(call, limits(now=clock.now), report=report, policy=Policy(), clock=clock, sleep=clock.sleep))
        assert report.attempts == 1, error
    assert clock.slept == []


def test_a_caller_that_stops_reading_closes_the_stream(release: threading.Event) -> None:
    closed = threading.Event()

    def endless() -> Iterator[AIMessageChunk]:
        try:
            yield from chunks("one ")
            release.wait(30)
            while True:
                yield AIMessageChunk(content="more ")
        finally:
            closed.set()

    stream = stream_within(endless, limits(), policy=Policy())
    assert next(stream).content == "one "
    stream.close()
    release.set()  # the worker's next chunk finds the call abandoned
    assert closed.wait(10)


def test_invoke_within_returns_the_whole_reply(release: threading.Event) -> None:
    class Invoked:
        def invoke(self, messages: list[Any]) -> AIMessage:
            return AIMessage(content="graph neural networks")

    class Hanging:
        def invoke(self, messages: list[Any]) -> AIMessage:
            release.wait(30)
            return AIMessage(content="late")

    assert invoke_within(Invoked(), [], limits()).content == "graph neural networks"  # type: ignore[arg-type]
    with pytest.raises(FirstTokenLate):
        invoke_within(Hanging(), [], limits(first_token=0.05))  # type: ignore[arg-type]
    assert not release.is_set()
