"""arXiv API client (``retrieval.sources.apis.arxiv``): paging, id lookups, author queries, errors, a
real local server."""

from __future__ import annotations

import json
from datetime import date

import httpx
import pytest

from retrieval.errors import InputError, SourceError
from retrieval.sources.apis.arxiv import ArxivSource, author_query
from tests.sources.replay import FIXTURES, FakeClock, Replay, ReplayServer, body_bytes, load, make_settings, recording

API = "https://export.arxiv.org/api/query"


def _body(name: str) -> bytes:
    """The bytes arXiv sent for a recorded response (or a raw 2016 .xml feed)."""
    path = FIXTURES / "arxiv" / name
    if path.suffix == ".xml":
        return path.read_bytes()
    return body_bytes(json.loads(path.read_text(encoding="utf-8"))["body"])[0]


def _source(replay: Replay, clock: FakeClock | None = None, **settings: object) -> ArxivSource:
    clock = clock or FakeClock()
    return ArxivSource(make_settings(**settings), replay.client(), clock.sleep, clock=clock)


def _search_url(query: str, start: int, size: int, sort_by: str = "relevance") -> str:
    params = {"search_query": query, "id_list": "", "sortBy": sort_by, "sortOrder": "descending",
              "start": start, "max_results": size}
    return str(httpx.URL(API, params=params))


# --- the client ------------------------------------------------------------------------------------


def test_search_pages_by_start_and_max_results_politely():
    replay = Replay(load(f"arxiv/{name}.json") for name in (
        "q_testing_s0_m10_bc5a6c384fe9", "q_testing_s10_m10_34e56e15aaac", "q_testing_s20_m10_348a237fecab"))
    clock = FakeClock()
    source = _source(replay, clock)
    found = source.search("testing", max_results=30, page_size=10).collect()
    papers = found.items
    assert len(papers) == 30 and len({p.arxiv_id for p in papers}) == 30
    assert [(p["start"], p["max_results"]) for p in replay.params] == [("0", "10"), ("10", "10"), ("20", "10")]
    assert clock.waits == [3.0, 3.0]  # settings.arxiv_delay between calls, none before the first
    assert found.skipped == []
    # the recorder stored UTF-8 as Latin-1; the client sees arXiv's real bytes
    assert "Aurora Ramírez" in [a.name for p in papers for a in p.authors]


def test_empty_query_is_refused_before_any_request():
    replay = Replay([])
    with pytest.raises(InputError):
        _source(replay).search("   ")  # raised at the call, not on first iteration
    assert replay.requests == []


def test_search_stops_at_max_results_mid_page():
    replay = Replay([load("arxiv/q_testing_s0_m10_bc5a6c384fe9.json")])
    papers = list(_source(replay).search("testing", max_results=10, page_size=10))
    assert len(papers) == 10 and len(replay.requests) == 1


def test_pages_fetched_before_a_failure_are_kept():
    # page 2 is re-served with HTTP 503 (no recorded outage exists): the service "stays down"
    replay = Replay([
        load("arxiv/q_testing_s0_m10_bc5a6c384fe9.json"),
        load("arxiv/q_testing_s10_m10_34e56e15aaac.json", status_code=503),
    ])
    got = []
    with pytest.raises(SourceError) as caught:
        for paper in _source(replay, http_max_retries=2).search("testing", max_results=30, page_size=10):
            got.append(paper)  # noqa: PERF402 - one by one: the papers delivered before the failure stay
    assert len(got) == 10
    assert caught.value.status == 503 and str(caught.value).startswith("arxiv: search 'testing' failed after 3 attempts")


def test_http_400_error_feed_becomes_source_error():
    # the recorded 400 for id_list=abc, re-served for a search query the API would refuse alike
    replay = Replay([load("arxiv/id_abc_s0_m100_b79c8dcf6bc3.json", url=_search_url("abc", 0, 10))])
    with pytest.raises(SourceError) as caught:
        list(_source(replay).search("abc", max_results=10, page_size=10))
    assert caught.value.status == 400 and "incorrect id format for abc" in str(caught.value)
    assert len(replay.requests) == 1


