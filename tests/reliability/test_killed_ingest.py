"""A `paperbot ingest` killed with SIGKILL mid-run loses nothing and resumes to the same index.

The ingest commits in batches of 256 records (Chroma first, then the record store in one
transaction). The test kills the process as soon as the first batch is visible in the record
store (polling the database from outside: the SQLite file read-only, or the PostgreSQL database
on a connection of its own; every check runs on both backends, ``database_url``), then checks,
through the CLI only (its ``main`` in this process after the kill, to keep the suite fast):

* ``doctor`` finds no record without a vector (the write order promises that) and ``doctor
  --repair`` leaves all three stores agreeing;
* re-running the same ingest adds exactly what was missing, re-embeds nothing it kept, and
  ends with the same records (ids and content hashes) as an ingest that was never interrupted;
* record store, Chroma and the BM25 index then hold the same number of records, once each.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.reliability.helpers import (
    bib_entries,
    count_records,
    database_query,
    lexical_documents,
    link_model_cache,
    poll,
    run_main,
    spawn,
    stored_records,
)

pytestmark = pytest.mark.slow

ENTRIES = 600  # three batches of 256, 256 and the rest


def _doctor(data_dir: Path, url: str, *extra: str) -> dict:
    run = run_main("doctor", "--json", *extra, data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert run.code in (0, 3), run.stderr
    assert "Traceback" not in run.stderr
    return run.json()


def _distinct(data_dir: Path, column: str, url: str) -> tuple[int, int]:
    """(rows with a value in ``column``, distinct values) in the record store."""
    total, distinct = database_query(data_dir, f"SELECT COUNT({column}), COUNT(DISTINCT {column}) FROM papers", url)[0]
    return int(total), int(distinct)


def test_sigkill_after_the_first_batch_then_doctor_and_rerun(tmp_path: Path, model_cache: Path,
                                                             database_url: str | None, postgres_databases) -> None:
    source = tmp_path / "petsc_600.bib"
    source.write_text(bib_entries(ENTRIES), encoding="utf-8")
    killed = link_model_cache(tmp_path / "killed", model_cache)
    url = database_url or ""  # blank: SQLite in the data dir
    clean_url = postgres_databases() if database_url else ""  # the uninterrupted run's own database

    process = spawn("ingest", str(source), "--json", data_dir=killed, PAPERBOT_DATABASE_URL=url)
    stderr = process.stderr
    assert stderr is not None  # piped
    try:
        def first_batch() -> int | None:
            assert process.poll() is None, f"ingest ended before the first batch was seen: {stderr.read()}"
            count = count_records(killed, url)
            return count or None

        committed = poll(first_batch, timeout=240, what="the first committed batch")
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL

    kept = stored_records(killed, url)
    assert len(kept) >= committed > 0

    # 1. doctor: never a record that looks indexed without a vector
    found = _doctor(killed, url)
    assert found["records"] == len(kept)
    assert found["missing_vectors"] == [] and found["stale_vectors"] == []

    # 2. doctor --repair makes the stores agree
    repaired = _doctor(killed, url, "--repair")
    assert repaired["repaired"] is True
    after_repair = _doctor(killed, url)
    assert (after_repair["records"], after_repair["vectors"]) == (len(kept), len(kept))
    assert after_repair["orphan_vectors"] == [] and after_repair["lexical_current"] is True
    assert lexical_documents(killed) == len(kept)

    # 3. re-running completes the work: what was kept is unchanged, nothing is re-added
    rerun = run_main("ingest", str(source), "--json", data_dir=killed, PAPERBOT_DATABASE_URL=url)
    assert rerun.code == 0, rerun.stderr
    report = rerun.json()
    assert report["updated"] == 0
    assert report["unchanged"] == len(kept)
    total = report["added"] + report["unchanged"]

    # 4. the same index as an ingest that was never interrupted
    clean = link_model_cache(tmp_path / "clean", model_cache)
    reference = run_main("ingest", str(source), "--json", data_dir=clean, PAPERBOT_DATABASE_URL=clean_url)
    assert reference.code == 0, reference.stderr
    assert reference.json()["added"] == total
    assert stored_records(killed, url) == stored_records(clean, clean_url)

    # 5. the three stores hold each record once
    final = _doctor(killed, url, "--repair")
    assert final["missing_vectors"] == final["stale_vectors"] == final["orphan_vectors"] == []
    assert final["records"] == final["vectors"] == total
    assert lexical_documents(killed) == total
    rows, ids = _distinct(killed, "id", url)
    assert rows == ids == total
    assert _distinct(killed, "fingerprint", url) == _distinct(clean, "fingerprint", clean_url)
    with_doi, distinct_doi = _distinct(killed, "doi", url)
    assert with_doi == distinct_doi  # no paper stored twice under two ids
