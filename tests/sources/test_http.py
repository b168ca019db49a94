"""PoliteClient: spacing, retries with Retry-After and backoff, errors that name the source."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from retrieval.errors import SourceError
from retrieval.sources.http import PoliteClient, parse_retry_after, user_agent
from tests.sources.replay import FakeClock, Replay, load, make_settings, recording

URL = "https://api.crossref.org/works/10.1002/jor.1100150407"
# A real recorded body; the error cases below re-serve it with another status/header, since
# no recorded 429/503 exists.
OK = load("crossref/test-works__test_works_with_many_ids__1.json")


def _client(replay: Replay, clock: FakeClock, **settings: object) -> PoliteClient:
    return PoliteClient(
        "crossref", make_settings(**settings), replay.client(), sleep=clock.sleep, clock=clock,
        rng=random.Random(7),
    )


def _status(status: int, headers: dict[str, str] | None = None):
    return recording(URL, OK.body, status, headers)


# --- Retry-After -------------------------------------------------------------------------------


def test_retry_after_seconds_and_http_date():
    now = datetime(2026, 4, 12, 22, 0, 0, tzinfo=UTC)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0 ") == 0.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now=now) == 30.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_429_waits_exactly_retry_after_then_succeeds():
    replay = Replay([_status(429, {"Retry-After": "2"}), OK])
    clock = FakeClock()
    response = _client(replay, clock).get(URL, what="work 10.1002/jor.1100150407")
    assert response is not None and response.json()["message"]["DOI"] == "10.1002/jor.1100150407"
    assert clock.waits == [2.0]
    assert len(replay.requests) == 2


def test_retry_after_as_http_date_is_honoured():
    when = datetime.now(UTC) + timedelta(seconds=40)
    replay = Replay([_status(503, {"Retry-After": format_datetime(when, usegmt=True)}), OK])
    clock = FakeClock()
    assert _client(replay, clock).get(URL, what="work") is not None
    assert len(clock.waits) == 1 and 35 <= clock.waits[0] <= 40


def test_retry_after_beyond_reason_fails_at_once():
    replay = Replay([_status(429, {"Retry-After": "86400"}), OK])
    clock = FakeClock()
    with pytest.raises(SourceError) as caught:
        _client(replay, clock).get(URL, what="work 10.1002/jor.1100150407")
    assert caught.value.status == 429 and "wait 86400 s" in str(caught.value)
    assert clock.waits == [] and len(replay.requests) == 1


# --- staying down ----------------------------------------------------------------------------


def test_5xx_that_stays_down_raises_source_error_after_backoff():
    replay = Replay([_status(503)])
    clock = FakeClock()
    with pytest.raises(SourceError) as caught:
        _client(replay, clock, http_max_retries=3).get(URL, what="work 10.1002/jor.1100150407")
    error = caught.value
    assert error.source == "crossref" and error.status == 503
    message = str(error)
    assert message.startswith("crossref: work 10.1002/jor.1100150407 failed after 4 attempts: HTTP 503")
    assert "try again in a few minutes" in message
    assert len(replay.requests) == 4
    # exponential backoff with jitter: attempt n waits between half and all of 2**n seconds
    assert len(clock.waits) == 3
    for attempt, wait in enumerate(clock.waits):
        assert 2**attempt / 2 <= wait <= 2**attempt


def test_timeouts_and_dropped_connections_are_retried():
    outcomes = [httpx.ReadTimeout("slow"), httpx.ConnectError("refused")]

    def handler(request: httpx.Request) -> httpx.Response:
        if outcomes:
            raise outcomes.pop(0)
        return httpx.Response(200, content=OK.body, headers=OK.headers)

    clock = FakeClock()
    client = PoliteClient("openalex", make_settings(), httpx.Client(transport=httpx.MockTransport(handler)),
                          sleep=clock.sleep, clock=clock)
    assert client.get(URL, what="work") is not None
    assert len(clock.waits) == 2


def test_network_down_names_source_and_says_what_to_check():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    clock = FakeClock()
    client = PoliteClient("openalex", make_settings(http_max_retries=1),
                          httpx.Client(transport=httpx.MockTransport(handler)), sleep=clock.sleep, clock=clock)
    with pytest.raises(SourceError) as caught:
        client.get(URL, what="search 'graph neural networks'")
    message = str(caught.value)
    assert message.startswith("openalex: search 'graph neural networks' failed after 2 attempts: connection failed")
    assert "network connection" in message and caught.value.status is None


def test_zero_retries_means_one_attempt():
    replay = Replay([_status(500)])
    clock = FakeClock()
    with pytest.raises(SourceError, match="after 1 attempt:"):
        _client(replay, clock, http_max_retries=0).get(URL, what="work")
    assert clock.waits == [] and len(replay.requests) == 1


# --- not retried ---------------------------------------------------------------------------------


def test_400_is_not_retried_and_carries_the_api_text():
    bad = load("crossref/test-works__test_works_query_filters_not_allowed_with_dois__0.json")
    replay = Replay([bad])
    clock = FakeClock()
    client = PoliteClient("crossref", make_settings(), replay.client(), sleep=clock.sleep, clock=clock,
                          describe_error=lambda r: r.json()["message"][0]["message"])
    with pytest.raises(SourceError) as caught:
        client.get(bad.url, what="work 10.1371/journal.pone.0033693")
    assert caught.value.status == 400
    assert "This route does not support field query parameters" in str(caught.value)
    assert "check the query or identifiers" in str(caught.value)
    assert len(replay.requests) == 1 and clock.waits == []


def test_404_is_empty_only_where_the_caller_says_so():
    # The recorded 404 (an invalid Crossref cursor) re-served at a DOI address.
    missing = load("crossref/test-cursor__test_cursor_fails_cursor_value__0.json", url=URL)
    clock = FakeClock()
    replay = Replay([missing])
    client = _client(replay, clock)
    assert client.get_or_none(URL, what="work") is None
    with pytest.raises(SourceError) as caught:
        client.get(URL, what="work")
    assert caught.value.status == 404
    assert len(replay.requests) == 2 and clock.waits == []


def test_a_broken_error_describer_does_not_hide_the_failure():
    def broken(response: httpx.Response) -> str | None:
        raise ZeroDivisionError("a bug in the describer")

    replay = Replay([_status(400)])
    clock = FakeClock()
    client = PoliteClient("arxiv", make_settings(), replay.client(), sleep=clock.sleep, clock=clock,
                          describe_error=broken)
    with pytest.raises(SourceError, match="HTTP 400: Bad Request"):
        client.get(URL, what="search")


# --- politeness ------------------------------------------------------------------------------------


def test_minimum_interval_between_calls_and_user_agent():
    replay = Replay([OK])
    clock = FakeClock()
    client = PoliteClient("arxiv", make_settings(contact_email="lab@example.org"), replay.client(),
                          min_interval=3.0, sleep=clock.sleep, clock=clock)
    client.get(URL, what="first")
    clock.now += 1.0  # one second of work between the calls
    client.get(URL, what="second")
    client.get(URL, what="third")
    assert clock.waits == [2.0, 3.0]
    assert replay.requests[0].headers["User-Agent"] == "paperbot/0.1 (mailto:lab@example.org)"


def test_user_agent_without_contact():
    assert user_agent(make_settings()) == "paperbot/0.1"


def test_bad_base_url_is_reported_not_retried():
    clock = FakeClock()
    client = PoliteClient("crossref", make_settings(), httpx.Client(), sleep=clock.sleep, clock=clock)
    with pytest.raises(SourceError, match="base URL"):
        client.get("ftp://api.crossref.org/works", what="search")
    assert clock.waits == []
