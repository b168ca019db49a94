"""``retrieval.answers.llm.PROVIDER_RETRIES``: which provider failures get another request, and when.

The openai SDK's own exception types, built as the SDK builds them (over its transport's
request and response objects, httpx2 today).
"""

from __future__ import annotations

import httpx2
import openai
import pytest
from langchain_core.exceptions import ModelConnectionError, ModelRateLimitError, ModelTimeoutError

from retrieval.answers.llm import MAX_BACKOFF_SECONDS, PROVIDER_RETRIES, MalformedResponseError

REQUEST = httpx2.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")


def status(code: int, **headers: str) -> openai.APIStatusError:
    response = httpx2.Response(code, headers=headers, request=REQUEST)
    return openai.APIStatusError(f"HTTP {code}", response=response, body=None)


class ConnectTimeout(Exception):
    """Named like the transport's connect timeout (httpx and httpx2 alike)."""


def timeout_from(cause: Exception) -> openai.APITimeoutError:
    try:
        raise openai.APITimeoutError(request=REQUEST) from cause
    except openai.APITimeoutError as exc:
        return exc


@pytest.mark.parametrize("code", [408, 409, 429, 500, 502, 503])
def test_retried_statuses_wait_what_the_server_asks(code: int) -> None:
    assert PROVIDER_RETRIES.delay(status(code, **{"retry-after-ms": "250"}), 1) == 0.25
    assert PROVIDER_RETRIES.delay(status(code, **{"retry-after": "3"}), 1) == 3.0


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
def test_a_request_the_server_refused_is_not_sent_again(code: int) -> None:
    assert PROVIDER_RETRIES.delay(status(code, **{"retry-after": "1"}), 1) is None


def test_without_retry_after_the_back_off_doubles_up_to_its_cap() -> None:
    waits = [PROVIDER_RETRIES.delay(openai.APIConnectionError(request=REQUEST), n) for n in (1, 2, 3, 8)]
    assert all(wait is not None for wait in waits)
    assert 0.375 <= waits[0] <= 0.5 and 0.75 <= waits[1] <= 1.0 and waits[3] <= MAX_BACKOFF_SECONDS  # type: ignore[operator]


def test_a_read_timeout_is_never_retried_a_connect_timeout_is() -> None:
    read = timeout_from(TimeoutError("read"))
    assert PROVIDER_RETRIES.is_timeout(read) and PROVIDER_RETRIES.delay(read, 1) is None
    assert PROVIDER_RETRIES.is_timeout(ModelTimeoutError("slow"))
    connect = timeout_from(ConnectTimeout("no route"))
    assert not PROVIDER_RETRIES.is_timeout(connect) and PROVIDER_RETRIES.delay(connect, 1) is not None


def test_langchain_s_provider_neutral_errors_are_classified_alike() -> None:
    assert PROVIDER_RETRIES.delay(ModelRateLimitError("429"), 1) is not None
    assert PROVIDER_RETRIES.delay(ModelConnectionError("refused"), 1) is not None
    assert PROVIDER_RETRIES.delay(MalformedResponseError("garbage"), 1) is None
    assert PROVIDER_RETRIES.delay(ValueError("a bug"), 1) is None
