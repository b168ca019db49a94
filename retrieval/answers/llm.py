"""The only module that builds chat models or knows provider exception types.

``build_chat_model`` returns a ``ChatOpenAI`` for any OpenAI-compatible endpoint (OpenAI,
vLLM, Ollama, llama.cpp...), or None when no endpoint is configured. The model itself never
retries (``max_retries=0``): ``retrieval.answers.model_calls`` sends a request again, within the
answer's deadline, when ``PROVIDER_RETRIES`` says the failure is worth it: a connection failure,
HTTP 408/409/429 or 5xx, after the server's ``retry-after-ms``/``Retry-After`` or an exponential
back-off; never a read timeout (the same prompt would be as slow again). The transport's read
timeout is only a backstop behind that module's first-token and stall limits.
What still fails reaches the caller as one of ``LLM_FAILURES`` (a reply the provider cannot read
as ``MalformedResponseError``: ``ProviderRetries.failure``); ``describe_failure`` turns it into
the short parenthesis of the notice ("HTTP 503 after 3 attempts"). The model is langchain's
``ChatOpenAI`` as its documentation configures it, called only through its runnable interface
(``invoke``, ``stream``).
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Iterator

import openai
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelAPIError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelTimeoutError,
)
from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from retrieval.config import Settings

# Key sent to OpenAI-compatible servers that need none (a base URL without OPENAI_API_KEY).
PLACEHOLDER_API_KEY = "not-needed"


class MalformedResponseError(ModelError):
    """The endpoint answered 200 with a body that is not a chat completion (HTML, truncated JSON)."""


# Everything a chat model call may raise once the endpoint is down, slow, refusing or broken.
LLM_FAILURES: tuple[type[Exception], ...] = (ModelError, openai.APIError)
# What the provider's parsing raises on a 200 response that is not a chat completion: the SDK's
# or langchain-openai's JSONDecodeError, IndexError (no choices), TypeError, AttributeError (an
# HTML page read as a completion), langchain-core's ValueError for a stream without a single event.
_GARBAGE_ERRORS = (ValueError, LookupError, TypeError, AttributeError)


_RETRIED_STATUSES = frozenset({408, 409, 429})
#: Seconds to wait for a TCP connection (a dead host), never more than the first-token limit.
CONNECT_SECONDS = 10.0
#: Back-off before attempt n + 1 without a Retry-After: BACKOFF_SECONDS x 2^(n-1), at most MAX_BACKOFF_SECONDS.
BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 8.0


def build_chat_model(settings: Settings) -> BaseChatModel | None:
    """The configured chat model, or None when neither a key nor a base URL is set.

    It makes one request per call (``max_retries=0``: ``retrieval.answers.model_calls`` decides
    on another); its read timeout, the longer of ``llm_timeout`` and ``llm_stall_timeout``, only
    ends a request that call has already given up on.
    """
    if not settings.llm_configured:
        return None
    read = max(settings.llm_timeout, settings.llm_stall_timeout)
    return ChatOpenAI(
        model=settings.llm_model,
        base_url=settings.openai_base_url,
        api_key=settings.openai_api_key or SecretStr(PLACEHOLDER_API_KEY),
        use_responses_api=False,
        timeout=openai.Timeout(read, connect=min(CONNECT_SECONDS, settings.llm_timeout)),
        max_retries=0,
        temperature=settings.llm_temperature,
        frequency_penalty=settings.llm_frequency_penalty or None,  # 0: not sent at all
        max_completion_tokens=settings.llm_max_tokens,  # ChatOpenAI.max_tokens by its alias, OpenAI's current name
        # servers other than OpenAI's (llama.cpp, vLLM, Ollama) may know only the older name
        extra_body={"max_tokens": settings.llm_max_tokens} if settings.openai_base_url else None,
    )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


#: The transport's timeouts that mean "no connection" rather than "no answer". Named, not
#: imported: the openai SDK's transport (httpx, now httpx2) names them alike and may change.
_CONNECT_TIMEOUTS = frozenset({"ConnectTimeout", "PoolTimeout"})


def _connect_timeout(exc: BaseException) -> bool:
    return any(type(cause).__name__ in _CONNECT_TIMEOUTS for cause in _causes(exc))


def _retry_after(exc: BaseException) -> float | None:
    """The server's ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(ms) / 1000)
        if (value := headers.get("retry-after")) is not None:
            try:
                return max(0.0, float(value))
            except ValueError:
                when = email.utils.parsedate_to_datetime(value)
                return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return None