def test_by_ids_handles_versions_unknown_and_malformed_ids():
    replay = Replay([
        load("arxiv/id_2104.12255v1_s0_m100_6ae69987ffe1.json"),
        load("arxiv/id_0808.05394_1707.08567_s0_m100_42e5aa0ec3af.json"),
        load("arxiv/id_quant-ph_0201082v1_s0_m100_86989fe779ef.json"),
    ])
    source = _source(replay)
    fetched = source.by_ids(["arXiv:2104.12255v1", "abc"])
    [paper] = fetched.items
    assert (paper.arxiv_id, paper.arxiv_version) == ("2104.12255", "v1")
    assert [(s.item, s.reason) for s in fetched.skipped] == [("arXiv id 'abc'", "not an arXiv identifier")]
    assert replay.params[0]["id_list"] == "2104.12255v1"

    fetched = source.by_ids(["0808.05394", "1707.08567"])
    papers = fetched.items
    assert [p.arxiv_id for p in papers] == ["1707.08567"]
    assert "Dirk Wübben" in papers[0].author_names
    assert [(s.item, s.reason) for s in fetched.skipped] == [("arXiv id 0808.05394", "arXiv has no paper with this id")]

    [old] = source.by_ids(["https://arxiv.org/abs/quant-ph/0201082v1"]).items
    assert (old.arxiv_id, old.arxiv_version) == ("quant-ph/0201082", "v1")


def test_unknown_id_lookup_is_empty_and_reported():
    replay = Replay([load("arxiv/id_0000.0000_s0_m100_8b51d9633a68.json")])
    source = _source(replay)
    fetched = source.by_ids(["0000.0000"])
    assert fetched.items == []
    assert fetched.skipped[0].reason == "arXiv has no paper with this id"


def test_by_author_sorts_by_submission_and_stops_before_since():
    # a real 2016 author-query feed (10 of 24 results), re-served for the by_author request
    feed = _body("au_del_maestro_ANDNOT_checkerboard_pyrochlore.xml")
    replay = Replay([
        recording(_search_url('au:"Del_Maestro_Adrian"', 0, size, sort_by="submittedDate"), feed) for size in (100, 10)
    ])
    source = _source(replay)
    papers = list(source.by_author("Adrian Del Maestro", since=date(2010, 1, 1)))
    # the first entry (2012) is kept; the second (2004) is older than `since`: paging stops there
    assert [p.published for p in papers] == ["2012-01-23"]
    assert replay.params[0]["sortBy"] == "submittedDate" and replay.params[0]["sortOrder"] == "descending"

    everything = list(source.by_author("Del Maestro, Adrian", max_results=10))
    assert len(everything) == 10 and len(replay.requests) == 2


def test_author_query_shapes():
    assert author_query("Adrian Del Maestro") == 'au:"Del_Maestro_Adrian"'
    assert author_query("Del Maestro, Adrian") == 'au:"Del_Maestro_Adrian"'
    assert author_query("Ludwig van Beethoven") == 'au:"van_Beethoven_Ludwig"'
    assert author_query("au:del_maestro") == "au:del_maestro"
    with pytest.raises(InputError):
        author_query("   ")


def test_through_a_real_local_server():
    replay = Replay([load("arxiv/id_2104.12255v1_s0_m100_6ae69987ffe1.json")])
    with ReplayServer(replay) as server:
        settings = make_settings(arxiv_url=f"{server.url}/api/query", arxiv_delay=0.0)
        source = ArxivSource(settings)  # the real httpx client built from settings
        [paper] = source.by_ids(["2104.12255v1"])
        source.close()
    assert paper.arxiv_id == "2104.12255" and replay.unmatched == []
    assert server.paths[0].startswith("/api/query?")
