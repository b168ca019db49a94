"""`paperbot export` (JSONL and BibTeX) re-imported into a fresh data dir loses nothing.

The base index holds records from four formats (arXiv snapshot, BibTeX, RIS, CSL-JSON): DOIs,
arXiv ids, hash ids, non-ASCII names, author lists cut with "and others" and LaTeX-looking
titles. Each export is ingested into an
empty installation through the CLI (its `main`, in this process), and the stored records are compared field by field: ids,
titles, authors (and whether the list was cut), dates, venues, DOIs, arXiv ids and abstracts for both formats; for JSONL the
whole record, its earlier provenance included (the import appends its own entry; BibTeX's leaves
out the files entries were read from).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.reliability.helpers import run_main, stored_papers

pytestmark = pytest.mark.slow

#: What a bibliography must carry through any format.
CORE_FIELDS = ("title", "published", "venue", "doi", "arxiv_id")


def _names(record: dict[str, Any]) -> list[str]:
    return [author["name"] for author in record.get("authors", [])]


def _export_and_reimport(base_index: Path, fresh_dir: Path, fmt: str) -> tuple[dict, dict, str]:
    exported = run_main("export", "--format", fmt, data_dir=base_index)
    assert exported.code == 0, exported.stderr
    path = fresh_dir.parent / f"export.{'bib' if fmt == 'bibtex' else 'jsonl'}"
    path.write_text(exported.stdout, encoding="utf-8")
    imported = run_main("ingest", str(path), "--json", data_dir=fresh_dir)
    assert imported.code == 0, imported.stderr
    report = imported.json()
    assert report["skipped"] == [] and report["warnings"] == [] and report["merged_duplicates"] == 0, report
    return stored_papers(base_index), stored_papers(fresh_dir), exported.stdout


@pytest.mark.parametrize("fmt", ["jsonl", "bibtex"])
def test_export_then_import_keeps_every_record(base_index: Path, fresh_dir: Path, fmt: str) -> None:
    original, again, text = _export_and_reimport(base_index, fresh_dir, fmt)

    assert len(original) >= 100
    assert set(again) == set(original)  # same ids: nothing lost, nothing split or merged
    for paper_id, before in original.items():
        after = again[paper_id]
        for field in CORE_FIELDS:
            assert after.get(field) == before.get(field), (paper_id, field)
        assert _names(after) == _names(before), paper_id
        # a list the source cut ("and others") stays marked: BibTeX writes "and others" again
        assert after.get("authors_truncated", False) == before.get("authors_truncated", False), paper_id
        assert after.get("abstract") == before.get("abstract"), paper_id
    assert any(record.get("authors_truncated") for record in original.values())
    if fmt == "bibtex":
        assert text.count("\n@") + text.startswith("@") == len(original)
        for paper_id, before in original.items():  # every stored field, and where it came from
            _check_provenance_kept(_without_files(before), again[paper_id], added=("bibtex",))
    else:
        for paper_id, before in original.items():
            _check_provenance_kept(before, again[paper_id])


def _without_files(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` as a BibTeX export carries it: its provenance without the files its entries were
    read from (this machine's paths, left out of a shared export)."""
    return {**record, "provenance": [{k: v for k, v in entry.items() if k != "file"} for entry in record["provenance"]]}


def _check_provenance_kept(before: dict[str, Any], after: dict[str, Any], added: tuple[str, ...] = ("jsonl",)) -> None:
    """Both formats carry whole records: only the import's own provenance entry may be new
    (BibTeX adds none for an entry that came with its user's key: it is the same entry)."""
    assert {k: v for k, v in after.items() if k != "provenance"} == {
        k: v for k, v in before.items() if k != "provenance"
    }
    history = after["provenance"]
    assert history[: len(before["provenance"])] == before["provenance"]
    new = [entry["source"] for entry in history[len(before["provenance"]) :]]
    allowed = ([], list(added)) if added == ("bibtex",) else (list(added),)
    assert new in allowed, new
