"""An ingest whose texts a child process encodes ahead stores exactly what an ingest without it stores.

Real parts: the session's int8 export, a ``worker_process`` child, embedded Chroma, the record
store and the embedding cache, over 50 real arXiv records (``tests/index/conftest.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from retrieval.index import writes
from retrieval.index.embedding_cache import EmbeddingCache, paper_embedder
from retrieval.index.encoders import encode_ahead, loading, worker_process
from retrieval.index.encoders.onnx_runtime import OnnxEncoder
from retrieval.index.paper_index import PaperIndex
from retrieval.ingest.pipeline import ingest_papers
from retrieval.records.paper import Paper
from tests.index.conftest import make_settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def int8(model_cache: Path) -> OnnxEncoder:
    return loading.onnx_encoder(model_cache, "onnx-int8")


@pytest.fixture()
def children(monkeypatch: pytest.MonkeyPatch) -> list[encode_ahead.AheadEncoder]:
    """Every ``AheadEncoder`` the writer makes, kept for the test to look at."""
    made: list[encode_ahead.AheadEncoder] = []
    real = writes.ahead_of

    @contextmanager
    def spied(*args, **kwargs) -> Iterator:
        with real(*args, **kwargs) as encoder:
            if isinstance(encoder, encode_ahead.AheadEncoder):
                made.append(encoder)
                # deterministic counts below: texts asked for before the child is ready are encoded here
                assert encoder.process.wait_ready(60), encoder.process.failure
            yield encoder

    monkeypatch.setattr(writes, "ahead_of", spied)
    return made


def _ingest(folder: Path, encoder: OnnxEncoder, papers: list[Paper]) -> tuple[dict[str, np.ndarray], list[str]]:
    cache = EmbeddingCache(folder / "cache" / "embeddings.sqlite3")
    index = PaperIndex.open(make_settings(folder / "data"), encoder, embed=paper_embedder(cache))
    try:
        ingest_papers(index, papers, batch_size=16)
        ids = sorted(paper.id for paper in index.iter_papers())
        records = index.get_many(ids)
        return index.dense.vectors(ids), [records[paper_id].model_dump_json() for paper_id in ids]
    finally:
        index.close()
        cache.close()


def test_an_ingest_encoded_ahead_stores_what_one_without_stores(tmp_path, int8, arxiv_papers, children, monkeypatch):
    plain_vectors, plain_records = _ingest(tmp_path / "plain", int8, arxiv_papers)
    assert children == []  # 50 texts: too few for a child

    monkeypatch.setattr(writes, "AHEAD_RULE", writes.AheadRule(started_in_advance=len(arxiv_papers)))
    worker_process.start_encoding_process()  # as `paperbot ingest` does first thing
    ahead_vectors, ahead_records = _ingest(tmp_path / "ahead", int8, arxiv_papers)
    assert len(children) == 1 and children[0].from_process == len(plain_vectors) and children[0].in_process == 0
    assert encode_ahead.take_spare() is None  # taken and closed
    assert ahead_records == plain_records
    assert ahead_vectors.keys() == plain_vectors.keys()
    assert all(np.array_equal(ahead_vectors[key], plain_vectors[key]) for key in plain_vectors)


def test_nothing_to_encode_takes_no_child(tmp_path, int8, arxiv_papers, children):
    _ingest(tmp_path / "data", int8, arxiv_papers)
    worker_process.start_encoding_process()
    _ingest(tmp_path / "data", int8, arxiv_papers)  # every record unchanged
    assert children == []
    assert encode_ahead.take_spare() is None  # the spare was closed unused


def test_only_texts_the_cache_lacks_are_announced(tmp_path, int8, arxiv_papers):
    cache = EmbeddingCache(tmp_path / "cache.sqlite3")
    index = PaperIndex.open(make_settings(tmp_path / "data"), int8, embed=paper_embedder(cache))
    try:
        ingest_papers(index, arxiv_papers[:20])
        edited = arxiv_papers[5].model_copy(update={"abstract": "A new abstract for this record."})
        wanted = index.writer.texts_to_encode([*arxiv_papers[:20], edited, *arxiv_papers[20:30]])
        # new or changed text only: the edited record and the ten new ones, in order
        assert wanted == [edited.embedding_text, *(paper.embedding_text for paper in arxiv_papers[20:30])]
    finally:
        index.close()
        cache.close()


def test_a_large_enough_ingest_starts_its_own_child(tmp_path, int8, arxiv_papers, children):
    cache = EmbeddingCache(tmp_path / "cache.sqlite3")
    index = PaperIndex.open(make_settings(tmp_path / "data"), int8, embed=paper_embedder(cache))
    try:
        rule = writes.AheadRule(started_in_advance=1, started_here=40)
        with index.writer.encoding_ahead(arxiv_papers, rule):
            index.upsert(arxiv_papers)
        assert len(children) == 1 and children[0].from_process == len(arxiv_papers)
        edited = [paper.model_copy(update={"abstract": f"{paper.abstract} (revised)"}) for paper in arxiv_papers[:10]]
        with index.writer.encoding_ahead([*edited, *arxiv_papers[10:]], rule):
            pass  # 50 records but ten texts to encode: under the bar, no child
        assert len(children) == 1
    finally:
        index.close()
        cache.close()


def test_other_threads_keep_the_encoder_itself(tmp_path, int8, arxiv_papers):
    cache = EmbeddingCache(tmp_path / "cache.sqlite3")
    index = PaperIndex.open(make_settings(tmp_path / "data"), int8, embed=paper_embedder(cache))
    seen: list[object] = []

    class Recording:
        name, dimension = int8.name, int8.dimension

        def encode(self, texts):
            seen.append(threading.current_thread().name)
            return int8.encode(texts)

    try:
        with index.encoders.embedding_through(Recording()):
            index.encoders.embed(arxiv_papers[:2])
            other = threading.Thread(target=index.encoders.embed, args=(arxiv_papers[2:4],), name="other")
            other.start()
            other.join()
        index.encoders.embed(arxiv_papers[4:6])
        assert seen == [threading.main_thread().name]
        with pytest.raises(ValueError, match="not the current encoder"):
            with index.encoders.embedding_through(type("Other", (), {"name": "x", "dimension": 384})()):
                pass
    finally:
        index.close()
        cache.close()


def test_switched_off_no_child_is_used_or_started(tmp_path, int8, arxiv_papers, children):
    cache = EmbeddingCache(tmp_path / "cache.sqlite3")
    index = PaperIndex.open(make_settings(tmp_path / "data", encode_ahead=False), int8, embed=paper_embedder(cache))
    try:
        worker_process.start_encoding_process()
        with index.writer.encoding_ahead(arxiv_papers, writes.AheadRule(started_in_advance=1, started_here=1)):
            index.upsert(arxiv_papers)
        assert children == []
        assert worker_process.take_started_process() is None  # the one started in advance was closed
        assert index.count() == len(arxiv_papers)
    finally:
        index.close()
        cache.close()
