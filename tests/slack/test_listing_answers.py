"""Listing answers in Slack (issue #13): numbered sources, one context line naming the filters,
no empty bullet for a title-only record; and end to end over HTTP (slow)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from bot.slack import blocks as kit
from retrieval.answers.listing import listing_answer
from retrieval.assistant import Assistant
from retrieval.records.paper import Paper
from retrieval.results import SearchFilters
from tests.answers.listing_records import ZHAO_PAPERS, write_records
from tests.slack.conftest import BotFactory, make_settings
from tests.slack.helpers import final_answer
from tests.support.model_cache import link_model_cache

FILTERS = SearchFilters(authors=["Zhao Zhang"], since=2025)


def zhao_listing():
    papers = [Paper(**row) for row in ZHAO_PAPERS if int(row["published"][:4]) >= 2025]
    result = listing_answer("papers by Zhao Zhang since 2025", papers, FILTERS)
    return result.model_copy(update={"kind": "listing", "filters": {"authors": ["Zhao Zhang"], "since": 2025}})


def texts(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_listing_blocks_show_every_item_its_sources_and_one_filter_line() -> None:
    blocks = kit.answer_blocks(zhao_listing())
    body = texts(blocks)
    assert "5 papers by Zhao Zhang since 2025, newest first:" in body
    assert "Metadata services for billion-file workloads (2025) [5]" in body
    assert "Burst buffer aware I/O scheduling (HPDC, 2025) [3]" in body
    filter_lines = [b for b in blocks if b["type"] == "context" and ":mag:" in texts([b])]
    assert len(filter_lines) == 1
    assert "Listing every indexed paper by Zhao Zhang since 2025" in texts(filter_lines)
    assert "*Sources*" in body and "*[5]*" in body
    assert "do not answer this confidently" not in body


def test_a_topic_answer_within_filters_names_them_too() -> None:
    result = zhao_listing().model_copy(update={"kind": "mixed"})
    assert ":mag: Filters applied: by Zhao Zhang since 2025" in texts(kit.answer_blocks(result))


def test_a_plain_topic_answer_has_no_filter_line() -> None:
    result = zhao_listing().model_copy(update={"kind": "topic", "filters": {}})
    assert ":mag:" not in texts(kit.answer_blocks(result))


def test_no_bullet_is_empty() -> None:
    for block in kit.answer_blocks(zhao_listing()):
        if block["type"] == "section":
            for line in block["text"]["text"].splitlines():
                assert line.strip() not in {"•", "-", "• [1]"}, line


# --- end to end ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def listing_core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Assistant]:
    records = write_records(tmp_path_factory.mktemp("listing-records") / "records.jsonl")
    core = Assistant(make_settings(link_model_cache(tmp_path_factory.mktemp("listing-index"))), chat_model=None)
    core.library.ingest_files([records])
    yield core
    core.index.close()


@pytest.mark.slow
def test_a_listing_question_is_answered_in_the_thread(make_bot: BotFactory, listing_core: Assistant) -> None:
    bot = make_bot(core=listing_core)
    bot.sender.mention("What did Zhao Zhang publish since 2025?")
    final = final_answer(bot.api)
    text = final.text()
    assert "5 papers by Zhao Zhang since 2025, newest first:" in text
    assert "Listing every indexed paper by Zhao Zhang since 2025" in text
    assert "*[5]*" in text and "No indexed paper addresses this" not in text
