"""Listing answers (issue #13): questions that name an author, years or a venue list the records.

Over a real ``PaperIndex`` of publication-list records, most of them title-only
(``tests/answers/listing_records.py``). The listing path needs no embedding model, so those
tests use hash vectors; the topic-within-filter (mixed) tests use the real encoder (slow).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from retrieval.answers.extractive import extractive_answer
from retrieval.answers.listing import LISTING_NOTICE, NO_TOPIC_NOTICE, listing_answer
from retrieval.assistant import Assistant
from retrieval.config import Settings
from retrieval.records.paper import Paper
from retrieval.results import AnswerResult, Final, SearchFilters, SearchHit, TextDelta
from tests.answers.conftest import scripted
from tests.answers.listing_records import GUO_PAPERS, OTHER_PAPERS, RECORDS, ZHAO_PAPERS
from tests.index.conftest import HashEncoder

THE_THREE = [
    ("What did Zhao Zhang publish since 2025?", ZHAO_PAPERS, 2025),
    ("papers by Zhao Zhang since 2025", ZHAO_PAPERS, 2025),
    ("what has Luanzheng Guo worked on lately?", GUO_PAPERS, None),  # lately: the last 24 months
]


def make_settings(data_dir: Path) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, openai_api_key=None, openai_base_url=None,
                    min_relevance=None)


def open_index(data_dir: Path, encoder: object):
    from retrieval.index.paper_index import PaperIndex

    index = PaperIndex.open(make_settings(data_dir), encoder=encoder)  # type: ignore[arg-type]
    index.upsert([Paper(**row) for row in RECORDS])
    return index


@pytest.fixture(scope="module")
def hashed_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    index = open_index(tmp_path_factory.mktemp("listing-hash"), HashEncoder())
    yield index
    index.close()


@pytest.fixture()
def assistant(hashed_index) -> Assistant:
    return Assistant(hashed_index.settings, index=hashed_index, chat_model=None)


def titles(rows: list[dict]) -> list[str]:
    return [row["title"] for row in rows]


def expected_titles(rows: list[dict], since: int | None) -> list[str]:
    """Titles of ``rows`` from ``since`` on, newest first (the fixture lists are newest first)."""
    if since is None:  # "lately": the last 24 months before today, as whole years
        today = date.today()
        since = (today.year * 12 + today.month - 1 - 24) // 12
    cutoff = since
    return [row["title"] for row in rows if int(row["published"][:4]) >= cutoff]


def cited_numbers(answer: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", answer)]


# --- the three questions of the issue ------------------------------------------------------------


@pytest.mark.parametrize(("question", "rows", "since"), THE_THREE)
def test_the_three_failing_questions_list_every_matching_record_newest_first(assistant, question, rows, since):
    result = assistant.ask(question)
    assert not result.abstained, result.answer
    assert result.kind == "listing" and result.mode == "extractive"
    want = expected_titles(rows, since)
    assert [c.title for c in result.citations] == want  # complete and newest first
    assert cited_numbers(result.answer) == list(range(1, len(want) + 1))
    years = [c.year for c in result.citations]
    assert years == sorted(years, reverse=True)
    first_line = result.answer.splitlines()[0]
    assert first_line.startswith(f"{len(want)} papers by ")
    assert first_line.endswith("newest first:")
    assert "1961" not in result.answer and "N-dimensional" not in result.answer


def test_first_line_names_the_filters_and_json_carries_kind_and_filters(assistant):
    result = assistant.ask("What did Zhao Zhang publish since 2025?")
    assert result.answer.splitlines()[0] == "5 papers by Zhao Zhang since 2025, newest first:"
    payload = result.model_dump(mode="json")
    assert list(payload) == ["question", "answer", "mode", "abstained", "citations", "kind", "filters"]
    assert payload["kind"] == "listing"
    assert payload["filters"] == {"authors": ["Zhao Zhang"], "since": 2025}
    assert payload["question"] == "What did Zhao Zhang publish since 2025?"


def test_a_topic_question_has_kind_topic_and_no_filters(assistant):
    payload = assistant.ask("error correcting codes").model_dump(mode="json")
    assert payload["kind"] == "topic" and payload["filters"] == {}


def test_title_only_records_are_never_empty_bullets(assistant):
    result = assistant.ask("papers by Zhao Zhang since 2025")
    for line in result.answer.splitlines()[1:]:
        label = re.sub(r"^- |\s*\[\d+\]$", "", line)
        assert re.search(r"\(\w[^()]*, 20\d\d\)|\(20\d\d\)", label), line  # venue and year, or year
        assert len(label) > 10, line
    assert "- Asynchronous checkpointing for exascale simulations (SC, 2026) [1]" in result.answer


def test_a_record_with_an_abstract_shows_its_first_sentence(assistant):
    result = assistant.ask("what has Luanzheng Guo worked on lately?")
    assert ("- Fault tolerance for large language model serving (SC, 2025): We study how transient "
            "hardware faults propagate through large language model serving [2]") in result.answer


@pytest.mark.parametrize("question", [
    "papers by Z. Zhang since 2025",  # initials
    "papers by Zhang Zhao since 2025",  # family name first
    "papers by Zhang, Zhao since 2025",
])
def test_author_forms_follow_the_search_name_rules(assistant, question):
    result = assistant.ask(question)
    assert result.kind == "listing"
    assert [c.title for c in result.citations] == expected_titles(ZHAO_PAPERS, 2025)


@pytest.mark.parametrize("question", ["Zhao Zhang's papers", "recent work of Zhao Zhang", "papers of Zhao Zhang"])
def test_other_listing_phrasings(assistant, question):
    result = assistant.ask(question)
    assert result.kind == "listing" and result.citations
    since = result.filters.get("since")
    assert [c.title for c in result.citations] == expected_titles(ZHAO_PAPERS, since or 2023)


def test_a_venue_and_year_listing(assistant):
    result = assistant.ask("papers in SC in 2024")
    assert result.kind == "listing"
    assert [c.title for c in result.citations] == ["Scalable data loaders for scientific machine learning"]
    assert result.answer.startswith("1 paper in SC in 2024:")


def test_an_empty_filtered_set_abstains_with_the_reason(assistant):
    result = assistant.ask("papers by Zhao Zhang since 2030")
    assert result.abstained and result.citations == []
    assert result.kind == "listing"
    assert result.notice and "No indexed paper is from 2030 or later (the newest is from 2026)." in result.notice
    both = assistant.ask("papers by Zhao Zhang in 1961")
    assert both.abstained and "matches all of" in (both.notice or "")


def test_with_a_model_configured_a_listing_stays_extractive_and_says_so(hashed_index):
    model = scripted("This must not be used [1].")
    core = Assistant(hashed_index.settings, index=hashed_index, chat_model=model)
    result = core.ask("What did Zhao Zhang publish since 2025?")
    assert result.mode == "extractive" and result.kind == "listing" and len(result.citations) == 5
    assert result.notice and LISTING_NOTICE in result.notice
    assert model.seen == []


def test_streaming_a_listing_is_one_final_event(hashed_index):
    model = scripted("This must not be used [1].")
    core = Assistant(hashed_index.settings, index=hashed_index, chat_model=model)
    events = list(core.stream_ask("papers by Zhao Zhang since 2025"))
    assert len(events) == 1 and isinstance(events[0], Final)
    assert events[0].result.kind == "listing" and len(events[0].result.citations) == 5
    assert not any(isinstance(e, TextDelta) for e in events) and model.seen == []


# --- the listing answer itself (pure) ------------------------------------------------------------


def test_a_long_listing_is_capped_and_says_how_to_see_the_rest():
    papers = [Paper(title=f"Paper number {i}", published=str(1990 + i), authors=[{"name": "Ann Lee"}])
              for i in range(30, 0, -1)]
    result = listing_answer("papers by Ann Lee", papers, SearchFilters(authors=["Ann Lee"]), cap=25)
    lines = result.answer.splitlines()
    assert lines[0] == "30 papers by Ann Lee, newest first:"
    assert len(result.citations) == 25 and cited_numbers(result.answer) == list(range(1, 26))
    assert lines[-1] == '- and 5 more (paperbot search "papers by Ann Lee" --k 30)'


def test_describe_filters_reads_as_a_phrase():
    assert SearchFilters(authors=["A B"], since=2019, until=2021).wording() == "by A B from 2019 to 2021"
    assert SearchFilters(venue="Nature", until=2010).wording() == "in Nature until 2010"


def test_a_title_only_record_in_a_topic_answer_shows_title_venue_and_year():
    paper = Paper(**OTHER_PAPERS[0])  # no abstract
    result = extractive_answer("codes for detecting errors", [SearchHit(paper=paper, score=0.6)])
    assert result.answer.splitlines()[1] == (
        "- N-dimensional codes for detecting errors (Bell System Technical Journal, 1961) [1]")


# --- a topic within the filters (real encoder) ----------------------------------------------------


@pytest.fixture(scope="module")
def real_index(tmp_path_factory: pytest.TempPathFactory, reference_encoder) -> Iterator[object]:
    index = open_index(tmp_path_factory.mktemp("listing-real"), reference_encoder)
    yield index
    index.close()


@pytest.mark.slow
def test_mixed_question_answers_the_topic_within_the_filter(real_index):
    core = Assistant(real_index.settings, index=real_index, chat_model=None)
    result = core.ask("papers by Zhao Zhang on checkpointing")
    assert result.kind == "mixed" and not result.abstained
    assert result.filters == {"authors": ["Zhao Zhang"]}
    cited = [c.title for c in result.citations]
    assert "Asynchronous checkpointing for exascale simulations" in cited
    assert "A survey of checkpoint restart techniques" not in cited  # on topic, but not by Zhao Zhang
    assert set(cited) <= set(titles(ZHAO_PAPERS))


@pytest.mark.slow
def test_mixed_question_with_no_record_on_the_topic_lists_the_filtered_set(real_index):
    core = Assistant(real_index.settings, index=real_index, chat_model=None)
    result = core.ask("papers by Luanzheng Guo on sourdough bread baking")
    assert result.kind == "mixed" and not result.abstained
    assert [c.title for c in result.citations] == titles(GUO_PAPERS)
    assert result.notice and NO_TOPIC_NOTICE in result.notice


@pytest.mark.slow
def test_mixed_question_over_an_empty_filter_abstains_with_the_reason(real_index):
    core = Assistant(real_index.settings, index=real_index, chat_model=None)
    result: AnswerResult = core.ask("papers by Zhao Zhang on checkpointing since 2030")
    assert result.abstained and result.kind == "mixed"
    assert "No indexed paper is from 2030 or later" in (result.notice or "")


def test_a_venue_acronym_lists_the_records_of_the_venue_that_spells_it_out(tmp_path: Path):
    from retrieval.index.filters import is_venue_acronym
    from retrieval.index.paper_index import PaperIndex

    icde = "2023 IEEE 39th International Conference on Data Engineering (ICDE)"
    records = [
        Paper(title="Learned indexes for spatial data", published="2023", venue=icde, authors=[{"name": "Ann Lee"}]),
        Paper(title="Stream joins at scale", published="2023", venue=icde, authors=[{"name": "Bob Ray"}]),
        Paper(title="Vision transformers for remote sensing", published="2023",
              venue="Computer Vision and Pattern Recognition", authors=[{"name": "Cy Dee"}]),
    ]
    index = PaperIndex.open(make_settings(tmp_path), encoder=HashEncoder())
    try:
        index.upsert(records)
        result = Assistant(index.settings, index=index, chat_model=None).ask("papers published at ICDE")
        assert result.kind == "listing" and result.filters == {"venue": "ICDE"}
        assert {c.title for c in result.citations} == {"Learned indexes for spatial data", "Stream joins at scale"}
        assert not index.knows_venue("Vision")  # a capitalised word is not an acronym: no venue filter
    finally:
        index.close()
    assert is_venue_acronym("NeurIPS") and is_venue_acronym("INFOCOM") and not is_venue_acronym("Vision")
