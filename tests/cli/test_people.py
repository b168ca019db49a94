"""One person, one profile on the command line: person ids in the output, picking by id.

The renderers are tested on result models directly; the commands run through the CLI's entry
point (the index ingested by the installed console script, the questions in this process) over
a small index with namesakes (the made-up records of ``tests/slack/namesakes.py``:
two comparable "Wei Zhang", one prolific "Lena Fischer" beside two with one paper each).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from bot.cli import main
from bot.commands.collaborators import render_collaborators
from bot.commands.summarize import render_ambiguous, render_summary
from retrieval.results import (
    AmbiguousScholarResult,
    Citation,
    CollaboratorsResult,
    ExpertCandidate,
    ScholarCandidate,
    ScholarIdentity,
    ScholarSummaryResult,
)
from tests.cli.conftest import paperbot, paperbot_here
from tests.slack import namesakes as scenario
from tests.support.model_cache import link_model_cache

# the --json keys before person ids existed: scripts may rely on every one of them
SUMMARY_KEYS = {"scholar", "summary", "mode", "themes", "papers", "coauthors", "topics", "counts_by_year",
                "window_note", "paper_count", "coauthor_count", "coauthor_links", "timeline"}
AMBIGUOUS_KEYS = {"ambiguous", "query", "candidates", "more"}
CANDIDATE_KEYS = {"name", "affiliation", "papers", "sample_title", "ids", "coauthors", "latest_year"}
EXPERT_KEYS = {"name", "score", "affiliation", "reason", "papers"}

MIT = ScholarCandidate(name="Wei Zhang", person_id="person:3f9a0c12b4de", affiliation="MIT", papers=3,
                       sample_title="Silicon photonic interconnects", coauthors=["Ann Lee"], latest_year=2021)
OSLO = ScholarCandidate(name="Wei Zhang", person_id="person:77aa00bb11cc", affiliation="University of Oslo",
                        papers=1, sample_title="Moose browsing", coauthors=["Kari Nordmann"], latest_year=2024)


def _summary(**overrides: object) -> ScholarSummaryResult:
    values: dict[str, object] = {
        "scholar": ScholarIdentity(name="Wei Zhang", affiliations={"current": ["MIT"], "previous": []}),
        "summary": "Works on photonics [1].", "mode": "extractive", "themes": [], "papers": [], "coauthors": [], "topics": [],
        "paper_count": 5, "person_id": "person:0123456789ab",
    }
    values.update(overrides)
    return ScholarSummaryResult(**values)


# --- rendering ---------------------------------------------------------------------------------


def test_ambiguous_lists_each_person_id_and_how_to_pick_one_in_one_step() -> None:
    text = render_ambiguous(AmbiguousScholarResult(query="Wei Zhang", candidates=[MIT, OSLO]))
    lines = text.splitlines()
    assert lines[1].startswith(" 1. Wei Zhang [person:3f9a0c12b4de] — MIT — 3 papers (latest 2021)")
    assert lines[2].startswith(" 2. Wei Zhang [person:77aa00bb11cc] — University of Oslo — 1 paper (latest 2024)")
    assert "They are kept apart because their co-authors, topics or ids differ." in lines
    assert "no shared id, co-author or affiliation" not in text
    assert "paperbot summarize person:3f9a0c12b4de" in lines[-2]  # the last words say how to pick one


def test_ambiguous_without_person_ids_keeps_the_old_advice() -> None:
    old = [c.model_copy(update={"person_id": None}) for c in (MIT, OSLO)]
    text = render_ambiguous(AmbiguousScholarResult(query="Wei Zhang", candidates=old))
    assert "[person:" not in text and "paperbot summarize person:" not in text
    assert "paperbot scholars add NAME --openalex ID" in text


def test_summary_names_the_namesakes_in_one_line() -> None:
    text = render_summary(_summary(others_with_this_name=2, namesakes=[MIT, OSLO]))
    [line] = [line for line in text.splitlines() if line.startswith("Also in the index:")]
    assert line == (
        "Also in the index: 2 other people named Wei Zhang — "
        "paperbot summarize person:3f9a0c12b4de (MIT, latest 2021, 3 papers, with Ann Lee); "
        "paperbot summarize person:77aa00bb11cc (University of Oslo, latest 2024, 1 paper, with Kari Nordmann)"
    )
    assert "Person id: person:0123456789ab" in text
    assert text.startswith("Wei Zhang\nAffiliation: MIT\n")  # the first lines are unchanged


def test_summary_namesake_line_counts_the_unlisted_and_other_spellings() -> None:
    one = render_summary(_summary(others_with_this_name=1, namesakes=[]))
    assert "Also in the index: 1 other person named Wei Zhang." in one
    more = render_summary(_summary(others_with_this_name=4, namesakes=[OSLO]))
    assert more.count("paperbot summarize person:") == 1 and "; and 3 more" in more
    initial = OSLO.model_copy(update={"name": "W. Zhang"})
    mixed = render_summary(_summary(others_with_this_name=1, namesakes=[initial]))
    assert "1 other person matching this name — paperbot summarize person:77aa00bb11cc (W. Zhang, " in mixed
    assert "Also in the index" not in render_summary(_summary())


def test_collaborators_text_shows_the_person_id_after_each_name() -> None:
    paper = Citation(n=1, id="doi:10.1/x", title="Optics", authors=["Ann Lee"], year=2021, venue=None, doi="10.1/x",
                     arxiv_id=None, url=None, score=0.9)
    result = CollaboratorsResult(topic="optics", scholars=[
        ExpertCandidate(name="Ann Lee", person_id="person:eeeeee555555", score=0.8, affiliation="MIT",
                        reason="1 paper", papers=[paper]),
        ExpertCandidate(name="Bo Li", score=0.5, affiliation=None, reason="1 paper", papers=[paper]),
    ])
    lines = render_collaborators(result).splitlines()
    assert lines[2].startswith(" 1. Ann Lee [person:eeeeee555555] — MIT — score 0.80")
    assert lines[4].startswith(" 2. Bo Li — no affiliation on record")


@pytest.mark.parametrize("command", ["summarize", "collaborators"])
def test_help_says_a_name_may_be_a_person_id(command: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([command, "--help"])
    assert "person:3f9a0c12b4de" in " ".join(out.getvalue().split())


# --- the installed command over a real index -------------------------------------------------------


@pytest.fixture(scope="module")
def namesake_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    records = scenario.write_records(tmp_path_factory.mktemp("namesakes") / "namesakes.jsonl")
    data_dir = link_model_cache(tmp_path_factory.mktemp("pb-people") / "data")
    run = paperbot("ingest", str(records), "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    assert run.json()["added"] == len(scenario.RECORDS)
    return data_dir


@pytest.mark.slow
def test_an_ambiguous_name_prints_ids_and_one_of_them_picks_exactly_that_person(namesake_dir: Path) -> None:
    listed = paperbot_here("summarize", scenario.AMBIGUOUS_NAME, "--json", data_dir=namesake_dir)
    assert listed.code == 0, listed.stderr
    payload = listed.json()
    assert set(payload) >= AMBIGUOUS_KEYS and payload["ambiguous"] is True
    candidates = payload["candidates"]
    assert len(candidates) == 2 and all(set(c) >= CANDIDATE_KEYS for c in candidates)
    ids = [c["person_id"] for c in candidates]
    assert all(i and i.startswith("person:") for i in ids) and len(set(ids)) == 2

    text = paperbot_here("summarize", scenario.AMBIGUOUS_NAME, data_dir=namesake_dir)
    assert text.code == 0, text.stderr
    assert all(f"[{i}]" in text.stdout for i in ids)
    assert f"paperbot summarize {ids[0]}" in text.stdout

    for picked, other in ((candidates[0], candidates[1]), (candidates[1], candidates[0])):
        run = paperbot_here("summarize", picked["person_id"], "--json", data_dir=namesake_dir)
        assert run.code == 0, run.stderr
        summary = run.json()
        assert set(summary) >= SUMMARY_KEYS
        assert summary["person_id"] == picked["person_id"] and summary["paper_count"] == picked["papers"]
        titles = {paper["title"] for paper in summary["papers"]}
        assert picked["sample_title"] in titles and other["sample_title"] not in titles
        assert summary["scholar"]["affiliations"]["current"] == [picked["affiliation"]]


@pytest.mark.slow
def test_a_dominant_person_is_summarized_and_the_namesakes_are_named(namesake_dir: Path) -> None:
    run = paperbot_here("summarize", scenario.DOMINANT_NAME, "--json", data_dir=namesake_dir)
    assert run.code == 0, run.stderr
    summary = run.json()
    assert set(summary) >= SUMMARY_KEYS and "ambiguous" not in summary
    assert summary["paper_count"] == scenario.DOMINANT_PAPERS and summary["others_with_this_name"] == 2
    others = [n["person_id"] for n in summary["namesakes"]]
    assert len(others) == 2 and summary["person_id"] not in others

    text = paperbot_here("summarize", scenario.DOMINANT_NAME, data_dir=namesake_dir)
    assert text.code == 0, text.stderr
    [line] = [line for line in text.stdout.splitlines() if line.startswith("Also in the index:")]
    assert line.startswith(f"Also in the index: 2 other people named {scenario.DOMINANT_NAME} — paperbot summarize ")
    assert all(f"paperbot summarize {i} (" in line for i in others)
    assert "University of Bergen" in line and "James Cook University" in line

    namesake = paperbot_here("summarize", others[0], "--json", data_dir=namesake_dir)
    assert namesake.code == 0, namesake.stderr
    assert namesake.json()["person_id"] == others[0] and namesake.json()["paper_count"] == 1


@pytest.mark.slow
def test_collaborators_show_person_ids_and_accept_one_for_the_asker(namesake_dir: Path) -> None:
    topic = "graph neural networks for molecules"
    run = paperbot_here("collaborators", topic, "--limit", "3", "--json", data_dir=namesake_dir)
    assert run.code == 0, run.stderr
    experts = run.json()["scholars"]
    assert experts and all(set(e) >= EXPERT_KEYS and e["person_id"] for e in experts)
    top = experts[0]
    assert top["name"] == scenario.DOMINANT_NAME

    text = paperbot_here("collaborators", topic, "--limit", "3", data_dir=namesake_dir)
    assert f" 1. {top['name']} [{top['person_id']}] — " in text.stdout

    without = paperbot_here("collaborators", topic, "--for", top["person_id"], "--limit", "3", "--json",
                       data_dir=namesake_dir)
    assert without.code == 0, without.stderr
    assert top["person_id"] not in {e["person_id"] for e in without.json()["scholars"]}
