"""The command-line contract, exercised through the installed console script.

The index is built, re-ingested and asked once through the real ``paperbot`` process; the
other checks of what a command prints call the same entry point in this process
(``paperbot_here``), which sees the same environment, files and streams.
"""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import paperbot, paperbot_here
from tests.support.model_cache import link_model_cache

pytestmark = pytest.mark.slow

CITATION_KEYS = {"n", "id", "title", "authors", "year", "venue", "doi", "arxiv_id", "url", "score"}


def _indexed_ids(data_dir) -> set[str]:
    run = paperbot_here("export", data_dir=data_dir)
    assert run.code == 0, run.stderr
    from retrieval.records.paper import Paper

    return {Paper.model_validate_json(line).id for line in run.stdout.splitlines() if line.strip()}


def test_reingesting_the_same_file_changes_nothing(indexed, small_corpus):
    run = paperbot("ingest", str(small_corpus), "--json", data_dir=indexed)
    assert run.code == 0, run.stderr
    report = run.json()
    assert report["added"] == 0 and report["updated"] == 0
    assert report["unchanged"] == 40


def test_ask_json_contract_cites_only_indexed_records(indexed):
    run = paperbot("ask", "Which papers use large language models to generate unit tests?", "--json", data_dir=indexed)
    assert run.code == 0, run.stderr
    payload = run.json()
    assert set(payload) == {"question", "answer", "mode", "abstained", "citations", "kind", "filters"}
    assert payload["kind"] == "topic" and payload["filters"] == {}
    assert payload["mode"] == "extractive" and payload["abstained"] is False
    assert payload["citations"], payload
    assert [c["n"] for c in payload["citations"]] == list(range(1, len(payload["citations"]) + 1))
    for citation in payload["citations"]:
        assert set(citation) == CITATION_KEYS
        assert f"[{citation['n']}]" in payload["answer"]
    assert {c["id"] for c in payload["citations"]} <= _indexed_ids(indexed)
    assert "extractive" in run.stderr.lower() or "no llm" in run.stderr.lower()


def test_ask_abstains_when_nothing_supports_an_answer(indexed):
    run = paperbot_here("ask", "What is the best recipe for sourdough bread?", "--json", data_dir=indexed)
    assert run.code == 0, run.stderr
    payload = run.json()
    assert payload["abstained"] is True
    assert payload["citations"] == []
    assert "no indexed paper" in payload["answer"].lower()


def test_human_output_names_the_mode_and_lists_sources(indexed):
    run = paperbot_here("ask", "metamorphic testing of deep learning systems", data_dir=indexed)
    assert run.code == 0, run.stderr
    assert run.stdout.startswith("Mode: extractive")
    assert "Sources:" in run.stdout and "[1] " in run.stdout


def test_search_json_is_ranked(indexed):
    run = paperbot_here("search", "regression test selection in continuous integration", "--k", "5", "--json", data_dir=indexed)
    assert run.code == 0, run.stderr
    payload = run.json()
    assert payload["query"] == "regression test selection in continuous integration"
    scores = [r["score"] for r in payload["results"]]
    assert 0 < len(scores) <= 5 and scores == sorted(scores, reverse=True)
    assert "regression test" in payload["results"][0]["title"].lower()


def test_search_takes_limit_like_collaborators(indexed):
    """``--limit`` is ``--k`` under the name ``collaborators`` uses: a newcomer's guess works."""
    run = paperbot_here("search", "regression test selection in continuous integration", "--limit", "2", "--json",
                        data_dir=indexed)
    assert run.code == 0, run.stderr
    assert len(run.json()["results"]) == 2


def test_since_filter_applies(indexed):
    run = paperbot_here("search", "testing", "--since", "2024", "--json", data_dir=indexed)
    assert run.code == 0, run.stderr
    years = [r["year"] for r in run.json()["results"]]
    assert years and all(year >= 2024 for year in years)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("ask", "   "), "empty"),
        (("ingest", "does-not-exist.bib"), "no such file"),
        (("ask", "anything", "--k", "0"), "--k"),
        (("search", "anything", "--limit", "101"), "--limit"),
    ],
)
def test_bad_input_is_one_clear_line(indexed, args, needle):
    run = paperbot_here(*args, data_dir=indexed)
    assert run.code == 2
    assert needle in run.stderr.lower()
    assert len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr


def test_huge_question_is_capped_and_says_so(indexed):
    run = paperbot_here("search", "regression tests " * 400, "--json", data_dir=indexed)
    assert run.code == 0, run.stderr
    assert "capped at 2,000 characters" in run.stderr


def test_invalid_setting_names_the_variable(tmp_path):
    run = paperbot_here("ask", "anything", data_dir=tmp_path / "d", PAPERBOT_ENCODER="gpu")
    assert run.code == 2
    assert "PAPERBOT_ENCODER" in run.stderr and "Traceback" not in run.stderr


def test_data_dirs_are_isolated(indexed, tmp_path):
    run = paperbot_here("search", "flaky tests", "--json", data_dir=link_model_cache(tmp_path / "other"))
    assert run.code == 0, run.stderr
    assert run.json()["results"] == []


def test_export_jsonl_carries_provenance(indexed):
    run = paperbot_here("export", data_dir=indexed)
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(records) == 40
    assert all(record["provenance"] for record in records)
