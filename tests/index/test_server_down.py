"""A Chroma server that is down: a clear error, nothing half-written, recovery on the next call."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from retrieval.errors import IndexUnavailableError
from retrieval.index.dense import DenseStore, disk_is_full
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper

from .conftest import ChromaServer, free_port, make_settings

pytestmark = pytest.mark.slow

QUERY = "discrete dipole approximation"


def test_no_server_at_the_url(tmp_path, arxiv_papers, counting_encoder):
    url = f"http://127.0.0.1:{free_port()}"
    index = PaperIndex.open(make_settings(tmp_path / "data", url), counting_encoder)
    try:
        assert index.count() == 0  # the record store does not need the server
        with pytest.raises(IndexUnavailableError) as failure:
            index.search(QUERY)
        assert failure.value.user_message == f"Cannot reach the Chroma server at {url}."
        assert "unset PAPERBOT_CHROMA_URL" in str(failure.value)
        with pytest.raises(IndexUnavailableError):
            index.upsert(arxiv_papers[:3])
        assert index.count() == 0  # nothing was recorded as indexed
        with pytest.raises(IndexUnavailableError):
            index.check_consistency()
    finally:
        index.close()


def test_a_restarted_server_is_used_again_without_reopening(tmp_path, arxiv_papers, counting_encoder):
    server = ChromaServer(tmp_path / "server")
    server.start()
    index = PaperIndex.open(make_settings(tmp_path / "data", server.url), counting_encoder)
    try:
        index.upsert(arxiv_papers[:10])
        before = [hit.paper.id for hit in index.search(QUERY, k=3)]
        server.stop()

        with pytest.raises(IndexUnavailableError, match="Cannot reach the Chroma server"):
            index.search(QUERY, k=3)
        extra: Paper = arxiv_papers[10]
        with pytest.raises(IndexUnavailableError):
            index.upsert([extra])
        assert index.count() == 10 and index.get(extra.id) is None
        with pytest.raises(IndexUnavailableError):  # still down: still a clear error, no crash
            index.search(QUERY, k=3)

        server.start()  # same port, same data
        assert [hit.paper.id for hit in index.search(QUERY, k=3)] == before
        assert index.upsert([extra]).added == [extra.id]
        assert index.count() == 11 and index.check_consistency().ok
    finally:
        index.close()
        server.stop()


@pytest.mark.parametrize("error", [sqlite3.OperationalError("database or disk is full"),
                                   sqlite3.OperationalError("disk I/O error"),
                                   OSError(28, "No space left on device")])
def test_a_full_disk_under_the_embedded_index_is_named_as_such(tmp_path, error):
    dense = DenseStore(make_settings(tmp_path / "data"))

    class FullDisk:
        def upsert(self, **_: object) -> None:
            raise error

    dense._collection = FullDisk()  # what Chroma's own writes raise when the disk is full
    with pytest.raises(IndexUnavailableError) as failure:
        dense.upsert(["a"], np.zeros((1, 4), dtype=np.float32), [{"title": "t"}])
    assert "the disk is full" in failure.value.user_message
    assert "Free some disk space" in str(failure.value)


def test_other_storage_errors_keep_their_own_words(tmp_path):
    assert not disk_is_full("attempt to write a readonly database")
    assert disk_is_full("OSError: [Errno 27] File too large")


def test_a_closed_dense_store_reconnects_on_the_next_call(tmp_path):
    dense = DenseStore(make_settings(tmp_path / "data"))
    dense.upsert(["a"], np.eye(1, 4, dtype=np.float32), [{"title": "t"}])
    dense.close()
    dense.close()  # idempotent
    assert dense.count() == 1  # reopened from disk
    dense.close()
