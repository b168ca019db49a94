"""Crossref: envelopes, JATS abstracts, partial dates, organisational authors, cursors, errors."""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

import httpx
import pytest

from retrieval.errors import InputError, ParseError, SourceError
from retrieval.sources.apis.crossref import CrossrefSource
from retrieval.sources.markup.jats import jats_to_text
from retrieval.sources.providers.crossref import (
    date_from_parts,
    parse_crossref_page,
    parse_crossref_work,
    publication_date,
)
from tests.sources.replay import FIXTURES, FakeClock, Replay, ReplayServer, load, make_settings, recording

API = "https://api.crossref.org"


def _body(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "crossref" / name).read_text(encoding="utf-8"))["body"]


def _source(replay: Replay, **settings: object) -> CrossrefSource:
    clock = FakeClock()
    return CrossrefSource(make_settings(**settings), replay.client(), clock.sleep, clock=clock)


# --- parse_crossref_work --------------------------------------------------------------------------


def test_single_work_envelope_and_jats_abstract():
    paper = parse_crossref_work(_body("test-works__test_works_with_many_ids__1.json"))  # {"message": {...}}
    assert paper.doi == "10.1002/jor.1100150407"
    assert paper.abstract is not None
    assert paper.abstract.startswith("Twenty‐two beagles were divided")  # the "Abstract" heading dropped
    assert "(p < 0.001)" in paper.abstract and "<jats" not in paper.abstract
    assert paper.published == "1997-07"  # issued [[1997, 7]]; the 2005 online date does not override it
    assert (paper.venue, paper.publisher, paper.type) == ("Journal of Orthopaedic Research", "Wiley", "journal-article")
    assert paper.citation_count == 19
    assert "Donald Hora Jr." in paper.author_names
    [prov] = paper.provenance
    assert prov.source == "crossref" and prov.source_id == "10.1002/jor.1100150407"
    assert {"abstract", "venue", "publisher", "citation_count"} <= set(prov.fields)


def test_jats_sections_become_run_in_headings():
    paper = parse_crossref_work(_body("test-workscontainer__test_workscontainer_with_two_ids__0.json"))
    assert paper.abstract is not None
    assert paper.abstract.startswith("Background: The absence of high-quality next-generation sequencing")
    assert "Objective: This study aimed" in paper.abstract
    assert "oncogene (KRAS)/neuroblastoma ras oncogene (NRAS)" in paper.abstract  # inline markup tidied


def test_jats_to_text_handles_entities_figures_and_empty_input():
    markup = ("<jats:title>Abstract</jats:title><jats:p>A &amp; B &lt; C<jats:sup>2</jats:sup></jats:p>"
              "<jats:fig><jats:caption>hidden</jats:caption></jats:fig><jats:p>Second.</jats:p>")
    assert jats_to_text(markup) == "A & B < C2\n\nSecond."
    assert jats_to_text("") == "" and jats_to_text(None) == ""
    assert jats_to_text("plain text abstract") == "plain text abstract"


def test_date_parts_with_missing_parts():
    assert date_from_parts({"date-parts": [[2008]]}) == "2008"
    assert date_from_parts({"date-parts": [[2008, 3]]}) == "2008-03"
    assert date_from_parts({"date-parts": [["2008", "3", "5"]]}) == "2008-03-05"
    assert date_from_parts({"date-parts": [[2008, None, 5]]}) == "2008"
    assert date_from_parts({"date-parts": [[2008, 13]]}) == "2008"
    assert date_from_parts({"date-parts": [[None]]}) is None
    assert date_from_parts({"date-parts": []}) is None
    assert date_from_parts(None) is None


def test_publication_date_is_issued_refined_by_an_agreeing_field():
    item = _body("test-crossref_reader__test_multipe_titles__1.json")["message"]
    assert item["issued"] == {"date-parts": [[2007, 7]]}
    assert item["published-online"] == {"date-parts": [[2007, 7, 8]]}
    assert publication_date(item) == "2007-07-08"


def test_no_date_at_all_and_thesis_approved_date():
    proceedings = parse_crossref_work(_body("test-works__test_works_with_many_ids__3.json"))
    assert proceedings.published is None  # issued [[null]] and nothing else
    assert proceedings.venue == "23rd International Conference on Distributed Computing Systems Workshops, 2003. Proceedings."
    thesis = parse_crossref_work(_body("test-bibtex_writer__test_phd_thesis__1.json"))
    assert thesis.published == "2020-05-25" and thesis.type == "dissertation"  # from "approved"
    assert thesis.authors[0].orcid == "0000-0003-3086-4443"


def test_titles_are_lists_first_title_plus_subtitle():
    paper = parse_crossref_work(_body("test-crossref_reader__test_multipe_titles__1.json"))
    assert paper.title == "Penisverletzung durch eine Moulinette: Folge einer autoerotischen Selbstverstümmelung"


def test_family_names_are_kept_as_crossref_gives_them():
    paper = parse_crossref_work({"title": ["T"], "DOI": "10.1/x", "author": [
        {"given": "Martijn", "family": "de Vos"}, {"given": "Giovanni", "family": "Da San Martino"},
        {"given": "Jane", "family": "Doe"}, {"given": "Donald", "family": "Hora", "suffix": "Jr."}]})
    assert [(a.name, a.family, a.particle) for a in paper.authors] == [
        ("Martijn de Vos", "de Vos", "de"), ("Giovanni Da San Martino", "Da San Martino", None),
        ("Jane Doe", None, None), ("Donald Hora Jr.", "Hora", None)]


def test_organisational_author_has_only_a_name():
    page = parse_crossref_page(_body("test-types__test_types_mixed_ids_works_warn__2.json"))
    report = next(p for p in page.papers if p.doi == "10.15554/pci.cta-17")
    assert report.author_names == ["Concrete Technology Associates"]
    assert report.published == "1981" and report.venue is None and report.type == "report"


def test_list_page_skips_items_without_title_and_counts_them():
    page = parse_crossref_page(_body("test-workscontainer__test_workscontainer_with_cursor__0.json"))
    assert page.items == 5 and len(page.papers) == 4 and page.total_results == 138567
    assert [(s.item, s.reason) for s in page.skipped] == [
        ("Crossref work 10.1002/humu.2018.39.issue-6 (journal-issue)", "no title")
    ]
    assert page.next_cursor and page.next_cursor.startswith("DnF1ZXJ5VGhlbkZldGNo")


def test_list_payload_given_to_the_single_work_parser_is_refused():
    with pytest.raises(ParseError, match="list response"):
        parse_crossref_work(_body("test-cursor__test_cursor__0.json"))


def test_absurd_sizes_are_rejected_naming_the_item():
    item = _body("test-works__test_works_with_many_ids__1.json")["message"]
    with pytest.raises(ParseError, match=re.escape("Crossref work 10.1002/jor.1100150407: title is longer than 2000")):
        parse_crossref_work({**item, "title": ["t" * 2001]})
    with pytest.raises(ParseError, match="abstract is longer than 100000"):
        parse_crossref_work({**item, "abstract": "<jats:p>" + "a " * 60_000 + "</jats:p>"})
    with pytest.raises(ParseError, match="no title"):
        parse_crossref_work({**item, "title": []})


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
