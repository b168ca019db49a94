"""Crossref provider (``retrieval.sources.providers.crossref``): envelopes, JATS abstracts, partial dates,
organisational authors, list pages."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from retrieval.errors import ParseError
from retrieval.sources.markup.jats import jats_to_text
from retrieval.sources.providers.crossref import (
    date_from_parts,
    parse_crossref_page,
    parse_crossref_work,
    publication_date,
)
from tests.sources.replay import FIXTURES


def _body(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "crossref" / name).read_text(encoding="utf-8"))["body"]


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
