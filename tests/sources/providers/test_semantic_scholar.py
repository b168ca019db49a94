"""Semantic Scholar provider (``retrieval.sources.providers.semantic_scholar``): one Graph API paper
object at a time, error answers and the papers of a document (saved files: ``files/test_saved_responses``)."""

from __future__ import annotations

import pytest

from retrieval.errors import ParseError
from retrieval.sources.providers.semantic_scholar import FORMAT, error_of, read_work, works_of
from tests.sources.files.test_saved_responses import S2_ATTENTION, S2_STATE_OF_OA


def test_one_paper_object_becomes_one_paper_with_its_provenance() -> None:
    outcome = read_work(S2_ATTENTION)
    assert outcome.format == FORMAT and outcome.skipped == [] and outcome.warnings == []
    [paper] = outcome.papers
    assert paper.title == "Attention is All you Need" and paper.arxiv_id == "1706.03762"
    assert [(p.source, p.source_id) for p in paper.provenance] == [("semantic-scholar", S2_ATTENTION["paperId"])]


def test_wrappers_are_opened_and_unusable_items_are_skipped_as_values() -> None:
    assert read_work({"citingPaper": S2_STATE_OF_OA}).papers[0].title == read_work(S2_STATE_OF_OA).papers[0].title
    unknown = read_work(None, 1)  # what /paper/batch answers for an id it does not know
    assert unknown.papers == [] and [(s.item, s.reason) for s in unknown.skipped] == [
        ("Semantic Scholar item #2", "null: Semantic Scholar found no paper for this id")]
    untitled = read_work({**S2_ATTENTION, "title": ""})
    assert [(s.item, s.reason) for s in untitled.skipped] == [
        (f"Semantic Scholar paper {S2_ATTENTION['paperId']}", "no title")]


def test_error_answers_and_the_papers_of_a_document() -> None:
    assert error_of({"error": "Paper not found"}) == "Paper not found"
    assert error_of({"message": "Too Many Requests", "code": "429"}) == "Too Many Requests (code 429)"
    assert error_of(S2_ATTENTION) is None and error_of({"data": []}) is None
    assert works_of({"total": 1, "data": [S2_ATTENTION]}, "f.json") == [S2_ATTENTION]
    assert works_of(S2_ATTENTION, "f.json") == [S2_ATTENTION]
    with pytest.raises(ParseError, match=r"^f\.json is not a Semantic Scholar paper or list"):
        works_of({"authorId": "1"}, "f.json")
