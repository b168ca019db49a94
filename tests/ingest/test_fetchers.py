"""retrieval.ingest.fetchers: one selector per fetch, and arXiv's loose author search filtered
by the rule a sync uses (``sync.written_by``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from retrieval.errors import InputError, SourceError
from retrieval.ingest import fetchers
from retrieval.ingest.fetchers import FetchRequest, collect, plan_fetch
from retrieval.records.paper import Author, Paper
from retrieval.sources.fetched import PaperStream
from tests.ingest.conftest import make_settings


def _paper(title: str, *names: str) -> Paper:
    return Paper(title=title, authors=[Author(name=name) for name in names], year=2024)


class _Arxiv:
    """Stands in for ``ArxivSource``: an author search that also returns a namesake's paper,
    then (optionally) fails."""

    def __init__(self, settings: object, fail: bool = False) -> None:
        self.http = self
        self.closed = False
        self.fail = fail
        self.asked: tuple[str, date | None, int] | None = None

    def close(self) -> None:
        self.closed = True

    def by_author(self, name: str, *, since: date | None = None, max_results: int = 500) -> PaperStream:
        self.asked = (name, since, max_results)
        return PaperStream(lambda stream: self._papers())

    def _papers(self) -> Iterator[Paper]:
        yield _paper("Worm algorithms for helium", "Adrian Del Maestro", "Bob Smith")
        yield _paper("A paper by somebody else", "Maria Maestro")
        yield _paper("Entanglement in superfluids", "A. Del Maestro")
        if self.fail:
            raise SourceError("arxiv", "HTTP 503", status=503)


def test_one_selector_that_the_source_knows(tmp_path: Path) -> None:
    assert FetchRequest("crossref", dois=("10.1/x",)).selector() == "dois"
    with pytest.raises(InputError, match="exactly one way"):
        FetchRequest("crossref", dois=("10.1/x",), query="y").selector()
    with pytest.raises(InputError, match="exactly one way"):
        FetchRequest("crossref", author="Martin Fenner").selector()  # Crossref has no author search
    with pytest.raises(InputError, match="Unknown source"):
        FetchRequest("scholar", query="x").selector()
    with pytest.raises(InputError, match="not an ORCID"):  # checked before any connection is made
        plan_fetch(make_settings(tmp_path, "http://127.0.0.1:9"), FetchRequest("openalex", orcid="12"))


@pytest.mark.parametrize("fail", [False, True])
def test_arxiv_author_search_keeps_only_the_persons_papers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          fail: bool) -> None:
    made: list[_Arxiv] = []

    def connector(settings: object) -> _Arxiv:
        made.append(_Arxiv(settings, fail))
        return made[-1]

    monkeypatch.setattr("retrieval.sources.apis.arxiv.ArxivSource", connector)
    request = FetchRequest("arxiv", author="Adrian Del Maestro", since=date(2024, 1, 1), max_results=7)
    plan = plan_fetch(make_settings(tmp_path, "http://127.0.0.1:9"), request)
    counts: list[int] = []
    collected = collect(plan, counts.append)

    assert [paper.title for paper in collected.papers] == ["Worm algorithms for helium", "Entanglement in superfluids"]
    assert counts == [1, 2] and made[0].asked == ("Adrian Del Maestro", date(2024, 1, 1), 7)
    assert made[0].closed  # the connector is closed whether or not the source failed
    assert plan.what == "arXiv papers of 'Adrian Del Maestro'" and plan.label == "arXiv"
    if fail:
        assert isinstance(collected.failure, SourceError) and plan.notes == []  # stopped before counting
    else:
        assert collected.failure is None
        assert plan.notes == ["Left out 1 arXiv result(s) with no author whose name agrees with 'Adrian Del Maestro'."]


def test_the_filter_is_the_sync_rule() -> None:
    from retrieval.ingest.sync import written_by

    assert fetchers.written_by is written_by
    assert written_by(_paper("t", "Z. Zhang", "Ann Lee"), ["Zhao Zhang"])
    assert not written_by(_paper("t", "Tong Zhang"), ["Zhao Zhang"])


def test_a_fetch_into_a_read_only_data_dir_fails_before_asking_the_source(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval.assistant import Assistant
    from retrieval.errors import DataDirReadOnlyError

    made: list[_Arxiv] = []
    monkeypatch.setattr("retrieval.sources.apis.arxiv.ArxivSource", lambda settings: made.append(_Arxiv(settings)))
    monkeypatch.setattr("retrieval.storage.locks.unwritable_reason", lambda path: "a read-only file system")
    assistant = Assistant(make_settings(tmp_path / "data", "http://127.0.0.1:9"), chat_model=None)
    with pytest.raises(DataDirReadOnlyError, match=r"^Cannot ingest: the data dir .* is read-only \(a read-only file"):
        assistant.fetching.fetch("arxiv", author="Adrian Del Maestro")
    assert made == []  # the network was never asked
