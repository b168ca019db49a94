"""arXiv: Atom parsing quirks on real feeds, paging, id lookups, errors, a real local server."""

from __future__ import annotations

import json
import re
from datetime import date

import httpx
import pytest

from retrieval.errors import InputError, SourceError
from retrieval.sources.apis.arxiv import ArxivSource, author_query
from retrieval.sources.providers.arxiv import parse_atom
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


# --- parse_atom ---------------------------------------------------------------------------------


def test_versioned_entry_id_becomes_identity_plus_version():
    page = parse_atom(_body("id_2104.12255v1_s0_m100_6ae69987ffe1.json"))
    assert (page.total_results, page.start, page.items_per_page) == (1, 0, 100)
    [paper] = page.papers
    assert paper.arxiv_id == "2104.12255" and paper.arxiv_version == "v1"
    assert paper.id == "arxiv:2104.12255"
    assert paper.title == "0"  # a real title; short is not missing
    assert paper.authors[0].name == "Quan Thoi Minh Nguyen"
    assert paper.published == "2021-04-20" and paper.categories == ["cs.CR"]
    assert paper.doi is None and paper.venue is None
    [prov] = paper.provenance
    assert prov.source == "arxiv" and prov.source_id == "2104.12255v1"
    assert prov.retrieved == date.today().isoformat()
    assert {"title", "abstract", "authors", "arxiv_id", "arxiv_version"} <= set(prov.fields)
    assert "doi" not in prov.fields


def test_2016_feed_hard_wrapped_summary_doi_journal_ref_and_categories():
    [paper] = parse_atom(_body("au_del_maestro_AND_ti_checkerboard.xml")).papers
    assert paper.title == ("From stripe to checkerboard order on the square lattice in the presence "
                           "of quenched disorder")
    assert paper.abstract is not None
    assert paper.abstract.startswith("We discuss the effects of quenched disorder on a model of charge density wave (CDW)")
    assert "\n" not in paper.abstract and "  " not in paper.abstract
    assert paper.doi == "10.1103/physrevb.74.024520" and paper.id == "doi:10.1103/physrevb.74.024520"
    assert paper.venue == "Phys. Rev. B 74, 024520 (2006)"
    assert paper.arxiv_id == "cond-mat/0603029" and paper.arxiv_version == "v1"
    assert paper.categories == ["cond-mat.str-el", "cond-mat.supr-con"]  # primary first


def test_author_affiliations_and_old_style_id():
    [paper] = parse_atom(_body("id_astro-ph_0601001_s0_m100_3150dca9dc76.json")).papers
    assert paper.arxiv_id == "astro-ph/0601001"
    assert [(a.name, a.affiliations) for a in paper.authors] == [
        ("Andrew Gould", ["Ohio State"]),
        ("Susan Dorsher", ["Ohio State"]),
        ("B. Scott Gaudi", ["CfA"]),
        ("Andrzej Udalski", ["Warsaw University Observatory"]),
    ]
    assert paper.venue == "ActaAstron.56:1-50,2006"
    assert paper.abstract is not None
    assert "V_max<17.5" in paper.abstract  # entities decoded, no LaTeX rewriting


def test_error_feed_raises_with_the_api_message():
    with pytest.raises(SourceError) as caught:
        parse_atom(_body("id_abc_s0_m100_b79c8dcf6bc3.json"))
    assert caught.value.source == "arxiv"
    assert "incorrect id format for abc" in str(caught.value)


def test_a_paper_titled_error_is_not_an_error_feed():
    xml = _body("id_2104.12255v1_s0_m100_6ae69987ffe1.json").decode("utf-8").replace("<title>0</title>", "<title>Error</title>")
    [paper] = parse_atom(xml).papers
    assert paper.title == "Error"


def test_unknown_id_is_an_empty_page():
    page = parse_atom(_body("id_0000.0000_s0_m100_8b51d9633a68.json"))
    assert page.papers == [] and page.total_results == 0 and page.skipped == []


def test_bad_entries_are_skipped_with_reasons_and_the_rest_kept():
    xml = _body("q_testing_s0_m10_bc5a6c384fe9.json").decode("utf-8")
    first = "<title>Testing Deep Learning Models: A First Comparative Study of Multiple Testing Techniques</title>"
    second = "<title>Towards Explainable Test Case Prioritisation with Learning-to-Rank Models</title>"
    assert first in xml and second in xml
    xml = xml.replace(first, "<title>   </title>").replace(second, "<title>" + "x" * 2001 + "</title>")
    xml = xml.replace("<id>http://arxiv.org/abs/2502.02075v1</id>", "<id>http://example.org/not-arxiv</id>", 1)
    page = parse_atom(xml)
    reasons = {s.item: s.reason for s in page.skipped}
    assert reasons["arXiv entry http://arxiv.org/abs/2202.12139v1"] == "no title"
    assert "longer than 2000" in reasons["arXiv entry http://arxiv.org/abs/2405.13786v1"]
    assert len(page.papers) + len(page.skipped) == 10
    assert page.entries == 10


def test_absurd_abstract_is_skipped():
    xml = _body("id_2104.12255v1_s0_m100_6ae69987ffe1.json").decode("utf-8")
    xml = xml.replace("<summary>What is", "<summary>" + "y" * 100_001 + " What is")
    page = parse_atom(xml)
    assert page.papers == [] and "abstract is longer than 100000" in page.skipped[0].reason


def test_doctype_and_entities_are_refused():
    bomb = ('<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
            '<feed xmlns="http://www.w3.org/2005/Atom"><title>&b;</title></feed>')
    with pytest.raises(SourceError, match="DOCTYPE"):
        parse_atom(bomb)


def test_truncated_and_foreign_documents_raise_source_error():
    body = _body("q_testing_s0_m10_bc5a6c384fe9.json")
    with pytest.raises(SourceError, match="malformed or truncated"):
        parse_atom(body[: len(body) // 2])
    with pytest.raises(SourceError, match="not an Atom feed"):
        parse_atom(b"<html><body>Service Unavailable</body></html>")


def test_a_bogus_encoding_declaration_is_ignored_in_text_and_refused_in_bytes():
    body = _body("q_testing_s0_m10_bc5a6c384fe9.json")
    text = body.decode("utf-8")
    mangled = re.sub(r"encoding=(['\"])UTF-8\1", "encoding='TF-8'", text, count=1)
    assert mangled != text
    assert len(parse_atom(mangled).papers) == len(parse_atom(text).papers)  # already decoded: it cannot matter
    with pytest.raises(SourceError, match="malformed or truncated"):
        parse_atom(mangled.encode("utf-8"))


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
