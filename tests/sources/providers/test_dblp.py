"""DBLP provider (``retrieval.sources.providers.dblp``): one publication search hit at a time, error
answers and the hits of a document (saved files: ``files/test_saved_responses``)."""

from __future__ import annotations

import pytest

from retrieval.errors import ParseError
from retrieval.sources.providers.dblp import FORMAT, error_of, read_work, works_of
from tests.sources.files.test_saved_responses import DBLP_SEARCH

HITS = DBLP_SEARCH["result"]["hits"]["hit"]


def test_one_hit_becomes_one_paper_keyed_by_its_record() -> None:
    outcome = read_work(HITS[1], 1)
    assert outcome.format == FORMAT and outcome.skipped == []
    [paper] = outcome.papers
    assert paper.title == "Attention Is All You Need" and paper.type == "preprint"  # CoRR: an arXiv preprint
    assert paper.arxiv_id == "1706.03762"
    assert [(p.source, p.source_id) for p in paper.provenance] == [("dblp", "journals/corr/VaswaniSPUJGKP17")]


def test_a_hit_without_info_is_skipped_as_a_value() -> None:
    outcome = read_work({"@score": "1"}, 4)
    assert outcome.papers == [] and [(s.item, s.reason) for s in outcome.skipped] == [
        ("DBLP hit #5", "no 'info' object (not a DBLP publication hit)")]


def test_error_answers_and_the_hits_of_a_document() -> None:
    assert error_of(DBLP_SEARCH) is None
    assert error_of({"result": {"status": {"@code": "500", "text": "Internal Server Error"}}}) == (
        "500 Internal Server Error")
    assert works_of(DBLP_SEARCH, "f.json") == HITS and works_of(HITS, "f.json") == HITS
    one = {"result": {"hits": {"hit": HITS[0]}}}  # one hit is an object, not a list
    assert works_of(one, "f.json") == [HITS[0]]
    with pytest.raises(ParseError, match=r"^f\.json is not a DBLP search answer"):
        works_of({"result": {}}, "f.json")
