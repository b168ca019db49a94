"""The index of a read-only data dir: searched and checked as it is, written never.

The index is built writable, then reopened with the detection (``config.unwritable_reason``)
saying its data dir is read-only: Chroma is read from a temporary copy (chromadb 1.5.9 cannot
open a read-only directory), BM25 is built in memory, the embedding cache lives in memory, and
every write raises ``DataDirReadOnlyError``. A real read-only mount, through the CLI:
``tests/reliability/test_read_only_data_dir.py``. Real Chroma, hash-seeded vectors, no model.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import retrieval.index.dense as dense_module
from retrieval.config import Settings
from retrieval.errors import DataDirReadOnlyError
from retrieval.index.catch_up import MigrationCatchUp
from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path
from retrieval.index.maintenance import ConsistencyReport
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper
from retrieval.storage.records import DERIVED_REFRESH_KEY, RecordStore
from tests.support.read_only import tree_state

from .conftest import HashEncoder, by_arxiv, make_settings

REASON = "a read-only file system"
DETECTORS = ("retrieval.storage.sqlite", "retrieval.index.dense", "retrieval.index.lexical",
             "retrieval.index.maintenance")


@pytest.fixture
def built(tmp_path: Path, arxiv_papers: list[Paper]) -> Settings:
    """A data dir holding 20 records with their vectors, and no saved BM25 index."""
    settings = make_settings(tmp_path / "data")
    index = PaperIndex.open(settings, HashEncoder())
    index.upsert(arxiv_papers[:20])
    index.close()
    shutil.rmtree(settings.lexical_dir, ignore_errors=True)
    return settings


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own temporary directory (where the vector index's copy goes)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch, temporary: Path) -> Iterator[str]:
    """From here on every part of the index sees its data dir as read-only."""
    for module in DETECTORS:
        monkeypatch.setattr(f"{module}.unwritable_reason", lambda path: REASON)
    yield REASON


def test_a_read_only_index_is_searched_and_checked_as_it_is(built: Settings, read_only: str, temporary: Path,
                                                            arxiv_papers: list[Paper]) -> None:
    before = tree_state(built.chroma_dir)
    index = PaperIndex.open(built, HashEncoder())
    wanted = by_arxiv(arxiv_papers, "0704.0016")
    hits = index.search(wanted.title, 3)
    assert hits and hits[0].paper.id == wanted.id  # BM25, built in memory, and the copy's vectors
    report = index.check_consistency()
    assert report.ok and report.records == report.vectors == 20 and report.read_only == REASON
    with pytest.raises(DataDirReadOnlyError) as failure:
        index.upsert(arxiv_papers[20:22])
    assert f"the data dir {built.data_dir} is read-only ({REASON})" in str(failure.value)
    assert "doctor" not in str(failure.value)
    assert [item.name for item in temporary.iterdir()] != []  # the vector index was read from a copy
    index.close()
    assert list(temporary.iterdir()) == []  # and the copy is gone with it
    assert tree_state(built.chroma_dir) == before
    assert not built.lexical_dir.exists()
    assert RecordStore(built.records_path).count() == 20


def test_the_copy_of_read_only_files_can_be_opened(built: Settings, read_only: str, temporary: Path) -> None:
    for path in (built.chroma_dir, *built.chroma_dir.rglob("*")):
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
    try:
        index = PaperIndex.open(built, HashEncoder())
        assert index.dense.count() == 20
        copies = [path for folder in temporary.iterdir() for path in (folder, *folder.rglob("*"))]
        assert copies and all(path.stat().st_mode & 0o200 for path in copies)  # Chroma writes to its copy
        index.close()
    finally:
        for path in (built.chroma_dir, *built.chroma_dir.rglob("*")):
            os.chmod(path, 0o700 if path.is_dir() else 0o600)


def test_a_vector_index_that_cannot_be_copied_says_why_and_what_to_do(built: Settings, read_only: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dense_module, "MAX_SNAPSHOT_BYTES", 1024)
    index = PaperIndex.open(built, HashEncoder())
    with pytest.raises(DataDirReadOnlyError) as failure:
        index.dense.count()
    message = str(failure.value)
    assert message.startswith(f"Cannot open the vector index in {built.chroma_dir}: chromadb writes to its directory")
    assert "more than the 0 MB paperbot copies" in message and f"is read-only ({REASON})" in message
    assert "PAPERBOT_DATA_DIR at a writable copy" in message and "doctor" not in message
    shutil.rmtree(built.chroma_dir)
    with pytest.raises(DataDirReadOnlyError, match=f"^Cannot create the vector index in {built.chroma_dir}: "):
        index.dense.count()
    index.close()


def test_the_embedding_cache_of_a_read_only_dir_lives_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                read_only: str) -> None:
    path = default_cache_path(tmp_path / "data" / "cache")
    cache = EmbeddingCache(path)
    vector = HashEncoder().encode(["a text"])[0]
    cache.put_many("test/hash", {"h1": vector})
    assert cache.get_many("test/hash", ["h1"], len(vector))["h1"].tolist() == vector.tolist()
    cache.close()
    assert not (tmp_path / "data").exists()


def test_a_pending_catch_up_is_left_for_a_writable_open(built: Settings, monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    RecordStore(built.records_path).set_meta(DERIVED_REFRESH_KEY, "pending")
    monkeypatch.setattr("retrieval.storage.sqlite.unwritable_reason", lambda path: REASON)
    store = RecordStore(built.records_path)
    catch_up = MigrationCatchUp(store, dense=None, lexical=None, embed_missing=None)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="retrieval.index.catch_up"):
        catch_up.run()
    assert "has not caught up with the record store's last migration" in caplog.text and REASON in caplog.text
    assert store.derived_refresh_pending()


@pytest.mark.parametrize(("missing", "expected"), [
    (0, "Index consistent: 20 records, 20 vectors; the data dir is read-only (a read-only file system), "
        "checked as it is."),
    (2, "2 records without a vector (found); the data dir is read-only (a read-only file system), checked as it "
        "is: `--repair` needs a writable copy of it (point PAPERBOT_DATA_DIR at the copy)."),
])
def test_doctor_says_the_data_dir_is_read_only_and_where_a_repair_can_run(missing: int, expected: str) -> None:
    report = ConsistencyReport(records=20, vectors=20 - missing, missing_vectors=[f"id{n}" for n in range(missing)],
                               read_only=REASON)
    assert report.describe() == expected
