"""What an API call returns (``retrieval.sources.fetched``): a paged stream that fetches as it is
iterated and keeps its own skips, and the value of a call answered at once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from retrieval.errors import SourceError
from retrieval.records.paper import Paper
from retrieval.results import SkippedItem
from retrieval.sources.fetched import Fetched, PaperStream


def _pages(log: list[str], fail: bool = False) -> PaperStream:
    def pages(stream: PaperStream) -> Iterator[Paper]:
        for number in (1, 2):
            log.append(f"page {number}")
            if fail and number == 2:
                raise SourceError("arxiv", "HTTP 503", status=503)
            stream.note([SkippedItem(f"entry {number}", "no title")], [])
            yield Paper(title=f"Paper {number}")

    return PaperStream(pages)


def test_pages_are_fetched_as_the_stream_is_iterated_and_their_skips_kept_on_it() -> None:
    log: list[str] = []
    stream = _pages(log)
    assert log == []  # nothing is fetched by the call itself
    assert next(stream).title == "Paper 1" and log == ["page 1"]
    assert [s.item for s in stream.skipped] == ["entry 1"]
    fetched = stream.collect()
    assert [p.title for p in fetched.items] == ["Paper 2"] and log == ["page 1", "page 2"]
    assert [s.item for s in fetched.skipped] == ["entry 1", "entry 2"]


def test_a_failing_page_keeps_what_came_before() -> None:
    stream = _pages([], fail=True)
    got = []
    with pytest.raises(SourceError):
        for paper in stream:
            got.append(paper)  # noqa: PERF402 - one by one: what arrived before the failure stays
    assert [p.title for p in got] == ["Paper 1"] and [s.item for s in stream.skipped] == ["entry 1"]


def test_two_calls_never_share_their_skips() -> None:
    first, second = _pages([]), _pages([])
    list(first)
    assert len(first.skipped) == 2 and second.skipped == []
    answered: Fetched[Paper] = Fetched([Paper(title="T")])
    assert [p.title for p in answered] == ["T"] and answered.skipped == [] and answered.warnings == []
