"""The co-author network and the timeline render to readable PNGs."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from matplotlib import image

from retrieval.errors import StorageError
from retrieval.results import ScholarSummaryResult
from retrieval.scholars.plots import render_plots
from retrieval.scholars.summary import summarize_scholar
from tests.scholars.conftest import PaperList

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def summary(papers, directory, tmp_path_factory) -> ScholarSummaryResult:
    from tests.scholars.conftest import make_settings

    settings = make_settings(tmp_path_factory.mktemp("plots"))
    result = summarize_scholar(PaperList(papers), settings, "Adrian Del Maestro", directory=directory,
                               today=date(2015, 1, 1))
    assert isinstance(result, ScholarSummaryResult)
    return result


def test_both_pictures_render(summary, tmp_path: Path):
    paths = render_plots(summary, tmp_path / "out")
    assert [p.name for p in paths] == ["adrian-del-maestro-coauthors.png", "adrian-del-maestro-timeline.png"]
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 20_000
        pixels = image.imread(path)
        height, width = pixels.shape[:2]
        assert width >= 900 and height >= 600
        assert pixels.std() > 0.05  # something was drawn, not a blank canvas


def test_timeline_is_stacked_by_theme(summary):
    assert len(summary.timeline) >= 2
    assert summary.timeline[-1].label == "Other topics"
    assert sum(sum(t.counts_by_year.values()) for t in summary.timeline) == summary.paper_count


def test_a_scholar_without_coauthors_gets_only_the_timeline(summary, tmp_path: Path):
    lonely = summary.model_copy(update={"coauthors": [], "coauthor_links": [], "coauthor_count": 0})
    paths = render_plots(lonely, tmp_path)
    assert [p.name for p in paths] == ["adrian-del-maestro-timeline.png"]


def test_unwritable_directory_is_a_clear_error(summary, tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StorageError) as caught:
        render_plots(summary, blocker / "plots")
    assert "--plot" in str(caught.value)


def test_the_network_never_draws_the_scholar_as_their_own_coauthor(summary, tmp_path: Path):
    from retrieval.results import Coauthor
    from retrieval.scholars.plots import network_people, render_network

    people = network_people(summary)
    assert people and all(c.person_id and c.person_id != summary.person_id for c in people)
    # a result that (wrongly) lists the scholar, and two different people of one name
    doubled = summary.model_copy(update={"coauthors": [
        Coauthor(name=summary.scholar.name, shared=9, person_id=summary.person_id),
        Coauthor(name="Wei Zhang", shared=2, person_id="person:aaaaaaaaaaaa"),
        Coauthor(name="Wei Zhang", shared=1, person_id="person:bbbbbbbbbbbb"),
    ]})
    assert [c.person_id for c in network_people(doubled)] == ["person:aaaaaaaaaaaa", "person:bbbbbbbbbbbb"]
    assert render_network(doubled, tmp_path / "net.png").read_bytes().startswith(PNG_MAGIC)
