"""The only module that builds chat models or knows provider exception types.

``build_chat_model`` returns a ``ChatOpenAI`` for any OpenAI-compatible endpoint (OpenAI,
vLLM, Ollama, llama.cpp...), or None when no endpoint is configured. Transport retries belong
to the openai SDK: timeouts, connection errors, 408/409/429 and 5xx are retried
``settings.llm_max_retries`` times with back-off, honouring ``Retry-After``/``retry-after-ms``.
What still fails reaches the caller as one of ``LLM_FAILURES``; ``describe_failure`` turns it
into the short parenthesis of the notice ("timeout after 3 attempts").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
from langchain_core.exceptions import ContextOverflowError, ModelError
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from retrieval.config import Settings

# Key sent to OpenAI-compatible servers that need none (a base URL without OPENAI_API_KEY).
PLACEHOLDER_API_KEY = "not-needed"


class MalformedResponseError(ModelError):
    """The endpoint answered 200 with a body that is not a chat completion (HTML, truncated JSON)."""


# Everything a chat model call may raise once the endpoint is down, slow, refusing or broken.
LLM_FAILURES: tuple[type[Exception], ...] = (ModelError, openai.APIError)
# What the provider's parsing raises on a 200 response that is not a chat completion.
_GARBAGE_ERRORS = (ValueError, LookupError, TypeError, AttributeError)


def _checked(result: ChatResult) -> ChatResult:
    if not result.generations:
        raise MalformedResponseError("unreadable response: no choices")
    return result


class _GuardedChatOpenAI(ChatOpenAI):
    """ChatOpenAI whose response-parsing crashes surface as ``MalformedResponseError``.

    A server answering 200 with garbage makes langchain-openai raise JSONDecodeError,
    IndexError or ValueError from deep inside; callers should see one model failure instead.
    """

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        try:
            result = super()._generate(*args, **kwargs)
        except LLM_FAILURES:
            raise
        except _GARBAGE_ERRORS as exc:
            raise MalformedResponseError(f"unreadable response: {type(exc).__name__}") from exc
        return _checked(result)

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        chunks = 0
        try:
            for chunk in super()._stream(*args, **kwargs):
                chunks += 1
                yield chunk
        except LLM_FAILURES:
            raise
        except _GARBAGE_ERRORS as exc:
            raise MalformedResponseError(f"unreadable response: {type(exc).__name__}") from exc
        if not chunks:  # a body with no server-sent events at all
            raise MalformedResponseError("unreadable response: no stream events")

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        try:
            result = await super()._agenerate(*args, **kwargs)
        except LLM_FAILURES:
            raise
        except _GARBAGE_ERRORS as exc:
            raise MalformedResponseError(f"unreadable response: {type(exc).__name__}") from exc
        return _checked(result)

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        chunks = 0
        try:
            async for chunk in super()._astream(*args, **kwargs):
                chunks += 1
                yield chunk
        except LLM_FAILURES:
            raise
        except _GARBAGE_ERRORS as exc:
            raise MalformedResponseError(f"unreadable response: {type(exc).__name__}") from exc
        if not chunks:
            raise MalformedResponseError("unreadable response: no stream events")

_RETRIED_STATUSES = frozenset({408, 409, 429})


def build_chat_model(settings: Settings) -> BaseChatModel | None:
    """The configured chat model, or None when neither a key nor a base URL is set."""
    if not settings.llm_configured:
        return None
    return _GuardedChatOpenAI(
        model=settings.llm_model,
        base_url=settings.openai_base_url,
        api_key=settings.openai_api_key or SecretStr(PLACEHOLDER_API_KEY),
        use_responses_api=False,
        timeout=settings.llm_timeout,
        max_retries=settings.llm_max_retries,
        temperature=settings.llm_temperature,
        max_completion_tokens=settings.llm_max_tokens,  # ChatOpenAI.max_tokens by its alias, OpenAI's current name
        # servers other than OpenAI's (llama.cpp, vLLM, Ollama) may know only the older name
        extra_body={"max_tokens": settings.llm_max_tokens} if settings.openai_base_url else None,
    )


def model_attempts(model: BaseChatModel, settings: Settings) -> int:
    """How many requests one call makes at most: the model's own retry count + 1."""
    retries = getattr(model, "max_retries", None)
    return (retries if isinstance(retries, int) else settings.llm_max_retries) + 1


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
