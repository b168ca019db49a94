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


def test_a_corrected_title_revises_the_record_its_entry_made(tmp_path: Path, open_index) -> None:
    """A typo fixed in the title: the entry's hash id and title keys change, so no lookup by id or
    title finds its record; the file, source and key of the entry do (``Provenance.file``)."""
    index = _index(tmp_path, open_index)
    bib = tmp_path / "mine.bib"
    typo = ENTRY.replace("Sparse Tensor Factorization", "Sparse Tensro Factorisation")
    [before] = [index.store.get(paper_id) for paper_id in _ingest(index, bib, typo).added]
    corrected = _ingest(index, bib, ENTRY)
    [paper] = list(index.iter_papers())
    assert paper.title == "Sparse Tensor Factorization on Many-Core Processors"
    assert paper.id != before.id and corrected.updated == [paper.id] and not corrected.added
    assert [(item.source_id, item.file) for item in paper.provenance] == [("doe2021", str(bib.resolve()))]
    assert index.search("sparse tensor factorization on many-core processors", k=1)[0].paper.id == paper.id


def test_a_key_given_to_another_paper_in_the_same_file_is_not_a_correction(tmp_path: Path, open_index) -> None:
    """The entry ``doe2021`` of the same file now describes a paper whose title shares almost no
    word with the stored one: that is another paper, added beside it (as before files were named)."""
    index = _index(tmp_path, open_index)
    bib = tmp_path / "mine.bib"
    _ingest(index, bib, ENTRY)
    report = _ingest(index, bib, ENTRY.replace("Sparse Tensor Factorization on Many-Core Processors",
                                                "Learned Index Structures for Spatial Data"))
    assert len(report.added) == 1 and not report.updated
    assert sorted(paper.title for paper in index.iter_papers()) == [
        "Learned Index Structures for Spatial Data", "Sparse Tensor Factorization on Many-Core Processors"]


def test_a_corrected_title_in_another_file_with_the_same_key_is_another_paper(tmp_path: Path, open_index) -> None:
    index = _index(tmp_path, open_index)
    _ingest(index, tmp_path / "a.bib", ENTRY)
    _ingest(index, tmp_path / "b.bib", ENTRY.replace("Sparse Tensor Factorization", "Sparse Tensor Decomposition"))
    assert len(list(index.iter_papers())) == 2


def test_a_file_moved_elsewhere_is_followed(tmp_path: Path, open_index) -> None:
    """Ingested again from its new place with the same title, the record names both files (it was
    read from each); a correction made in the new one then revises the record."""
    index = _index(tmp_path, open_index)
    old = tmp_path / "old.bib"
    _ingest(index, old, ENTRY)
    moved = tmp_path / "moved" / "mine.bib"
    moved.parent.mkdir()
    assert len(_ingest(index, moved, ENTRY).updated) == 1  # it names a file it did not
    [paper] = list(index.iter_papers())
    assert sorted(item.file for item in paper.provenance) == sorted([str(old.resolve()), str(moved.resolve())])
    assert len(_ingest(index, moved, ENTRY).unchanged) == 1
    _ingest(index, moved, ENTRY.replace("Many-Core Processors", "Manycore Processors"))
    assert [paper.title for paper in index.iter_papers()] == ["Sparse Tensor Factorization on Manycore Processors"]


def test_two_files_with_one_key_for_one_paper_each_keep_their_entry(tmp_path: Path, open_index) -> None:
    """Co-authors' files often give a paper the same generated key: the record keeps an entry per
    file, so re-reading either file changes nothing, and either file's correction revises it."""
    index = _index(tmp_path, open_index)
    mine, theirs = tmp_path / "mine.bib", tmp_path / "theirs.bib"
    _ingest(index, mine, ENTRY)
    _ingest(index, theirs, ENTRY)
    for path in (mine, theirs, mine):
        assert len(_ingest(index, path, ENTRY).unchanged) == 1
    _ingest(index, theirs, ENTRY.replace("Many-Core Processors", "Manycore Processors"))
    [paper] = list(index.iter_papers())
    assert paper.title == "Sparse Tensor Factorization on Manycore Processors"
    assert sorted(item.file for item in paper.provenance) == sorted([str(mine.resolve()), str(theirs.resolve())])


def test_a_repeated_bibtex_key_names_the_first_entry_only(tmp_path: Path, open_index) -> None:
    """A BibTeX key repeated in a file is the first entry's (LaTeX cites that one; the later one is
    read without the key): a corrected title of the first revises its record, the other stays."""
    index = _index(tmp_path, open_index)
    bib = tmp_path / "mine.bib"
    second = ENTRY.replace("Sparse Tensor Factorization on Many-Core Processors", "Sparse Tensor Storage Formats")
    _ingest(index, bib, ENTRY + second)
    files = {paper.title: [item.file for item in paper.provenance] for paper in index.iter_papers()}
    assert files == {"Sparse Tensor Factorization on Many-Core Processors": [str(bib.resolve())],
                     "Sparse Tensor Storage Formats": [None]}
    _ingest(index, bib, ENTRY.replace("Many-Core", "Manycore") + second)
    assert sorted(paper.title for paper in index.iter_papers()) == [
        "Sparse Tensor Factorization on Manycore Processors", "Sparse Tensor Storage Formats"]


def test_a_record_stored_before_files_were_named_names_its_file_from_the_next_ingest(
        tmp_path: Path, open_index) -> None:
    """Its entry without a file is the same entry as the one read again: one entry then, naming the
    file (reported updated once), and a later correction of the title revises the record."""
    index = _index(tmp_path, open_index)
    bib = tmp_path / "mine.bib"
    _ingest(index, bib, ENTRY)
    [stored] = list(index.iter_papers())
    index.store.put_many([stored.model_copy(update={"provenance": [
        item.model_copy(update={"file": None}) for item in stored.provenance]})])  # as an older paperbot wrote it
    assert len(_ingest(index, bib, ENTRY).updated) == 1
    [paper] = list(index.iter_papers())
    assert [(item.source_id, item.file) for item in paper.provenance] == [("doe2021", str(bib.resolve()))]
    assert len(_ingest(index, bib, ENTRY).unchanged) == 1
    _ingest(index, bib, ENTRY.replace("Many-Core", "Manycore"))
    assert [paper.title for paper in index.iter_papers()] == ["Sparse Tensor Factorization on Manycore Processors"]
