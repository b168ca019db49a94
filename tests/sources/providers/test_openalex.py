"""OpenAlex provider (``retrieval.sources.providers.openalex``): old and new schemas, inverted-index
abstracts, author profiles (deleted, older format)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from retrieval.errors import ParseError, SourceError
from retrieval.sources.providers.openalex import parse_author, parse_work, parse_works_page, rebuild_abstract
from tests.sources.replay import FIXTURES


def _entity(name: str) -> dict[str, Any]:
    """A real OpenAlex object: a bare entity file or the body of a recorded response."""
    data = json.loads((FIXTURES / "openalex" / name).read_text(encoding="utf-8"))
    return data["body"] if "status_code" in data else data


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
