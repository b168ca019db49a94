"""Polite HTTP GETs for the metadata APIs: spacing, retries with backoff, clear failures.

``PoliteClient`` wraps one injected ``httpx.Client`` for one source (arXiv, OpenAlex,
Crossref) and decides, for every response, between three outcomes:

- success (2xx) -> the response; 404 through ``get_or_none`` (not found is an answer) -> None;
- transient failure (429, 408, 5xx, timeouts, dropped connections) -> wait and retry, at most
  ``settings.http_max_retries`` times. The wait is the server's ``Retry-After`` (seconds or an
  HTTP date) when it sends one, else exponential backoff with jitter;
- permanent failure (400 and other 4xx, or retries exhausted) -> ``SourceError`` naming the
  source, what was being fetched, the API's own error text and what to do next.

Requests to one source are spaced by ``min_interval`` seconds (arXiv asks for 3 s). Waiting
goes through the injected ``sleep`` and ``clock`` so tests never wait.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from retrieval.config import Settings
from retrieval.errors import SourceError

USER_AGENT = "paperbot/0.1"

#: Backoff without Retry-After: base * 2**attempt, at most MAX_BACKOFF, with "equal jitter"
#: (half fixed, half random) so parallel clients spread out but never retry immediately.
BASE_BACKOFF = 1.0
MAX_BACKOFF = 60.0
#: A Retry-After longer than this is not waited out: the caller gets a SourceError at once.
MAX_RETRY_AFTER = 300.0
#: Statuses worth retrying: rate limited, request timeout, server-side trouble.
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524})

ErrorDescriber = Callable[[httpx.Response], "str | None"]


def user_agent(settings: Settings) -> str:
    """``paperbot/0.1``, plus the contact address that admits us to polite pools."""
    if settings.contact_email:
        return f"{USER_AGENT} (mailto:{settings.contact_email})"
    return USER_AGENT


def build_http_client(settings: Settings) -> httpx.Client:
    """The real client used when none is injected: timeouts, redirects and user agent set."""
    return httpx.Client(
        timeout=httpx.Timeout(settings.http_timeout),
        follow_redirects=True,
        headers={"User-Agent": user_agent(settings)},
    )


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date), or None."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def shorten(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters, for error messages."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class PoliteClient:
    """GET with spacing, retries and source-named errors, for one source.

    ``describe_error`` turns an error response body into the API's own message (each API
    words its errors differently); it may return None when the body says nothing useful.
    """

    def __init__(
        self,
        source: str,
        settings: Settings,
        client: httpx.Client | None = None,
        *,
        min_interval: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        describe_error: ErrorDescriber | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.source = source
        self.max_retries = settings.http_max_retries
        self.min_interval = min_interval
        self._client = client if client is not None else build_http_client(settings)
        self._owns_client = client is None
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._describe_error = describe_error
        self._headers = {"User-Agent": user_agent(settings), **(headers or {})}
        self._last_request: float | None = None

    def close(self) -> None:
        """Close the underlying client if this object created it."""
        if self._owns_client:
            self._client.close()

    # --- public operations -------------------------------------------------------------------

    def get(self, url: str, params: Mapping[str, Any] | None = None, *, what: str) -> httpx.Response:
        """GET ``url``; ``what`` names the request in errors ("search 'graph neural nets'")."""
        return self._request(url, params, what=what, not_found_is_empty=False)

    def get_or_none(self, url: str, params: Mapping[str, Any] | None = None, *, what: str) -> httpx.Response | None:
        """Like ``get``, but a 404 means "no such thing" and returns None (an unknown DOI)."""
        response = self._request(url, params, what=what, not_found_is_empty=True)
        return None if response.status_code == 404 else response

    def _request(
        self, url: str, params: Mapping[str, Any] | None, *, what: str, not_found_is_empty: bool
    ) -> httpx.Response:
        """The successful response (or the 404 when allowed), after retries; else SourceError."""
        attempts = self.max_retries + 1
        problem = "no attempt was made"
        status: int | None = None
        for attempt in range(attempts):
            self._keep_interval()
            try:
                response = self._client.get(url, params=params, headers=self._headers, follow_redirects=True)
            except httpx.TimeoutException:
                problem, status, wait = "timed out", None, None
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                raise SourceError(
                    self.source,
                    f"{what}: the URL {url} cannot be requested ({exc}). "
                    "Check the source's base URL setting.",
                ) from None
            except httpx.TransportError as exc:
                problem, status, wait = f"connection failed ({type(exc).__name__})", None, None
            else:
                status = response.status_code
                if response.is_success:
                    return response
                if status == 404 and not_found_is_empty:
                    return response
                if status not in RETRY_STATUSES:
                    raise self._permanent_error(response, what)
                problem = f"HTTP {status}{self._detail(response)}"
                wait = parse_retry_after(response.headers.get("Retry-After"))
                if wait is not None and wait > MAX_RETRY_AFTER:
                    raise SourceError(
                        self.source,
                        f"{what}: the service asked us to wait {wait:.0f} s (HTTP {status}). "
                        "Try again later.",
                        status=status,
                    )
            if attempt + 1 < attempts:
                self._sleep(wait if wait is not None else self._backoff(attempt))
        raise SourceError(
            self.source,
            f"{what} failed after {attempts} attempt{'s' if attempts != 1 else ''}: {problem}. "
            f"{self._advice(status)}",
            status=status,
        )

    # --- helpers ---------------------------------------------------------------------------

    def _keep_interval(self) -> None:
        """Sleep so that consecutive requests start at least ``min_interval`` apart."""
        now = self._clock()
        if self._last_request is not None and self.min_interval > 0:
            remaining = self.min_interval - (now - self._last_request)
            if remaining > 0:
                self._sleep(remaining)
                now = self._clock()
        self._last_request = now

    def _backoff(self, attempt: int) -> float:
        ceiling = min(MAX_BACKOFF, BASE_BACKOFF * (2**attempt))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def _detail(self, response: httpx.Response) -> str:
        text = self._api_message(response)
        return f": {text}" if text else ""

    def _api_message(self, response: httpx.Response) -> str | None:
        if self._describe_error is not None:
            try:
                described = self._describe_error(response)
            except Exception:  # noqa: BLE001 - a describer (any parser) must never hide the real failure
                described = None
            if described:
                return shorten(described)
        reason = response.reason_phrase
        return reason or None

    def _permanent_error(self, response: httpx.Response, what: str) -> SourceError:
        status = response.status_code
        message = self._api_message(response) or "no explanation given"
        if status == 400:
            advice = "The request was rejected as malformed; check the query or identifiers."
        elif status in (401, 403):
            advice = "Access was refused; check the contact e-mail (PAPERBOT_CONTACT_EMAIL) and try later."
        elif status == 404:
            advice = "Nothing exists at that address; check the identifier and the base URL setting."
        else:
            advice = "Check the request and the source's base URL setting."
        return SourceError(self.source, f"{what}: HTTP {status}: {message}. {advice}", status=status)

    def _advice(self, status: int | None) -> str:
        if status == 429:
            return "The service is rate limiting us; wait a few minutes and try again."
        if status is None:
            return "Check the network connection and the source's base URL setting, then try again."
        return "The service seems to be down; try again in a few minutes."


class ApiSource:
    """What every API connector shares: a ``PoliteClient`` for its source.

    Subclasses set ``SOURCE`` and pass their error describer (and arXiv its politeness delay).
    A call's items, and what it could not use, are its return value (``sources.fetched``).
    """

    SOURCE: str = ""

    def __init__(
        self,
        settings: Settings,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        *,
        clock: Callable[[], float] = time.monotonic,
        min_interval: float = 0.0,
        describe_error: ErrorDescriber | None = None,
    ) -> None:
        self.http = PoliteClient(
            self.SOURCE, settings, client, min_interval=min_interval, sleep=sleep, clock=clock,
            describe_error=describe_error,
        )

    def close(self) -> None:
        """Close the HTTP client if this source built it."""
        self.http.close()
