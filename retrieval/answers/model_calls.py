"""One model call within its time limits: a first-token limit, a stall limit and one deadline.

A chat model's reply arrives as a stream. ``stream_within(start, limits)`` runs ``start()`` (a
callable that sends the request and returns its chunk iterator) in a worker thread and hands the
chunks on, so that a server which accepts the request and then says nothing cannot hold the
caller past its limits, whatever the transport's own timeouts:

* the first piece of content must arrive within ``limits.first_token`` seconds of the request
  (a server reads the whole prompt first: a small local model needs a minute for a long one);
* once content flows, no pause between two pieces may pass ``limits.stall`` seconds (an SSE ping
  or an empty chunk is no content: a server that pings but writes nothing has stalled);
* everything, every attempt and back-off included, ends by ``limits.deadline``, a
  ``time.monotonic()`` instant that the model calls of one answer share.

Past a limit the caller gets ``FirstTokenLate``, ``ModelStalled`` or ``DeadlinePassed`` (each a
``ModelTooSlow`` whose ``reason`` says what happened and which setting to change), and the worker
is told to stop: it closes the stream, and with it the connection, at its next chunk, or its
transport's own read timeout ends it. A provider's timeout reaching the worker first is reported
the same way.

Attempts: a request that failed before any content came back is sent again when the
``RetryPolicy`` says the failure is worth it (connection failures, HTTP 408/409/429, 5xx; never a
timeout: the same prompt would be as slow again), at most ``limits.retries`` times, and only when
its back-off ends before the deadline. A failure after content came back is never repeated.
What still fails is raised as the policy's ``failure`` gives it (the provider's type; a reply the
provider could not read as one of its failures); ``CallReport.attempts`` counts the requests made.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from retrieval.config import Settings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

Clock = Callable[[], float]


class ModelTooSlow(Exception):
    """The model did not answer within a time limit; ``reason`` says which and what to change."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FirstTokenLate(ModelTooSlow):
    """No content within the first-token limit (``PAPERBOT_LLM_TIMEOUT``)."""


class ModelStalled(ModelTooSlow):
    """The reply started, then paused longer than the stall limit (``PAPERBOT_LLM_STALL_TIMEOUT``)."""


class DeadlinePassed(ModelTooSlow):
    """The answer's deadline (``PAPERBOT_LLM_DEADLINE``) passed before the reply was complete."""


class RetryPolicy(Protocol):
    """Which failures are worth another request, and after how long (``retrieval.answers.llm``)."""

    def delay(self, error: BaseException, attempt: int) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``; None: do not send the request again."""
        ...

    def is_timeout(self, error: BaseException) -> bool:
        """True for the transport's own read timeout (reported as the model being too slow)."""
        ...

    def failure(self, error: Exception) -> Exception:
        """``error``, raised by the model call, as the caller is to see it (and the policy to judge)."""
        ...


@dataclass(frozen=True)
class CallLimits:
    """The time limits of one model call (module docstring).

    ``deadline`` is a ``time.monotonic()`` instant (or of the clock given to ``stream_within``);
    ``deadline_seconds`` the length it was set to, for the reason; ``prompt_tokens`` the
    prompt's size, for the reason of a late first token.
    """

    first_token: float
    stall: float
    deadline: float
    deadline_seconds: float
    retries: int = 0
    prompt_tokens: int | None = None

    @classmethod
    def from_settings(cls, settings: Settings, deadline: float | None = None,
                      prompt_tokens: int | None = None) -> CallLimits:
        """The settings' limits, up to ``deadline`` (default: ``llm_deadline`` seconds from now)."""
        if deadline is None:
            deadline = time.monotonic() + settings.llm_deadline
        return cls(first_token=settings.llm_timeout, stall=settings.llm_stall_timeout, deadline=deadline,
                   deadline_seconds=settings.llm_deadline, retries=settings.llm_max_retries,
                   prompt_tokens=prompt_tokens)

    def with_prompt(self, tokens: int) -> CallLimits:
        """These limits, for a prompt of ``tokens`` tokens."""
        return replace(self, prompt_tokens=tokens)

    def too_slow(self, *, started: bool, at_deadline: bool) -> ModelTooSlow:
        """The error for a limit that passed: before any content (``started`` False) or after,
        at the deadline or at the per-request limit."""
        prompt = f" for a prompt of ~{self.prompt_tokens:,} tokens" if self.prompt_tokens else ""
        if at_deadline and not started:
            return DeadlinePassed(f"it had not started answering when the {self.deadline_seconds:g} s deadline "
                                  f"passed{prompt}; raise PAPERBOT_LLM_DEADLINE or lower PAPERBOT_LLM_PROMPT_BUDGET")
        if at_deadline:
            return DeadlinePassed(f"it was still writing when the {self.deadline_seconds:g} s deadline passed; "
                                  "raise PAPERBOT_LLM_DEADLINE or lower PAPERBOT_LLM_MAX_TOKENS")
        if started:
            return ModelStalled(f"it stopped writing for {self.stall:g} s mid-reply; "
                                "raise PAPERBOT_LLM_STALL_TIMEOUT")
        return FirstTokenLate(f"it did not start answering within {self.first_token:g} s{prompt}; "
                              "raise PAPERBOT_LLM_TIMEOUT or lower PAPERBOT_LLM_PROMPT_BUDGET")


