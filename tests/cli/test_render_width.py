"""Text results at a terminal's width: 80 columns read well; a pipe keeps one record per line."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from bot.commands.records import run_stats
from bot.commands.summarize import render_ambiguous, render_summary
from bot.context import CliContext
from bot.render import render_answer, render_search
from retrieval.config import Settings
from retrieval.results import (
    AmbiguousScholarResult,
    AnswerResult,
    Citation,
    IndexStats,
    ScholarCandidate,
    ScholarIdentity,
    ScholarSummaryResult,
    SearchResult,
)

URL = "https://doi.org/10.1103/physreva.76.062506-with-a-long-suffix"
CITATIONS = [
    Citation(n=1, id="doi:10.1103/x", title="Quantum molecular dynamics study of the pressure dependence of the "
             "ammonia inversion transition", authors=["I. M. Herbauts", "D. J. Dunstan", "A. Third", "B. Fourth"],
             year=2007, venue="Physical Review A (Vol.76, No.6, December 2007)", doi="10.1103/x", arxiv_id=None,
             url=URL, score=0.583),
    Citation(n=2, id="arxiv:2010.02502", title="Denoising Diffusion Implicit Models", authors=["Jiaming Song"],
             year=2021, venue=None, doi=None, arxiv_id="2010.02502", url="https://arxiv.org/abs/2010.02502",
             score=0.5),
]
ANSWER = AnswerResult(
    question="q", mode="extractive", abstained=False, citations=CITATIONS,
    answer="Relevant passages from 2 indexed papers:\n- Quantum molecular dynamics study of the pressure dependence "
    "(2007): The model does not display the behaviour expected from theories of quantum localisation [1]\n"
    "- Denoising Diffusion Implicit Models (2021): We present denoising diffusion implicit models, a more "
    "efficient class of iterative implicit probabilistic models [2]",
)


def _fits(text: str, width: int) -> None:
    for line in text.splitlines():
        assert len(line) <= width or " " not in line.strip(), line  # only an unbreakable URL may stick out


def _words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("render, result", [(render_answer, ANSWER), (render_search, SearchResult(query="q", results=CITATIONS))])
def test_results_wrap_at_80_columns_with_hanging_indents(render, result) -> None:
    wide, narrow = render(result), render(result, width=80)
    assert _words(narrow) == _words(wide)  # the same words, only the line breaks differ
    _fits(narrow, 80)
    lines = narrow.splitlines()
    assert URL in lines or any(line.strip().startswith(URL) for line in lines)  # never broken
    first = next(i for i, line in enumerate(lines) if line.startswith("[1] "))
    assert lines[first + 1].startswith("    ") and not lines[first + 1].startswith("     ")
    assert any(line.startswith("[2] ") for line in lines)


def test_a_pipe_keeps_one_record_per_line() -> None:
    lines = render_search(SearchResult(query="q", results=CITATIONS)).splitlines()
    assert len(lines) == 2 and lines[0].startswith("[1] ") and lines[0].endswith("(score 0.583)")
    answer = render_answer(ANSWER).splitlines()
    assert answer[0] == "Mode: extractive (no LLM: each sentence is taken from the cited record's abstract)"
    assert sum(line.startswith("[") for line in answer) == 2


def test_extractive_items_continue_under_their_first_word() -> None:
    lines = render_answer(ANSWER, width=80).splitlines()
    start = lines.index("Relevant passages from 2 indexed papers:")
    assert lines[start + 1].startswith("- ") and lines[start + 2].startswith("  ") and lines[start + 2][2] != " "


def test_summary_years_and_commands_wrap_at_80_columns() -> None:
    namesake = ScholarCandidate(name="Wei Zhang", person_id="person:77aa00bb11cc", affiliation="University of Oslo",
                                papers=1, sample_title="Moose browsing", coauthors=["Kari Nordmann"], latest_year=2024)
    result = ScholarSummaryResult(
        scholar=ScholarIdentity(name="Wei Zhang", affiliations={"current": ["MIT"], "previous": []}),
        summary="Works on photonics [1].", mode="extractive", themes=[], papers=CITATIONS[:1], coauthors=[],
        topics=[], paper_count=60, person_id="person:0123456789ab", others_with_this_name=1, namesakes=[namesake],
        counts_by_year=dict.fromkeys(range(2000, 2021), 3),
    )
    narrow = render_summary(result, width=80)
    _fits(narrow, 80)
    assert _words(narrow) == _words(render_summary(result))
    lines = narrow.splitlines()
    head = lines.index("Papers in the index: 60 (2000–2020) — by year:")
    assert lines[head + 1].startswith("    2000: 3, 2001: 3") and lines[head + 2].startswith("    20")
    assert any("paperbot summarize person:77aa00bb11cc" in line for line in lines)  # one line, to copy

    ambiguous = render_ambiguous(AmbiguousScholarResult(query="Wei Zhang", candidates=[namesake] * 2), width=80)
    _fits(ambiguous, 80)
    assert any("paperbot summarize person:77aa00bb11cc" in line for line in ambiguous.splitlines())


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Records:
    def stats(self) -> IndexStats:
        return IndexStats(papers=702, scholars=0, last_sync=None, by_source={"arxiv": 105, "bibtex": 106},
                          by_year=dict.fromkeys(range(1990, 2027), 11))

    def papers_per_scholar(self) -> dict[str, int]:
        return {}  # an empty roster


def _stats_output(tmp_path: Path, stdout: io.StringIO) -> list[str]:
    ctx = CliContext(settings=Settings(_env_file=None, data_dir=tmp_path / "data"), stdout=stdout)
    ctx._assistant = SimpleNamespace(records=_Records())  # type: ignore[assignment]
    assert run_stats(argparse.Namespace(json=False), ctx) == 0
    return stdout.getvalue().splitlines()


def test_stats_year_line_wraps_at_the_terminal_width(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    lines = _stats_output(tmp_path, _Terminal())
    years = [i for i, line in enumerate(lines) if line.startswith("By year:")]
    assert years and lines[years[0] + 1].startswith(" " * len("By year:    ") + "19")
    _fits("\n".join(lines), 80)
    assert all(len(line) <= 80 for line in lines)

    piped = _stats_output(tmp_path, io.StringIO())  # a pipe: the line as before
    assert piped[2] == "By year:    " + ", ".join(f"{year}: 11" for year in range(1990, 2027))


def test_a_pipe_indents_what_continues_a_wrapped_reason_or_item() -> None:
    """Through a pipe, text longer than the page still wraps (at ``MAX_WIDTH``) but continues under
    its indent, as at a terminal: never a stray "3" at the start of a line."""
    from bot.commands.collaborators import render_collaborators
    from retrieval.results import CollaboratorsResult, ExpertCandidate

    reason = ("2 papers among the 20 closest (best #3), 4 among the 150 retrieved; latest 2026; first author on 2, "
              "last author on 3")
    result = CollaboratorsResult(topic="web testing", scholars=[
        ExpertCandidate(name="Andrea Stocco", person_id="person:2aa2026d4172", score=4.67, affiliation=None,
                        reason=reason, papers=CITATIONS[:1])])
    lines = render_collaborators(result).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("    2 papers among"))
    assert lines[start + 1].startswith("    ") and lines[start + 1].strip()  # the rest of the reason, indented
    assert " ".join(line.strip() for line in lines[start:start + 2]) == reason
    answer = render_answer(ANSWER.model_copy(update={"answer": "- " + "a long extractive item " * 8})).splitlines()
    item = next(i for i, line in enumerate(answer) if line.startswith("- a long"))
    assert answer[item + 1].startswith("  ") and answer[item + 1][2] != " "  # under the item's first word
