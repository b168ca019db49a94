"""Re-ingesting a corrected file: the entry's new version replaces what it said before.

A researcher fixes a typo in a venue or a wrong year in their ``.bib`` and ingests the file again.
Before, the field rules kept the stored value (same source, same rank: the first one wins) and a
corrected year made a second record beside the stale one, which search then showed first.
"""

from __future__ import annotations

from pathlib import Path

from retrieval.ingest.pipeline import ingest_files
from tests.ingest.conftest import make_settings

ENTRY = """@article{doe2021,
  title={Sparse Tensor Factorization on Many-Core Processors},
  author={Doe, Jane and Roe, Richard},
  journal={Jounral of Paralel Computing},
  year={2021},
  abstract={We study sparse tensor factorization on many-core processors with a new blocking scheme.}
}
"""


def _index(tmp_path: Path, open_index):
    return open_index(make_settings(tmp_path / "data", "http://127.0.0.1:9"))


def _ingest(index, path: Path, text: str):
    path.write_text(text, encoding="utf-8")
    return ingest_files(index, [path])


def test_a_corrected_venue_replaces_the_stored_one(tmp_path: Path, open_index) -> None:
    index = _index(tmp_path, open_index)
    bib = tmp_path / "mine.bib"
    _ingest(index, bib, ENTRY)
    report = _ingest(index, bib, ENTRY.replace("Jounral of Paralel", "Journal of Parallel"))
    [paper] = list(index.iter_papers())
    assert paper.venue == "Journal of Parallel Computing"
    assert len(report.updated) == 1 and not report.added


def test_a_corrected_year_leaves_one_record_not_two(tmp_path: Path, open_index) -> None:
    index = _index(tmp_path, open_index)
    bib = tmp_path / "mine.bib"
    _ingest(index, bib, ENTRY)
    corrected = _ingest(index, bib, ENTRY.replace("year={2021}", "year={2022}"))
    [paper] = list(index.iter_papers())
    assert paper.year == 2022
    assert corrected.updated == [paper.id] and not corrected.added  # its id changed: updated, not added
    assert index.search("sparse tensor factorization on many-core processors", k=1)[0].paper.year == 2022
    again = _ingest(index, bib, ENTRY.replace("year={2021}", "year={2022}"))
    assert len(again.unchanged) == 1 and not again.added and not again.updated


def test_what_another_source_supplied_stays(tmp_path: Path, open_index) -> None:
    """The same paper under another key in a co-author's file gave the abstract; correcting the
    venue in one's own file (which has no abstract) keeps it."""
    index = _index(tmp_path, open_index)
    theirs = tmp_path / "coauthor.bib"
    _ingest(index, theirs, ENTRY.replace("doe2021", "roe2021sparse"))
    mine = tmp_path / "mine.bib"
    without_abstract = "".join(line for line in ENTRY.splitlines(keepends=True) if "abstract=" not in line)
    _ingest(index, mine, without_abstract)
    _ingest(index, mine, without_abstract.replace("Jounral of Paralel", "Journal of Parallel"))
    [paper] = list(index.iter_papers())
    assert paper.venue == "Journal of Parallel Computing"
    assert paper.abstract and paper.abstract.startswith("We study sparse tensor factorization")
    assert {item.source_id for item in paper.provenance} == {"doe2021", "roe2021sparse"}


def test_one_key_in_two_files_for_two_papers_keeps_both(tmp_path: Path, open_index) -> None:
    index = _index(tmp_path, open_index)
    _ingest(index, tmp_path / "a.bib", ENTRY)
    other = ENTRY.replace("Sparse Tensor Factorization on Many-Core Processors", "Learned Index Structures for Spatial Data")
    _ingest(index, tmp_path / "b.bib", other.replace("sparse tensor factorization on many-core processors", "indexes"))
    assert sorted(paper.title for paper in index.iter_papers()) == [
        "Learned Index Structures for Spatial Data", "Sparse Tensor Factorization on Many-Core Processors"]
