"""The foundation's acceptance check: the real PETSc BibTeX file (~4,000 entries), twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import paperbot, paperbot_here
from tests.support.model_cache import link_model_cache

pytestmark = pytest.mark.slow

PETSC = Path(__file__).resolve().parents[1] / "fixtures" / "files" / "petsc.bib"


def test_petsc_ingest_reports_and_second_run_changes_nothing(tmp_path):
    link_model_cache(tmp_path / "data")
    first = paperbot("ingest", str(PETSC), "--json", data_dir=tmp_path / "data", timeout=900)
    assert first.code == 0, first.stderr
    report = first.json()
    assert report["added"] > 3800
    # every skip names its entry and says why
    assert report["skipped"] and all(item["item"] and item["reason"] for item in report["skipped"])
    assert "Indexing" in first.stderr  # the progress bar

    second = paperbot("ingest", str(PETSC), "--json", data_dir=tmp_path / "data", timeout=900)
    assert second.code == 0, second.stderr
    again = second.json()
    assert again["added"] == 0 and again["updated"] == 0
    assert again["unchanged"] == report["added"] + report["updated"]

    # every answer cites records that exist in this index
    ask = paperbot_here("ask", "multigrid preconditioners for saddle point problems", "--json",
                   data_dir=tmp_path / "data", PAPERBOT_MIN_RELEVANCE="0.3")
    assert ask.code == 0, ask.stderr
    cited = {c["id"] for c in ask.json()["citations"]}
    assert cited
    exported = paperbot_here("export", data_dir=tmp_path / "data")
    indexed_ids = {json.loads(line)["id"] for line in exported.stdout.splitlines() if line.strip()}
    assert len(indexed_ids) == report["added"]
    assert cited <= indexed_ids
