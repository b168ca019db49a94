"""``doctor --repair`` when a store itself is damaged or lost.

* A damaged Chroma (its SQLite file garbled in the middle, or its header overwritten): ``doctor``
  reports it (exit 3) instead of failing with the error that tells the user to run it;
  ``doctor --repair`` moves the damaged directory aside (kept, with a timestamped name), builds
  a new one from every record of the record store, and afterwards search works and ``doctor``
  is clean.
* A record store that lost its records (a 0-byte ``records.sqlite3``, or one holding only a
  fraction of the indexed papers): ``doctor --repair`` refuses to delete the vectors (exit 2, one
  line saying why and what to do) and leaves every vector in place; ``--force`` goes ahead.

The damage is done to the files directly, before any paperbot code in this process has opened
them (chromadb caches one in-process system per directory). Vectors are counted in Chroma's own
SQLite file, read-only.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.reliability.helpers import query, run_main, stored_records

pytestmark = pytest.mark.slow


def _vector_count(data_dir: Path) -> int:
    return int(query(data_dir / "chroma" / "chroma.sqlite3", "SELECT COUNT(*) FROM embeddings")[0][0])


def _garble_pages(path: Path) -> None:
    """Overwrite 512 bytes of every other 4 KiB page after the first: "database disk image is malformed"."""
    data = bytearray(path.read_bytes())
    for start in range(4096, len(data), 8192):
        data[start : start + 512] = b"\xde\xad" * 256
    path.write_bytes(bytes(data))


def _garble_header(path: Path) -> None:
    """Overwrite the SQLite header: "file is not a database"."""
    data = bytearray(path.read_bytes())
    data[:100] = b"x" * 100
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_garble_pages, _garble_header], ids=["garbled-pages", "garbled-header"])
def test_a_damaged_vector_index_is_reported_and_rebuilt_from_the_record_store(index_copy: Path, damage) -> None:
    records = stored_records(index_copy)
    chroma_file = index_copy / "chroma" / "chroma.sqlite3"
    damage(chroma_file)
    damaged_bytes = chroma_file.read_bytes()

    found = run_main("doctor", data_dir=index_copy)
    assert found.code == 3, found.stdout + found.stderr
    assert "damaged" in found.stdout and "doctor --repair" in found.stdout, found.stdout
    assert f"{len(records)} records" in found.stdout

    repaired = run_main("doctor", "--repair", data_dir=index_copy)
    assert repaired.code == 0, repaired.stdout + repaired.stderr
    assert "Vector index rebuilt" in repaired.stdout and "BM25 index rebuilt" in repaired.stdout, repaired.stdout
    [kept] = [path for path in index_copy.iterdir() if path.name.startswith("chroma.damaged-")]
    assert kept.name[len("chroma.damaged-"):][:8].isdigit()  # timestamped, e.g. chroma.damaged-20260101T120000Z
    assert str(kept) in repaired.stdout
    assert (kept / "chroma.sqlite3").read_bytes() == damaged_bytes  # kept as it was, for inspection
    assert _vector_count(index_copy) == len(records)

    clean = run_main("doctor", "--json", data_dir=index_copy)
    assert clean.code == 0, clean.stdout + clean.stderr
    report = clean.json()
    assert report["ok"] and report["records"] == report["vectors"] == len(records), report
    assert report["lexical_current"] and report["damaged"] is None

    answer = run_main("search", "Rosenbrock methods", "--k", "3", "--json", data_dir=index_copy)
    assert answer.code == 0, answer.stderr
    hits = answer.json()["results"]
    assert any("Rosenbrock" in hit["title"] for hit in hits), hits
    assert hits[0]["score"] > 0.6, hits  # cosine and BM25 both count: the new vectors are searched


def test_repair_refuses_to_drop_the_vectors_of_an_empty_record_store(index_copy: Path) -> None:
    vectors = _vector_count(index_copy)
    assert vectors > 50
    for suffix in ("", "-wal", "-shm"):
        path = index_copy / f"records.sqlite3{suffix}"
        if suffix == "":
            path.write_bytes(b"")  # the file was lost: 0 bytes, as after a failed copy or restore
        elif path.exists():
            path.unlink()

    refused = run_main("doctor", "--repair", data_dir=index_copy)

    assert refused.code == 2, refused.stdout + refused.stderr
    [line] = [line for line in refused.stderr.splitlines() if line.startswith("paperbot: ")]
    assert "Refusing to repair" in line and "is empty" in line and f"{vectors} vectors" in line, line
    assert "source of truth" in line and "lost" in line, line  # why
    assert "from a backup" in line and "paperbot ingest" in line and "--force" in line, line  # what to do
    assert _vector_count(index_copy) == vectors  # not one vector deleted

    checked = run_main("doctor", data_dir=index_copy)
    assert checked.code == 3 and "may have been lost" in checked.stdout, checked.stdout

    forced = run_main("doctor", "--repair", "--force", data_dir=index_copy)
    assert forced.code == 0, forced.stdout + forced.stderr
    assert f"{vectors} vectors without a record (fixed)" in forced.stdout, forced.stdout
    assert _vector_count(index_copy) == 0


def test_repair_refuses_when_the_record_store_lost_most_of_the_indexed_papers(index_copy: Path) -> None:
    records = sorted(stored_records(index_copy))
    vectors = _vector_count(index_copy)
    kept = records[: len(records) // 3]  # an older, partial copy of the store
    conn = sqlite3.connect(index_copy / "records.sqlite3")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executemany("DELETE FROM papers WHERE id = ?", [(paper_id,) for paper_id in records[len(kept):]])
    conn.commit()
    conn.close()

    refused = run_main("doctor", "--repair", data_dir=index_copy)

    assert refused.code == 2, refused.stdout + refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert "Refusing to repair" in line and f"only {len(kept)} of the {vectors} vectors" in line, line
    assert "--force" in line
    assert _vector_count(index_copy) == vectors

    forced = run_main("doctor", "--repair", "--force", "--json", data_dir=index_copy)
    assert forced.code == 0, forced.stdout + forced.stderr
    assert _vector_count(index_copy) == len(kept)


def test_force_without_repair_is_refused(index_copy: Path) -> None:
    run = run_main("doctor", "--force", data_dir=index_copy)
    assert run.code == 2 and "--force only applies with --repair" in run.stderr, run.stderr
