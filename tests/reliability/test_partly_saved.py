"""A write that fails part-way says what it saved (issue #30 item 3): an ingest whose disk
fills after some committed batches reports how many records were saved and that re-running
the same command completes it, not "nothing was changed"."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import pytest

from retrieval.errors import DiskFullError, PartlySavedError
from retrieval.index.writes import UpsertReport
from retrieval.ingest.pipeline import ingest_papers
from retrieval.records.paper import Author, Paper


class FillingIndex:
    """An index whose disk fills on the ``full_at``-th write (what ``ingest_papers`` uses of it)."""

    def __init__(self, full_at: int) -> None:
        self.saved: dict[str, Paper] = {}
        self.writes = 0
        self.full_at = full_at

    def find_matches(self, paper: Paper) -> list[Paper]:
        return [self.saved[paper.id]] if paper.id in self.saved else []

    def find_matches_many(self, papers: Sequence[Paper]) -> list[list[Paper]]:
        return [self.find_matches(paper) for paper in papers]

    @contextmanager
    def encoding_ahead(self, papers: Sequence[Paper]) -> Iterator[None]:
        yield

    def upsert(self, papers: Sequence[Paper], *, replaces: Mapping[str, str] | None = None,
               progress: Callable[[int, int], None] | None = None) -> UpsertReport:
        self.writes += 1
        if self.writes == self.full_at:
            raise DiskFullError("write to the record store /data/records.sqlite3", where="/data")
        self.saved.update((paper.id, paper) for paper in papers)
        return UpsertReport(added=[paper.id for paper in papers])

    def delete(self, ids: Sequence[str]) -> int:
        return 0


def _papers(count: int) -> list[Paper]:
    return [Paper(title=f"Paper number {n}", authors=[Author(name="Ada Lovelace")], year=2020) for n in range(count)]


def test_a_disk_that_fills_after_two_batches_reports_what_was_saved() -> None:
    index = FillingIndex(full_at=3)
    with pytest.raises(PartlySavedError) as failed:
        ingest_papers(index, _papers(700), batch_size=256)  # type: ignore[arg-type]
    error = failed.value
    assert (error.saved, error.total) == (512, 700) and len(index.saved) == 512
    assert isinstance(error.cause, DiskFullError)
    assert "nothing was changed" not in str(error)
    assert str(error).startswith("Cannot write to the record store /data/records.sqlite3: the disk is full")
    assert "512 of 700 records were saved before that" in str(error)
    assert "run the same command again: it completes the rest" in str(error)


def test_a_disk_full_before_any_batch_still_says_nothing_was_changed() -> None:
    with pytest.raises(DiskFullError) as failed:
        ingest_papers(FillingIndex(full_at=1), _papers(10), batch_size=256)  # type: ignore[arg-type]
    assert not isinstance(failed.value, PartlySavedError)
    assert "nothing was changed" in str(failed.value)
