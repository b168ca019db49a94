"""Crossref API client (``retrieval.sources.apis.crossref``): cursors, ORCID filters, DOIs, errors, a
real local server."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import httpx
import pytest

from retrieval.errors import InputError, SourceError
from retrieval.sources.apis.crossref import CrossrefSource
from tests.sources.replay import FIXTURES, FakeClock, Replay, ReplayServer, load, make_settings, recording

API = "https://api.crossref.org"


def _body(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "crossref" / name).read_text(encoding="utf-8"))["body"]


def _source(replay: Replay, **settings: object) -> CrossrefSource:
    clock = FakeClock()
    return CrossrefSource(make_settings(**settings), replay.client(), clock.sleep, clock=clock)


# --- the client -----------------------------------------------------------------------------------


def test_search_pages_with_cursors():
    first = load("crossref/test-cursor__test_cursor__0.json")  # query=widget&cursor=*
    next_cursor = _body("test-cursor__test_cursor__0.json")["message"]["next-cursor"]
    # the recorded second page of the same query (from another session) re-served at this cursor
    second = load("crossref/test-cursor__test_cursor_max__1.json",
                  url=str(httpx.URL(f"{API}/works", params={"query": "widget", "cursor": next_cursor})))
    replay = Replay([first, second], ignore_params={"rows"})
    source = _source(replay)
    papers = list(source.search("widget", max_results=30))
    assert len(papers) == 30
    assert [p["cursor"] for p in replay.params] == ["*", next_cursor]
    assert [p["rows"] for p in replay.params] == ["30", "30"]
    undated = [p for p in papers if p.doi == "10.1007/978-1-4302-0197-7_9"]
    assert undated and undated[0].published is None  # issued [[null]] keeps the paper


def test_works_by_orcid_filter_and_newest_first():
    params = {"filter": "orcid:0000-0003-3086-4443,from-pub-date:2010-01-01", "sort": "published", "order": "desc",
              "rows": 5, "cursor": "*"}
    body = _body("test-crossref_reader__test_get_random_crossref_id__1.json")  # 5 real works re-served
    replay = Replay([recording(str(httpx.URL(f"{API}/works", params=params)), body)])
    source = _source(replay, contact_email="lab@example.org")
    papers = list(source.works_by_orcid("https://orcid.org/0000-0003-3086-4443", since=date(2010, 1, 1), max_results=5))
    assert len(papers) == 5 and len(replay.requests) == 1  # total-results 5 reached: no second page
    assert replay.requests[0].headers["User-Agent"] == "paperbot/0.1 (mailto:lab@example.org)"
    with pytest.raises(InputError):
        source.works_by_orcid("0000-0003")
    with pytest.raises(InputError):
        source.search("  ")


def test_work_by_doi_found_and_unknown():
    found = load("crossref/test-works__test_works_with_many_ids__1.json")
    # Crossref answers an unknown DOI with 404; the recorded 404 body (a bad cursor) re-served here
    missing = load("crossref/test-cursor__test_cursor_fails_cursor_value__0.json", url=f"{API}/works/10.9999/nothing")
    source = _source(Replay([found, missing]))
    fetched = source.work_by_doi("doi:10.1002/JOR.1100150407")
    assert fetched is not None and fetched.items[0].title.startswith("Growth hormone secretagogue")
    assert source.work_by_doi("10.9999/nothing") is None


def test_http_400_carries_crossref_error_text():
    # the recorded 400 ("query.* not allowed on this route") re-served for a DOI lookup
    bad = load("crossref/test-works__test_works_query_filters_not_allowed_with_dois__0.json",
               url=f"{API}/works/10.1371/journal.pone.0033693")
    source = _source(Replay([bad]))
    with pytest.raises(SourceError) as caught:
        source.work_by_doi("10.1371/journal.pone.0033693")
    error = caught.value
    assert error.source == "crossref" and error.status == 400
    assert "work 10.1371/journal.pone.0033693: HTTP 400: This route does not support field query parameters" in str(error)


def test_untitled_single_work_is_skipped_not_raised():
    body = _body("test-works__test_works_with_many_ids__1.json")
    body["message"]["title"] = []
    source = _source(Replay([recording(f"{API}/works/10.1002/jor.1100150407", body)]))
    fetched = source.work_by_doi("10.1002/jor.1100150407")
    assert fetched is not None and fetched.items == []
    assert fetched.skipped[0].reason == "no title"


def test_malformed_json_is_a_source_error():
    replay = Replay([recording(f"{API}/works/10.1002/jor.1100150407", b'{"status": "ok", "message": {"DOI": ')])
    with pytest.raises(SourceError, match="not valid JSON"):
        _source(replay).work_by_doi("10.1002/jor.1100150407")


def test_through_a_real_local_server():
    replay = Replay([load("crossref/test-works__test_works_with_many_ids__1.json")])
    with ReplayServer(replay) as server:
        source = CrossrefSource(make_settings(crossref_url=server.url))
        fetched = source.work_by_doi("10.1002/jor.1100150407")
        source.close()
    assert fetched is not None and fetched.items[0].doi == "10.1002/jor.1100150407"
    assert replay.unmatched == [] and server.paths == ["/works/10.1002/jor.1100150407"]
