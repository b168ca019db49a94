"""Question shape (listing / topic / mixed) and the listing phrasings ``extract_filters`` reads."""

from __future__ import annotations

from datetime import date

import pytest

from retrieval.answers.question_shape import applied_filters, question_shape
from retrieval.index.filters import RECENT_MONTHS, extract_filters
from retrieval.results import SearchFilters
from tests.index.test_query_filters import known_author, known_venue

TODAY = date(2026, 12, 1)


def shape_of(question: str, today: date = TODAY):
    cleaned, filters = extract_filters(question, known_author, known_venue, today=today)
    return question_shape(question, cleaned, filters)


@pytest.mark.parametrize(
    ("question", "authors", "since", "until", "venue"),
    [
        ("What did Zhao Zhang publish since 2025?", ["Zhao Zhang"], 2025, None, None),
        ("papers by Zhao Zhang since 2025", ["Zhao Zhang"], 2025, None, None),
        ("what has Zhao Zhang worked on lately?", ["Zhao Zhang"], 2024, None, None),
        ("what has Zhao Zhang published recently", ["Zhao Zhang"], 2024, None, None),
        ("what did Nadolsky write", ["Nadolsky"], None, None, None),
        ("papers of Wei Li", ["Wei Li"], None, None, None),
        ("recent work of Zhao Zhang", ["Zhao Zhang"], 2024, None, None),
        ("recent work by Z. Zhang", ["Z. Zhang"], 2024, None, None),
        ("Zhao Zhang's papers", ["Zhao Zhang"], None, None, None),
        ("show me Zhao Zhang’s latest work", ["Zhao Zhang"], None, None, None),
        ("Zhang's recent papers", ["Zhang"], 2024, None, None),
        ("papers in Nature in 2023", [], 2023, 2023, "Nature"),
        ("papers by Zhao Zhang from 2019 to 2021", ["Zhao Zhang"], 2019, 2021, None),
        ("what did Zhao Zhang publish in the last 3 years", ["Zhao Zhang"], 2024, None, None),
    ],
)
def test_listing_questions_are_listings_with_their_filters(question, authors, since, until, venue):
    shape = shape_of(question)
    assert shape.kind == "listing", shape
    assert shape.filters == SearchFilters(authors=authors, since=since, until=until, venue=venue)


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("papers by Zhao Zhang on graph neural networks", "graph neural networks"),
        ("what has Zhao Zhang worked on about lasers lately?", "lasers"),
        ("Zhao Zhang's recent papers on lasers", "lasers"),
        ("graph neural networks since 2024", "graph neural networks"),
        ("what did Wei Li find about dipole scattering", "dipole scattering"),
    ],
)
def test_a_topic_within_filters_is_mixed(question, topic):
    shape = shape_of(question)
    assert (shape.kind, shape.topic) == ("mixed", topic)


@pytest.mark.parametrize(
    "question",
    [
        "recent advances in graph neural networks",  # "recent" qualifies no listing noun
        "papers by John Smith",  # nobody indexed: no filter, stays a topic search
        "labelled by hand",
        "what has been done on lasers",
        "Smith's papers on lasers",
        "the work of the committee",
    ],
)
def test_without_a_filter_the_question_is_a_topic(question):
    shape = shape_of(question)
    assert shape.kind == "topic" and shape.filters.is_empty()


def test_lately_is_the_scholar_summary_window_in_whole_years():
    from retrieval.scholars.summary import RECENT_MONTHS as SUMMARY_MONTHS

    assert RECENT_MONTHS == SUMMARY_MONTHS == 24
    assert extract_filters("lately", today=date(2026, 12, 1))[1].since == 2024
    assert extract_filters("lately", today=date(2026, 1, 15))[1].since == 2024
    assert extract_filters("recently", today=date(2025, 2, 1))[1].since == 2023


def test_explicit_years_win_over_lately():
    _, filters = extract_filters("what did Zhao Zhang publish lately, in 2019?", known_author, today=TODAY)
    assert (filters.since, filters.until) == (2019, 2019)


def test_filters_given_as_options_leave_the_question_to_decide():
    options = SearchFilters(authors=["Zhao Zhang"])
    assert question_shape("checkpointing", "checkpointing", options).kind == "mixed"
    assert question_shape("papers", "papers", options).kind == "listing"
    assert question_shape("checkpointing", "checkpointing", None).kind == "topic"


def test_applied_filters_use_field_names_and_omit_empty_ones():
    assert applied_filters(SearchFilters(authors=["Zhao Zhang"], since=2025)) == {"authors": ["Zhao Zhang"], "since": 2025}
    assert applied_filters(SearchFilters()) == {}
    assert applied_filters(None) == {}
