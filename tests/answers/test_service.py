"""The answering service (``retrieval.answers.service``): one parse per ask, dispatch by shape.

Over a fake index (the ``AnsweringIndex`` protocol: the real filter parser with the fake's own
authors as the known names, the lexical stand-in retriever, filtering in Python), so every
dispatch is exercised without an encoder: listing, topic, a mixed question whose topic abstains
(it lists the filtered set instead) and the explanation added to an abstention.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel

from retrieval.answers.chain import MODEL_FOUND_NO_ANSWER, NO_LLM_NOTICE
from retrieval.answers.judgement import TYPICAL_BACKGROUND
from retrieval.answers.listing import LISTING_NOTICE, NO_TOPIC_NOTICE
from retrieval.answers.question import parse_question
from retrieval.answers.service import AnsweringService
from retrieval.errors import InputError
from retrieval.index.background import Background
from retrieval.index.filters import MAX_QUERY_CHARS, extract_filters
from retrieval.records.paper import Author, Paper
from retrieval.results import Final, Progress, SearchFilters, SearchHit, TextDelta
from retrieval.text import fold
from tests.answers.conftest import LexicalRetriever, make_settings, scripted

DDA = Paper(title="Convergence of the discrete dipole approximation", published="2019",
            abstract="We study the convergence of the discrete dipole approximation for light scattering.",
            authors=[Author(name="Bo Chen")])
INDEXES = Paper(title="Learned indexes for spatial data", published="2023",
                abstract="Learned index structures answer spatial range queries.", authors=[Author(name="Ann Lee")])
JOINS = Paper(title="Stream joins at scale", published="2021", authors=[Author(name="Ann Lee")])
PAPERS = [DDA, INDEXES, JOINS]
WHY_EMPTY = "Why nothing matched (the fake index's explanation)."


class FakeIndex:
    """``AnsweringIndex`` over a few records; counts the calls of its parser."""

    def __init__(self, papers: list[Paper]) -> None:
        self.papers = papers
        self.parsed: list[str] = []
        self.explained: list[SearchFilters | None] = []
        self._lexical = LexicalRetriever(papers)

    def parse_question(self, question: str) -> tuple[str, SearchFilters]:
        self.parsed.append(question)
        names = {fold(name) for paper in self.papers for name in paper.author_names}
        return extract_filters(question, lambda name: fold(name) in names)

    def _matches(self, paper: Paper, filters: SearchFilters | None) -> bool:
        if filters is None:
            return True
        year = paper.year or 0
        return ((not filters.authors or any(fold(a) in map(fold, paper.author_names) for a in filters.authors))
                and (filters.since is None or year >= filters.since)
                and (filters.until is None or year <= filters.until))

    def search(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]:
        return [hit for hit in self._lexical(query, len(self.papers), filters) if self._matches(hit.paper, filters)][:k]

    def matching_papers(self, filters: SearchFilters) -> list[Paper]:
        found = [paper for paper in self.papers if self._matches(paper, filters)]
        return sorted(found, key=lambda paper: -(paper.year or 0))

    def explain_empty(self, filters: SearchFilters | None) -> str | None:
        self.explained.append(filters)
        return WHY_EMPTY

    def term_rarity(self, term: str) -> float:
        return 1.0

    def count(self) -> int:
        return len(self.papers)

    def evidence_background(self) -> Background:
        return TYPICAL_BACKGROUND


@pytest.fixture()
def index() -> FakeIndex:
    return FakeIndex(PAPERS)


def service(index: FakeIndex, model: BaseChatModel | None = None) -> AnsweringService:
    return AnsweringService(index, make_settings(), model)


# --- the parsed question ----------------------------------------------------------------------------


def test_a_question_is_parsed_into_text_query_filters_shape_and_notice(index: FakeIndex) -> None:
    parsed = parse_question("  papers by Ann Lee   on spatial data since 2020 ", index.parse_question)
    assert parsed.text == "papers by Ann Lee on spatial data since 2020"
    assert "Ann Lee" not in parsed.query and "2020" not in parsed.query and "spatial data" in parsed.query
    assert parsed.filters == SearchFilters(authors=["Ann Lee"], since=2020)
    assert parsed.shape.kind == "mixed" and parsed.notice is None
    assert index.parsed == [parsed.text]


def test_option_filters_win_field_by_field(index: FakeIndex) -> None:
    parsed = parse_question("papers by Ann Lee since 2020", index.parse_question,
                            filters=SearchFilters(since=2022, venue="SIGMOD"))
    assert parsed.filters == SearchFilters(authors=["Ann Lee"], since=2022, venue="SIGMOD")
    assert parsed.search_filters == parsed.filters


def test_a_topic_question_has_no_filters_and_searches_its_text(index: FakeIndex) -> None:
    parsed = parse_question("discrete dipole approximation", index.parse_question)
    assert parsed.shape.kind == "topic" and parsed.search_filters is None
    assert parsed.search_text == "discrete dipole approximation"


def test_in_a_thread_a_years_only_question_is_a_topic_within_the_years(index: FakeIndex) -> None:
    alone = parse_question("papers since 2022", index.parse_question)
    followup = parse_question("papers since 2022", index.parse_question, history=[("spatial data?", "...")])
    assert alone.shape.kind == "listing" and followup.shape.kind == "mixed"
    named = parse_question("papers by Ann Lee", index.parse_question, history=[("spatial data?", "...")])
    assert named.shape.kind == "listing"  # an author named: still the listing


def test_an_overlong_question_is_capped_with_a_notice_and_an_empty_one_raises(index: FakeIndex) -> None:
    parsed = parse_question("spatial " * (MAX_QUERY_CHARS // 4), index.parse_question)
    assert len(parsed.text) <= MAX_QUERY_CHARS and parsed.notice and "capped" in parsed.notice
    with pytest.raises(InputError):
        parse_question("   ", index.parse_question)
    assert len(index.parsed) == 1  # an empty question is refused before any parsing


@pytest.mark.parametrize("question", [
    "papers by Ann Lee",  # listing
    "Which papers study the convergence of the discrete dipole approximation?",  # topic
    "papers by Ann Lee on sourdough bread baking",  # mixed, falling back to the listing
])
def test_each_ask_parses_the_question_once(index: FakeIndex, question: str) -> None:
    answering = service(index)
    result = answering.ask(answering.parse(question))
    assert len(index.parsed) == 1 and result.question == question


# --- dispatch by shape ------------------------------------------------------------------------------


def test_a_listing_lists_the_filtered_records_newest_first_without_a_model(index: FakeIndex) -> None:
    model = scripted("This must not be used [1].")
    answering = service(index, model=model)
    events = list(answering.stream(answering.parse("papers by Ann Lee")))
    assert len(events) == 1 and isinstance(events[0], Final)
    result = events[0].result
    assert result.kind == "listing" and result.filters == {"authors": ["Ann Lee"]} and not result.abstained
    assert [c.title for c in result.citations] == [INDEXES.title, JOINS.title]
    assert result.notice == LISTING_NOTICE and model.seen == [] and index.explained == []


def test_a_topic_question_is_answered_by_the_chain(index: FakeIndex) -> None:
    answering = service(index)
    result = answering.ask(answering.parse("Which papers study the convergence of the discrete dipole approximation?"))
    assert result.kind == "topic" and result.filters == {} and not result.abstained
    assert [c.title for c in result.citations] == [DDA.title]
    assert result.notice == NO_LLM_NOTICE


def test_a_topic_answer_streams_deltas_then_one_final_with_kind_and_filters(index: FakeIndex) -> None:
    model = scripted("The discrete dipole approximation converges for light scattering [1]. "
                     "Its convergence was studied for light scattering [1].")
    answering = service(index, model=model)
    events = list(answering.stream(answering.parse("convergence of the discrete dipole approximation since 2015")))
    finals = [event for event in events if isinstance(event, Final)]
    assert len(finals) == 1 and events[-1] is finals[0]
    assert isinstance(events[0], Progress) and all(isinstance(event, TextDelta) for event in events[1:-1])
    assert len(events) > 2
    result = finals[0].result
    assert result.mode == "llm" and result.kind == "mixed" and result.filters == {"since": 2015}
    assert [c.title for c in result.citations] == [DDA.title]


def test_a_mixed_question_whose_topic_abstains_lists_the_filtered_set(index: FakeIndex) -> None:
    answering = service(index)
    result = answering.ask(answering.parse("papers by Ann Lee on sourdough bread baking"))
    assert result.kind == "mixed" and not result.abstained
    assert [c.title for c in result.citations] == [INDEXES.title, JOINS.title]
    assert result.notice and NO_TOPIC_NOTICE in result.notice and LISTING_NOTICE in result.notice
    assert index.explained == []  # nothing abstained in the end: nothing to explain


def test_a_mixed_question_keeps_its_topic_answer_when_the_model_refuses(index: FakeIndex) -> None:
    """A model's NO_ANSWER over evidence that passed is not an abstention: the topic's records
    are shown (extractive), not every paper of the author."""
    model = scripted("NO_ANSWER")
    answering = service(index, model=model)
    result = answering.ask(answering.parse("papers by Ann Lee on learned indexes for spatial range queries"))
    assert result.kind == "mixed" and not result.abstained and result.mode == "extractive"
    assert [c.title for c in result.citations] == [INDEXES.title]
    assert result.notice == MODEL_FOUND_NO_ANSWER and len(model.seen) == 1


def test_an_abstention_says_why_nothing_matched(index: FakeIndex) -> None:
    answering = service(index)
    listing = answering.ask(answering.parse("papers by Ann Lee since 2030"))
    assert listing.abstained and listing.kind == "listing" and listing.citations == []
    assert listing.notice and listing.notice.endswith(WHY_EMPTY)
    mixed = answering.ask(answering.parse("papers by Ann Lee on sourdough bread since 2030"))
    assert mixed.abstained and mixed.kind == "mixed" and (mixed.notice or "").endswith(WHY_EMPTY)
    topic = answering.ask(answering.parse("Which papers propose deep learning for protein folding?"))
    assert topic.abstained and topic.kind == "topic" and (topic.notice or "").endswith(WHY_EMPTY)
    assert index.explained == [SearchFilters(authors=["Ann Lee"], since=2030),
                               SearchFilters(authors=["Ann Lee"], since=2030), None]


def test_notices_come_in_order_the_answers_the_questions_then_the_explanation(index: FakeIndex) -> None:
    answering = service(index)
    parsed = answering.parse("protein folding " * (MAX_QUERY_CHARS // 8))
    result = answering.ask(parsed)
    assert result.abstained and parsed.notice
    assert result.notice == f"{NO_LLM_NOTICE} {parsed.notice} {WHY_EMPTY}"


def test_bad_input_raises_before_iteration(index: FakeIndex) -> None:
    answering = service(index)
    with pytest.raises(InputError):
        answering.stream(answering.parse("discrete dipole approximation"), k=0)  # not iterated


def test_a_rewritten_followup_has_its_own_filter_phrases_taken_out(index: FakeIndex,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    searched: list[str] = []
    search = index.search

    def spy(query: str, k: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]:
        searched.append(query)
        return search(query, k, filters)

    monkeypatch.setattr(index, "search", spy)
    answering = service(index)
    history = [("Which papers study the discrete dipole approximation?", "One does [1].")]
    parsed = answering.parse("and since 2015?", history=history)
    answering.ask(parsed, history=history)
    assert len(index.parsed) == 2  # the question, then the different query the follow-up became
    assert searched and "2015" not in searched[0] and "dipole" in searched[0]


def test_the_facade_parses_each_question_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Assistant.ask`` and ``stream_ask`` over a real index: one call of its parser per ask."""
    from retrieval.assistant import Assistant
    from retrieval.index.paper_index import PaperIndex
    from tests.index.conftest import HashEncoder

    real = PaperIndex.open(make_settings(data_dir=tmp_path), encoder=HashEncoder())
    try:
        real.upsert(PAPERS)
        calls: list[str] = []
        parse = real.parse_question

        def counting(text: str) -> tuple[str, SearchFilters]:
            calls.append(text)
            return parse(text)

        monkeypatch.setattr(real, "parse_question", counting)
        core = Assistant(real.settings, index=real, chat_model=None)
        assert core.ask("papers by Ann Lee").kind == "listing" and len(calls) == 1
        events = list(core.stream_ask("papers by Ann Lee on spatial data"))
        assert isinstance(events[-1], Final) and events[-1].result.kind == "mixed" and len(calls) == 2
        core.ask("Which papers study the convergence of the discrete dipole approximation?")
        assert len(calls) == 3
    finally:
        real.close()