class ProviderRetries:
    """The ``retrieval.answers.model_calls.RetryPolicy`` of the OpenAI-compatible provider."""

    def failure(self, error: Exception) -> Exception:
        """``error``, raised by a call of the model, as its caller sees it: a reply the provider
        could not read (a 200 that is not a chat completion: HTML, truncated JSON, no choices, a
        stream without a single event) as ``MalformedResponseError``, one of ``LLM_FAILURES``;
        any other error as it is."""
        if isinstance(error, _GARBAGE_ERRORS) and not isinstance(error, LLM_FAILURES):
            malformed = MalformedResponseError(f"unreadable response: {type(error).__name__}")
            malformed.__cause__ = error
            return malformed
        return error

    def is_timeout(self, error: BaseException) -> bool:
        """A read timeout (the server took the request and did not answer in time); a connect
        timeout is a connection failure instead."""
        return isinstance(error, (openai.APITimeoutError, ModelTimeoutError)) and not _connect_timeout(error)

    def delay(self, error: BaseException, attempt: int) -> float | None:
        """Seconds before attempt ``attempt + 1``, or None when ``error`` is not worth another
        request (a timeout, a refused key, a bad request, a malformed reply)."""
        if self.is_timeout(error) or isinstance(error, (MalformedResponseError, ContextOverflowError)):
            return None
        status = getattr(error, "status_code", None)
        if isinstance(error, openai.APIStatusError) or isinstance(status, int):
            if not isinstance(status, int) or not (status in _RETRIED_STATUSES or status >= 500):
                return None
        elif not isinstance(error, (openai.APIConnectionError, ModelConnectionError, ModelRateLimitError,
                                    ModelAPIError)):
            return None
        told = _retry_after(error)
        if told is not None:
            return told
        return min(MAX_BACKOFF_SECONDS, BACKOFF_SECONDS * 2 ** (attempt - 1)) * (1 - 0.25 * random.random())


PROVIDER_RETRIES = ProviderRetries()


def _plural(attempts: int) -> str:
    return f"{attempts} attempt" + ("" if attempts == 1 else "s")


def describe_failure(exc: BaseException, attempts: int) -> str:
    """A short, secret-free cause for the notice, e.g. "HTTP 503 after 3 attempts"."""
    if isinstance(exc, ContextOverflowError):
        return "the prompt is too long for the model's context: ask with a smaller k"
    if isinstance(exc, openai.APITimeoutError):
        return f"timeout after {_plural(attempts)}"
    if isinstance(exc, openai.APIConnectionError):
        return f"cannot connect, {_plural(attempts)}"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retried = status in _RETRIED_STATUSES or status >= 500
        if status == 429:
            return f"rate limited (HTTP 429) after {_plural(attempts)}"
        if status in (401, 403):
            return f"HTTP {status}: check OPENAI_API_KEY"
        if status == 404:
            return "HTTP 404: check PAPERBOT_LLM_MODEL and OPENAI_BASE_URL"
        return f"HTTP {status} after {_plural(attempts)}" if retried else f"HTTP {status}"
    if isinstance(exc, (openai.APIResponseValidationError, MalformedResponseError)):
        return "malformed response"
    name = type(exc).__name__
    if "Timeout" in name:
        return f"timeout after {_plural(attempts)}"
    if "RateLimit" in name:
        return f"rate limited after {_plural(attempts)}"
    if "Connection" in name:
        return f"cannot connect, {_plural(attempts)}"
    return f"model error: {name}"
