"""Re-ingesting a file that lost entries: what its earlier versions made is listed, and `--prune`
takes it out.

Records name the file each entry was read from (``Provenance.file``), so after an ingest of a file
read whole, a record that names it and that the ingest did not touch was made by an entry the
file no longer holds (``Library`` and ``removal.plan_no_longer_in``).
"""

from __future__ import annotations

from pathlib import Path

from retrieval.assistant import Assistant
from tests.ingest.conftest import make_settings

FIRST = """@article{doe2021,
  title={Sparse Tensor Factorization on Many-Core Processors},
  author={Doe, Jane and Roe, Richard},
  journal={Journal of Parallel Computing},
  year={2021},
}
"""
SECOND = """@inproceedings{doe2020,
  title={Learned Index Structures for Spatial Data},
  author={Doe, Jane},
  booktitle={Proceedings of SIGMOD},
  year={2020},
}
"""


def _library(tmp_path: Path, open_index):
    settings = make_settings(tmp_path / "data", "http://127.0.0.1:9")
    return Assistant(settings, index=open_index(settings), chat_model=None)


def _reingested(tmp_path: Path, open_index, edited: str, *, prune: bool = False):
    """A library that ingested ``mine.bib`` with both entries, then again as ``edited``: the
    library and the second report."""
    assistant = _library(tmp_path, open_index)
    bib = tmp_path / "mine.bib"
    bib.write_text(FIRST + SECOND, encoding="utf-8")
    assistant.library.ingest_files([bib])
    bib.write_text(edited, encoding="utf-8")
    return assistant, assistant.library.ingest_files([bib], prune=prune)


def _titles(assistant: Assistant) -> list[str]:
    return sorted(paper.title for paper in assistant.index.iter_papers())


def test_an_entry_deleted_from_the_file_is_listed_then_pruned(tmp_path: Path, open_index) -> None:
    assistant = _library(tmp_path, open_index)
    bib = tmp_path / "mine.bib"
    bib.write_text(FIRST + SECOND, encoding="utf-8")
    first = assistant.library.ingest_files([bib])
    assert first.no_longer_in_files == []
    [gone_id] = [paper.id for paper in assistant.index.iter_papers() if paper.year == 2020]

    bib.write_text(FIRST, encoding="utf-8")
    listed = assistant.library.ingest_files([bib])
    assert listed.no_longer_in_files == [gone_id] and listed.pruned == []
    assert len(_titles(assistant)) == 2  # listed, kept

    pruned = assistant.library.ingest_files([bib], prune=True)
    assert pruned.pruned == [gone_id] and pruned.pruned_kept == []
    assert _titles(assistant) == ["Sparse Tensor Factorization on Many-Core Processors"]
    assert assistant.library.ingest_files([bib], prune=True).no_longer_in_files == []


def test_a_record_another_file_describes_too_keeps_what_that_file_gave(tmp_path: Path, open_index) -> None:
    assistant = _library(tmp_path, open_index)
    mine, theirs = tmp_path / "mine.bib", tmp_path / "theirs.bib"
    mine.write_text(FIRST + SECOND, encoding="utf-8")
    theirs.write_text(SECOND, encoding="utf-8")
    assistant.library.ingest_files([mine, theirs])
    mine.write_text(FIRST, encoding="utf-8")
    report = assistant.library.ingest_files([mine], prune=True)
    assert report.pruned == []
    [kept] = report.pruned_kept
    assert kept.other_sources == ["bibtex doe2020"]
    [record] = [paper for paper in assistant.index.iter_papers() if paper.year == 2020]
    assert [item.file for item in record.provenance] == [str(theirs.resolve())]


def test_a_file_with_an_entry_that_could_not_be_read_takes_nothing_out(tmp_path: Path, open_index) -> None:
    """The deleted entry's place is taken by one without a title (skipped): the file was not
    read whole, so nothing is listed or pruned."""
    untitled = SECOND.replace("title={Learned Index Structures for Spatial Data},\n", "")
    assistant, report = _reingested(tmp_path, open_index, FIRST + untitled, prune=True)
    assert len(report.skipped) == 1
    assert report.no_longer_in_files == [] and report.pruned == []
    assert len(_titles(assistant)) == 2


def test_a_renamed_key_keeps_its_record(tmp_path: Path, open_index) -> None:
    """The same paper under a new key is merged into its record (the same title): the record was
    touched, so it is not listed."""
    assistant, report = _reingested(tmp_path, open_index, FIRST + SECOND.replace("doe2020", "doe2020learned"),
                                    prune=True)
    assert report.no_longer_in_files == [] and len(_titles(assistant)) == 2


def test_after_an_ingest_that_ran_elsewhere_the_same_check_prunes_under_the_lock(tmp_path: Path, open_index) -> None:
    """What ``ingest --jobs`` does once its workers are done: the check on the report they made."""
    assistant, report = _reingested(tmp_path, open_index, FIRST)
    report.no_longer_in_files = []
    assistant.library.note_entries_no_longer_in(report, prune=True)
    assert len(report.pruned) == 1 and report.no_longer_in_files == report.pruned
    assert _titles(assistant) == ["Sparse Tensor Factorization on Many-Core Processors"]


def test_a_key_given_to_another_paper_leaves_the_old_record_listed(tmp_path: Path, open_index) -> None:
    """``doe2020`` now names a paper whose title shares no word with the one it named: a new record
    (not a correction), and the old one is no longer held by the file."""
    other = SECOND.replace("Learned Index Structures for Spatial Data", "Graph Partitioning at Scale")
    assistant, report = _reingested(tmp_path, open_index, FIRST + other, prune=True)
    assert len(report.added) == 1 and len(report.pruned) == 1
    assert _titles(assistant) == ["Graph Partitioning at Scale", "Sparse Tensor Factorization on Many-Core Processors"]
