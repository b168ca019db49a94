"""arXiv provider (``retrieval.sources.providers.arxiv``): Atom parsing quirks on real feeds, error feeds,
hostile and broken XML."""

from __future__ import annotations

import json
import re
from datetime import date

import pytest

from retrieval.errors import SourceError
from retrieval.sources.providers.arxiv import parse_atom
from tests.sources.replay import FIXTURES, body_bytes


def _body(name: str) -> bytes:
    """The bytes arXiv sent for a recorded response (or a raw 2016 .xml feed)."""
    path = FIXTURES / "arxiv" / name
    if path.suffix == ".xml":
        return path.read_bytes()
    return body_bytes(json.loads(path.read_text(encoding="utf-8"))["body"])[0]


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
