"""OpenAlex: old and new schemas, inverted-index abstracts, authors (deleted, merged), cursors."""

from __future__ import annotations

import copy
import json
from datetime import date
from typing import Any

import httpx
import pytest

from retrieval.errors import InputError, ParseError, SourceError
from retrieval.sources.apis.openalex import OpenAlexSource
from retrieval.sources.providers.openalex import parse_author, parse_work, parse_works_page, rebuild_abstract
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


# --- parse_work ---------------------------------------------------------------------------------


def test_newer_work_schema():
    paper = parse_work(_entity("W2741809807.json"))
    assert paper.title.startswith("The state of OA: a large-scale analysis")
    assert paper.abstract is not None
    assert paper.abstract.startswith("Despite growing interest in Open Access (OA) to scholarly literature, there is an unmet need")
    assert paper.openalex_id == "W2741809807" and paper.doi == "10.7717/peerj.4375"
    assert paper.published == "2018-02-13" and paper.type == "article"
    assert (paper.venue, paper.publisher) == ("PeerJ", "PeerJ, Inc.")
    assert paper.open_access is True and paper.citation_count == 962
    assert paper.categories[0] == "scientometrics and bibliometrics research"  # topics, not concepts
    first = paper.authors[0]
    assert (first.name, first.orcid, first.openalex_id) == ("Heather Piwowar", "0000-0003-1613-5981", "A5048491430")
    assert first.affiliations == ["Impact Technology Development (United States)"]
    [prov] = paper.provenance
    assert prov.source == "openalex" and prov.source_id == "W2741809807"
    assert {"abstract", "citation_count", "open_access", "venue"} <= set(prov.fields)


def test_older_work_schema_host_venue_and_concepts():
    obj = _entity("W-api-response.json")
    for newer in ("primary_location", "locations", "best_oa_location", "topics"):
        obj.pop(newer)  # what a pre-2023 response looked like: host_venue and concepts only
    paper = parse_work(obj)
    assert paper.venue == "Physical Review Letters" and paper.publisher == "American Physical Society"
    assert paper.url == "https://journals.aps.org/prl/abstract/10.1103/PhysRevLett.118.221101"
    concepts = [c["display_name"] for c in obj["concepts"] if c["score"] >= 0.3]
    assert paper.categories == concepts and "Gravitational wave" in concepts
    assert paper.authors[0].affiliations == ["California Institute of Technology"]


def test_null_abstract_and_raw_author_name_fallback():
    obj = _entity("test-openalex_reader__test_missing_contributor_name__0.json")
    assert obj["abstract_inverted_index"] is None
    assert parse_work(obj).abstract is None
    obj["authorships"][0]["author"]["display_name"] = None
    assert parse_work(obj).authors[0].name == "Peter Wilson"  # from raw_author_name
    obj["authorships"][0]["raw_author_name"] = ""
    assert parse_work(obj).authors == []  # a nameless author is dropped, the paper kept


def test_arxiv_id_from_datacite_doi_and_from_landing_pages():
    results = _entity("test_title_search_paper_attributes2___3.json")["results"]
    chemcrow = next(r for r in results if "ChemCrow" in r["title"])
    paper = parse_work(chemcrow)
    assert paper.arxiv_id == "2304.05376" and paper.type == "preprint"
    without_doi = copy.deepcopy(chemcrow)
    without_doi["doi"] = None
    without_doi["ids"].pop("doi")
    paper = parse_work(without_doi)
    assert paper.doi is None and paper.arxiv_id == "2304.05376"  # found in locations[].landing_page_url
    assert paper.id == "arxiv:2304.05376"
    nature = next(r for r in results if "ChemCrow" not in r["title"])
    assert parse_work(nature).arxiv_id is None


def test_partial_select_object_is_rejected_with_its_name():
    obj = _entity("test_does_openalex_work_not-oa-in-openalex___0.json")  # select=open_access,doi
    with pytest.raises(ParseError) as caught:
        parse_work(obj)
    assert caught.value.source == "openalex" and "no title" in str(caught.value)


def test_absurd_sizes_are_rejected():
    obj = _entity("W2741809807.json")
    obj["title"] = "t" * 2001
    with pytest.raises(ParseError, match="OpenAlex work W2741809807: title is longer than 2000"):
        parse_work(obj)
    obj = _entity("W2741809807.json")
    obj["abstract_inverted_index"] = {"word": list(range(40_000))}
    with pytest.raises(ParseError, match="more than 30000 words"):
        parse_work(obj)


def test_rebuild_abstract_orders_words_by_position():
    assert rebuild_abstract({"world": [1], "hello": [0, 2]}) == "hello world hello"
    assert rebuild_abstract(None) is None and rebuild_abstract({}) is None


def test_works_page_skips_bad_items_and_counts_them():
    payload = _entity("test-openalex_reader__test_get_random_id_from_openalex__1.json")
    payload["results"][1]["title"] = payload["results"][1]["display_name"] = None
    payload["results"].append("not an object")
    page = parse_works_page(payload)
    assert len(page.papers) == 4 and page.results == 6 and page.next_cursor is None
    assert [(s.item, s.reason) for s in page.skipped] == [
        ("OpenAlex work W2042435470", "no title"),
        ("OpenAlex result #6", "not a JSON object"),
    ]
    with pytest.raises(SourceError, match="without 'results'"):
        parse_works_page({"meta": {}})


def test_truncated_author_lists_are_kept_with_a_warning():
    payload = _entity("test-openalex_reader__test_get_random_id_from_openalex__1.json")
    payload["results"][0]["is_authors_truncated"] = True  # what list responses set beyond 100 authors
    page = parse_works_page(payload)
    assert len(page.papers) == 5 and page.skipped == []
    assert page.warnings[0].item == "OpenAlex work W2600965442"
    assert "only the first 2 authors" in page.warnings[0].reason


# --- parse_author --------------------------------------------------------------------------------


def test_full_author_with_affiliation_years_and_topics():
    author = parse_author(_entity("A5023888391.json"))
    assert (author.id, author.display_name, author.orcid) == ("A5023888391", "Jason Priem", "0000-0001-6187-6610")
    assert author.works_count == 62 and author.h_index == 17
    assert author.current_institutions == ["OurResearch"]
    by_name = {a.institution.display_name: a.years for a in author.affiliations}
    assert by_name["OurResearch"] == [2023, 2022, 2021, 2019]
    assert by_name["University of North Carolina at Chapel Hill"] == [2014, 2013, 2012, 2011, 2010]
    assert author.topics[0] == "scientometrics and bibliometrics research"
    assert author.alternative_names == ["Priem Jason"] and author.deleted is False


def test_older_author_format_single_last_known_institution():
    author = parse_author(_entity("A-api-response.json"))
    assert author.id == "A2150889177" and author.orcid == "0000-0002-3666-1234"
    assert author.current_institutions == ["California Institute of Technology"]
    assert author.last_known_institutions[0].id == "I157725225"
    assert author.affiliations == [] and author.topics == [] and author.h_index is None


def test_deleted_author_is_flagged():
    author = parse_author(_entity("A5317838346.json"))
    assert author.deleted is True and author.works_count == 0


def test_author_without_id_is_a_parse_error():
    obj = _entity("A5023888391.json")
    obj["id"] = "https://openalex.org/W2741809807"
    with pytest.raises(ParseError, match="not an OpenAlex author id"):
        parse_author(obj)


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
