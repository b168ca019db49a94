"""Disk full while writing: a clear one-line error, and the previous index intact and answering.

A real write failure, not a mock: the ingest runs in a subprocess whose files may not grow
past a size limit (``RLIMIT_FSIZE`` with SIGXFSZ ignored, so ``write`` fails with EFBIG the way
it fails with ENOSPC on a full disk). It needs no privileges and no mount, so it runs the same
in CI. Two moments: an ingest when no file of the data dir may grow any more (Chroma's write
fails first; the record store is never reached), and the first search after an ingest, which
must write a new BM25 index and cannot (it answers from memory and says nothing went wrong
that the user must act on). The checks afterwards run the CLI's ``main`` in this process,
without the limit. Both tests run with the records on SQLite in the data dir and on PostgreSQL
(``installation_copy``): the data dir's disk is the full one either way (the server's own full
disk is ``test_storage_errors.py``'s).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.conftest import Installation
from tests.reliability.helpers import (
    bib_entries,
    files_under,
    lexical_documents,
    paperbot,
    run_main,
    stored_records,
)

pytestmark = pytest.mark.slow

NEW_ENTRIES = 120  # fewer than one ingest batch (256): the failed ingest must leave no trace


def test_ingest_on_a_full_disk_keeps_the_previous_index(installation_copy: Installation, tmp_path: Path) -> None:
    index_copy, url = installation_copy.data_dir, installation_copy.database_url
    more = tmp_path / "more.bib"
    more.write_text(bib_entries(NEW_ENTRIES, start=1000), encoding="utf-8")
    before = stored_records(index_copy, url)
    limit = max(files_under(index_copy).values())  # no file may grow

    failed = paperbot("ingest", str(more), data_dir=index_copy, file_size_limit=limit, PAPERBOT_DATABASE_URL=url)

    assert failed.code == 2, (failed.stdout, failed.stderr)
    assert "Traceback" not in failed.stderr and "Traceback" not in failed.stdout
    line = failed.last_error_line
    assert line.startswith("paperbot: "), failed.stderr  # one line of ours (the store or the embedding cache)
    assert "PAPERBOT_DATA_DIR" in line or "disk" in line  # says where to look
    assert stored_records(index_copy, url) == before  # the failed batch left no record behind

    doctor = run_main("doctor", "--repair", "--json", data_dir=index_copy, PAPERBOT_DATABASE_URL=url)
    assert doctor.code == 0, doctor.stderr
    report = doctor.json()
    assert report["missing_vectors"] == [] and report["stale_vectors"] == []
    assert report["records"] == len(before)
    assert lexical_documents(index_copy) == len(before)

    answer = run_main("search", "Rosenbrock methods", "--k", "3", "--json", data_dir=index_copy, PAPERBOT_DATABASE_URL=url)
    assert answer.code == 0, answer.stderr
    titles = [hit["title"] for hit in answer.json()["results"]]
    assert any("Rosenbrock" in title for title in titles), titles


def test_search_that_cannot_save_the_new_bm25_index_still_answers(installation_copy: Installation, tmp_path: Path) -> None:
    index_copy, url = installation_copy.data_dir, installation_copy.database_url
    more = tmp_path / "more.bib"
    more.write_text(bib_entries(NEW_ENTRIES, start=1000), encoding="utf-8")
    added = run_main("ingest", str(more), "--json", data_dir=index_copy, PAPERBOT_DATABASE_URL=url)
    assert added.code == 0, added.stderr
    total = len(stored_records(index_copy, url))
    assert lexical_documents(index_copy) != total  # the BM25 index is rebuilt on the next search

    run = paperbot("search", "Rosenbrock methods", "--k", "3", "--json", data_dir=index_copy,
                   file_size_limit=16 * 1024, PAPERBOT_DATABASE_URL=url)  # the new BM25 arrays do not fit
    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert any("Rosenbrock" in hit["title"] for hit in run.json()["results"])
    assert lexical_documents(index_copy) != total  # nothing half-written was switched in

    doctor = run_main("doctor", "--repair", "--json", data_dir=index_copy, PAPERBOT_DATABASE_URL=url)
    assert doctor.code == 0 and doctor.json()["records"] == total
    assert lexical_documents(index_copy) == total
