"""An ingest reports its progress while a batch is encoded, not only when the batch is written.

At 9 records a second under load, one batch of 256 records takes half a minute: the progress
line of a log (``bot.progress``) would show the same count for that long. The upsert's own
reports (every ``ENCODE_BATCH`` records encoded) reach the caller as counts of the whole ingest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.index import writes
from retrieval.index.paper_index import PaperIndex
from retrieval.ingest.pipeline import ingest_papers
from retrieval.records.paper import Paper

from .conftest import HashEncoder, make_settings


def test_reports_come_within_batches_and_only_go_up(tmp_path: Path, arxiv_papers: list[Paper],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writes, "ENCODE_BATCH", 10)
    papers = arxiv_papers[:50]
    seen: list[tuple[int, int]] = []
    index = PaperIndex.open(make_settings(tmp_path / "data"), HashEncoder())
    try:
        report = ingest_papers(index, papers, progress=lambda done, total: seen.append((done, total)), batch_size=25)
    finally:
        index.close()
    assert len(report.added) == 50
    counts = [done for done, _ in seen]
    assert {total for _, total in seen} == {50}
    assert counts == sorted(counts) and counts[0] == 0 and counts[-1] == 50
    assert {10, 20, 35, 45} <= set(counts)  # inside the two batches of 25, as each 10 are encoded