@dataclass
class CallReport:
    """What one call took: requests sent, seconds to the first content (of the attempt that
    got some), seconds in all, pieces of content received."""

    attempts: int = 0
    first_token_seconds: float | None = None
    seconds: float | None = None
    pieces: int = 0


_CHUNK, _END, _ERROR = "chunk", "end", "error"
#: Chunks the worker may read ahead of its caller: a caller that stops reading (a degenerate
#: reply, a size cap) stops the request within this many chunks.
READ_AHEAD = 4
_PUT_POLL = 0.05  # seconds between a blocked worker's looks at ``stop``


def _hand_over(out: queue.Queue[tuple[str, Any]], item: tuple[str, Any], stop: threading.Event) -> bool:
    """Put ``item`` on ``out`` once there is room; False when the caller gave up meanwhile."""
    while not stop.is_set():
        try:
            out.put(item, timeout=_PUT_POLL)
        except queue.Full:
            continue
        return True
    return False


def _pump(start: Callable[[], Iterable[Any]], out: queue.Queue[tuple[str, Any]], stop: threading.Event) -> None:
    """The worker: send the request, pass every chunk (then the end, or the error) to ``out``, at
    most ``READ_AHEAD`` ahead of the caller; stop reading, closing the stream, once ``stop`` is set."""
    try:
        chunks = start()
        try:
            for chunk in chunks:
                if not _hand_over(out, (_CHUNK, chunk), stop):
                    return
        finally:
            close = getattr(chunks, "close", None)
            if callable(close):
                close()
        _hand_over(out, (_END, None), stop)
    except Exception as exc:  # noqa: BLE001 - raised or retried by the caller, in its own thread
        _hand_over(out, (_ERROR, exc), stop)


def has_content(chunk: Any) -> bool:
    """True for a chunk (or message) that carries reply text, not only a role or metadata."""
    content = getattr(chunk, "content", None)
    return bool(content) if isinstance(content, (str, list)) else False


def _provider_policy() -> RetryPolicy:
    from retrieval.answers.llm import PROVIDER_RETRIES

    return PROVIDER_RETRIES


def stream_within(start: Callable[[], Iterable[Any]], limits: CallLimits, *, report: CallReport | None = None,
                  policy: RetryPolicy | None = None, clock: Clock = time.monotonic,
                  sleep: Callable[[float], None] = time.sleep) -> Generator[Any, None, None]:
    """The chunks of ``start()``'s stream, within ``limits`` (module docstring).

    Raises a ``ModelTooSlow`` past a limit, or the failure of the last attempt; ``report`` (when
    given) is filled as the call goes. ``policy`` defaults to the provider's
    (``retrieval.answers.llm.PROVIDER_RETRIES``); ``clock`` and ``sleep`` are the time the
    limits are measured in and the back-off's wait.
    """
    policy = policy or _provider_policy()
    report = report if report is not None else CallReport()
    began = clock()
    while True:
        report.attempts += 1
        stop = threading.Event()
        out: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=READ_AHEAD)
        threading.Thread(target=_pump, args=(start, out, stop), name="model-call", daemon=True).start()
        sent = clock()
        last: float | None = None  # when the last piece of content came
        backoff: float | None = None
        try:
            while backoff is None:
                limit = sent + limits.first_token if last is None else last + limits.stall
                wait = min(limit, limits.deadline) - clock()
                try:
                    if wait <= 0:
                        raise queue.Empty
                    kind, item = out.get(timeout=wait)
                except queue.Empty:
                    raise limits.too_slow(started=last is not None, at_deadline=limits.deadline <= limit) from None
                if kind == _CHUNK:
                    if has_content(item):
                        now = clock()
                        if last is None:
                            report.first_token_seconds = now - sent
                        last = now
                        report.pieces += 1
                    yield item
                elif kind == _END:
                    report.seconds = clock() - began
                    return
                else:
                    backoff = _backoff(policy.failure(item), policy, limits, report.attempts, started=last is not None,
                                       now=clock())
        finally:
            stop.set()  # also when the caller stops reading: the worker closes the stream
        sleep(backoff)


def _backoff(error: BaseException, policy: RetryPolicy, limits: CallLimits, attempt: int, *,
             started: bool, now: float) -> float:
    """The wait before the next attempt after ``error``; raises when there is to be none."""
    if policy.is_timeout(error):
        raise limits.too_slow(started=started, at_deadline=False) from error
    if started or attempt > limits.retries:
        raise error
    delay = policy.delay(error, attempt)
    if delay is None or now + delay >= limits.deadline:
        raise error
    return delay


def invoke_within(model: BaseChatModel, messages: Sequence[BaseMessage], limits: CallLimits, *,
                  report: CallReport | None = None) -> BaseMessage:
    """``model.invoke(messages)`` within ``limits``: the whole reply counts as its first token."""
    for message in stream_within(lambda: iter([model.invoke(list(messages))]), limits, report=report):
        return message
    raise AssertionError("invoke returned no message")  # pragma: no cover
