"""The judgement's word signals read an acronym and its long form alike, as the retrieved records
define them: a title writing "LLMs" holds the question's "large language models", and an
abstention never says that no record mentions a concept the top record writes as an acronym."""

from __future__ import annotations

from retrieval.answers.judgement import TYPICAL_BACKGROUND, judge, measure_signals, with_acronyms
from retrieval.records.paper import Author, Paper
from retrieval.results import SearchHit

ASTER = Paper(title="Natural and multi-language unit test generation with LLMs", published="2025",
              authors=[Author(name="Ann Lee")])
SURVEY = Paper(title="A survey of code models", published="2024", authors=[Author(name="Bo Ray")],
               abstract="Large language models (LLMs) now write code; we survey how they are evaluated.")
QUESTION = "which papers use large language models for unit test generation?"


def hit(paper: Paper, dense: float = 0.5) -> SearchHit:
    return SearchHit(paper=paper, score=0.6, dense_score=dense, lexical_score=1.0)


def test_a_record_holds_the_other_writing_of_a_defined_concept() -> None:
    meanings = {"llm": ("larg", "languag", "model")}
    assert with_acronyms({"llms", "test"}, meanings) == {"llms", "test", "larg", "languag", "model"}
    assert with_acronyms({"larg", "languag", "model", "code"}, meanings) == {"larg", "languag", "model", "code", "llm"}
    assert with_acronyms({"larg", "model"}, meanings) == {"larg", "model"}  # not the whole long form
    assert with_acronyms({"llms"}, {}) == {"llms"}


def test_the_acronym_counts_as_the_long_form_when_a_retrieved_record_defines_it() -> None:
    defined = measure_signals(QUESTION, [hit(ASTER), hit(SURVEY, 0.4)], TYPICAL_BACKGROUND)
    undefined = measure_signals(QUESTION, [hit(ASTER)], TYPICAL_BACKGROUND)
    assert defined is not None and undefined is not None
    assert defined.concept_share == 1.0 and undefined.concept_share < 1.0
    verdict = judge(QUESTION, [hit(ASTER), hit(SURVEY, 0.4)], TYPICAL_BACKGROUND)
    assert "large language models" not in verdict.missing
    assert "large language models" in judge(QUESTION, [hit(ASTER)], TYPICAL_BACKGROUND).missing
