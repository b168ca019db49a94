"""`paperbot ask` on listing questions (issue #13), through the CLI's entry point.

The index holds publication-list records, most without an abstract
(``tests/answers/listing_records.py``), ingested by the real console script; the questions
call the same entry point in this process (``paperbot_here``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.answers.listing_records import ZHAO_PAPERS, write_records
from tests.cli.conftest import paperbot, paperbot_here
from tests.support.model_cache import link_model_cache

pytestmark = pytest.mark.slow

OLD_KEYS = {"question", "answer", "mode", "abstained", "citations"}


@pytest.fixture(scope="module")
def listing_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("listing-cli")
    records = write_records(root / "records.jsonl")
    data_dir = link_model_cache(root / "data")
    run = paperbot("ingest", str(records), "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    return data_dir


@pytest.mark.parametrize("question", [
    "What did Zhao Zhang publish since 2025?",
    "papers by Zhao Zhang since 2025",
    "what has Luanzheng Guo worked on lately?",
])
def test_the_three_questions_answer_with_a_listing(listing_dir, question):
    run = paperbot_here("ask", question, "--json", data_dir=listing_dir)
    assert run.code == 0, run.stderr
    payload = run.json()
    assert set(payload) == OLD_KEYS | {"kind", "filters"}
    assert payload["abstained"] is False and payload["mode"] == "extractive"
    assert payload["kind"] == "listing"
    assert payload["citations"] and "No indexed paper" not in payload["answer"]
    for citation in payload["citations"]:
        assert f"[{citation['n']}]" in payload["answer"]


def test_json_filters_name_what_was_applied(listing_dir):
    payload = paperbot_here("ask", "What did Zhao Zhang publish since 2025?", "--json", data_dir=listing_dir).json()
    assert payload["filters"] == {"authors": ["Zhao Zhang"], "since": 2025}
    want = [row["title"] for row in ZHAO_PAPERS if int(row["published"][:4]) >= 2025]
    assert [c["title"] for c in payload["citations"]] == want


def test_author_option_with_a_bare_listing_word(listing_dir):
    payload = paperbot_here("ask", "papers", "--author", "Z. Zhang", "--since", "2026", "--json", data_dir=listing_dir).json()
    assert payload["kind"] == "listing"
    assert payload["filters"] == {"authors": ["Z. Zhang"], "since": 2026}
    assert len(payload["citations"]) == 2


def test_human_output_names_the_listing_and_its_filters(listing_dir):
    run = paperbot_here("ask", "papers by Zhao Zhang since 2025", data_dir=listing_dir)
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("Mode: extractive (listing")
    assert lines[1] == "Filters: by Zhao Zhang since 2025"
    assert "5 papers by Zhao Zhang since 2025, newest first:" in run.stdout
    assert "- Metadata services for billion-file workloads (2025) [5]" in run.stdout
    assert "Sources:" in run.stdout
    assert "no model is needed" in run.stderr


def test_an_empty_filter_abstains_with_the_reason(listing_dir):
    run = paperbot_here("ask", "papers by Zhao Zhang since 2030", "--json", data_dir=listing_dir)
    payload = run.json()
    assert payload["abstained"] is True and payload["citations"] == []
    assert "No indexed paper is from 2030 or later" in run.stderr
