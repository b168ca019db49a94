"""OpenAlex API client (``retrieval.sources.apis.openalex``): cursors, DOIs, author search (deleted,
merged profiles), errors, a real local server."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import httpx
import pytest

from retrieval.errors import InputError, SourceError
from retrieval.sources.apis.openalex import OpenAlexSource
from tests.sources.replay import FIXTURES, FakeClock, Replay, ReplayServer, load, make_settings, recording

API = "https://api.openalex.org"


def _entity(name: str) -> dict[str, Any]:
    """A real OpenAlex object: a bare entity file or the body of a recorded response."""
    data = json.loads((FIXTURES / "openalex" / name).read_text(encoding="utf-8"))
    return data["body"] if "status_code" in data else data


def _url(path: str, **params: object) -> str:
    return str(httpx.URL(API + path, params=params))


def _source(replay: Replay, **settings: object) -> OpenAlexSource:
    clock = FakeClock()
    return OpenAlexSource(make_settings(**settings), replay.client(), clock.sleep, clock=clock)


# --- the client ----------------------------------------------------------------------------------


def _split_sample_into_two_pages(url1: str, url2: str) -> list:
    """Cursor pages built from the real 5-work sample response (no recorded cursor pages exist)."""
    body = _entity("test-openalex_reader__test_get_random_id_from_openalex__1.json")
    first = {"meta": {**body["meta"], "count": 5, "next_cursor": "Ils4NjUwXSI="}, "results": body["results"][:3]}
    second = {"meta": {**body["meta"], "count": 5, "next_cursor": None}, "results": body["results"][3:]}
    return [recording(url1, first), recording(url2, second)]


def test_works_by_author_pages_with_cursors_and_sends_mailto():
    params = {"filter": "author.id:A5023888391,from_publication_date:2000-01-01", "sort": "publication_date:desc",
              "per-page": 200, "mailto": "lab@example.org"}
    replay = Replay(_split_sample_into_two_pages(_url("/works", **params, cursor="*"),
                                                 _url("/works", **params, cursor="Ils4NjUwXSI=")))
    source = _source(replay, contact_email="lab@example.org")
    papers = list(source.works_by_author("https://openalex.org/A5023888391", since=date(2000, 1, 1)))
    assert [p.openalex_id for p in papers] == ["W2600965442", "W2042435470", "W2497229624", "W7120675484", "W2117049431"]
    assert [p["cursor"] for p in replay.params] == ["*", "Ils4NjUwXSI="]
    assert replay.requests[0].headers["User-Agent"] == "paperbot/0.1 (mailto:lab@example.org)"


def test_max_results_stops_paging_early():
    params = {"filter": "author.orcid:0000-0001-6187-6610", "sort": "publication_date:desc", "per-page": 2}
    replay = Replay(_split_sample_into_two_pages(_url("/works", **params, cursor="*"), _url("/unused")))
    papers = list(_source(replay).works_by_orcid("https://orcid.org/0000-0001-6187-6610", max_results=2))
    assert len(papers) == 2 and len(replay.requests) == 1


def test_work_by_doi_and_unknown_doi():
    found = load("openalex/test_doi_search_paper_attributes0___2.json")  # path has 10.1016%2Fj.xgen...
    # no recorded 404 exists: the same real body re-served with status 404 for an unknown DOI
    missing = load("openalex/test_doi_search_paper_attributes0___2.json",
                   url=f"{API}/works/https://doi.org/10.9999/nothing-here", status_code=404)
    source = _source(Replay([found, missing]))
    fetched = source.work_by_doi("https://doi.org/10.1016/j.xgen.2025.100814")
    assert fetched is not None
    [paper] = fetched.items
    assert paper.title == "High-throughput screening of human genetic variants by pooled prime editing"
    assert source.work_by_doi("10.9999/nothing-here") is None
    with pytest.raises(InputError):
        source.work_by_doi("not a doi")


def test_search_uses_the_search_parameter():
    body = _entity("test_title_search_paper_attributes2___3.json")
    url = _url("/works", search="chemistry tools", **{"per-page": 10}, cursor="*")
    replay = Replay([recording(url, body)])  # real search results re-served for a search= query
    papers = list(_source(replay).search("chemistry tools", max_results=10))
    assert len(papers) == 2 and all(p.provenance[0].source == "openalex" for p in papers)


def test_truncated_json_is_a_source_error_naming_the_request():
    good = load("openalex/test_doi_search_paper_attributes0___2.json")
    truncated = recording(good.url, good.body[: len(good.body) // 2])
    with pytest.raises(SourceError) as caught:
        _source(Replay([truncated])).work_by_doi("10.1016/j.xgen.2025.100814")
    assert "work 10.1016/j.xgen.2025.100814" in str(caught.value) and "not valid JSON" in str(caught.value)


def test_find_authors_skips_deleted_profiles():
    # author search results assembled from real author objects (no recorded /authors search)
    results = [_entity("A5023888391.json"), _entity("A5317838346.json"), _entity("A-api-response.json")]
    url = _url("/authors", search="Jason Priem", **{"per-page": 10})
    source = _source(Replay([recording(url, {"meta": {"count": 3}, "results": results})]))
    found = source.find_authors("Jason Priem")
    assert [a.id for a in found.items] == ["A5023888391", "A2150889177"]
    assert [(s.item, s.reason) for s in found.skipped] == [("OpenAlex author A5317838346", "profile was deleted")]


def test_author_lookup_by_orcid_deleted_and_merged():
    priem = _entity("A5023888391.json")
    replay = Replay([
        recording(f"{API}/authors/orcid:0000-0001-6187-6610", priem),
        recording(f"{API}/authors/A5317838346", _entity("A5317838346.json")),
        # a merged id answers with a redirect to the surviving profile (built: none recorded)
        recording(f"{API}/authors/A1111111111", b"", 301, {"Location": f"{API}/authors/A5023888391"}),
        recording(f"{API}/authors/A5023888391", priem),
        recording(f"{API}/authors/A9999999999", priem, 404),  # a real body re-served as "not found"
    ])
    source = _source(replay)
    assert source.author("https://orcid.org/0000-0001-6187-6610").display_name == "Jason Priem"
    with pytest.raises(InputError, match="has been deleted"):
        source.author("A5317838346")
    merged = source.author("A1111111111")
    assert merged.id == "A5023888391" and merged.redirected_from == "A1111111111"
    with pytest.raises(InputError, match="OpenAlex has no author"):
        source.author("A9999999999")
    with pytest.raises(InputError):
        source.author("Jason Priem")


def test_api_error_text_is_summarised():
    # OpenAlex words errors as {"error", "message"}; no recorded 400 exists, so this is hand-built
    body = {"error": "Invalid query parameters error.", "message": "author.idd is not a valid field."}
    url = _url("/works", filter="author.id:A5023888391", sort="publication_date:desc", **{"per-page": 200}, cursor="*")
    source = _source(Replay([recording(url, body, 400)]))
    with pytest.raises(SourceError) as caught:
        list(source.works_by_author("A5023888391"))
    assert caught.value.status == 400 and "author.idd is not a valid field" in str(caught.value)


def test_through_a_real_local_server():
    replay = Replay([load("openalex/test_doi_search_paper_attributes0___2.json")])
    with ReplayServer(replay) as server:
        source = OpenAlexSource(make_settings(openalex_url=server.url))
        fetched = source.work_by_doi("10.1016/j.xgen.2025.100814")
        source.close()
    assert fetched is not None and fetched.items[0].doi == "10.1016/j.xgen.2025.100814"
    assert replay.unmatched == []
