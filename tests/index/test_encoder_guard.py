"""Vectors of two encoders never mix: the index records its encoder and refuses another one.

Every test runs against embedded Chroma and a real ``chroma run`` server (``index_settings``).
``HashEncoder`` stands in for the encoders: only the name matters here, not the similarity.
"""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.errors import ConfigError
from retrieval.index import maintenance
from retrieval.index.dense import record_metadata
from retrieval.index.maintenance import ENCODER_META_KEY, LEGACY_ENCODER_NAME, ConsistencyReport
from retrieval.index.paper_index import PaperIndex

from .conftest import HashEncoder


def _open(settings, encoder: HashEncoder, **options) -> PaperIndex:
    return PaperIndex.open(settings, encoder, **options)


def test_the_first_upsert_records_the_encoder(index_settings, arxiv_papers):
    index = _open(index_settings, HashEncoder("model-a"))
    try:
        assert index.indexed_encoder() is None
        index.search("anything", k=1)  # an empty index accepts any encoder
        index.upsert(arxiv_papers[:5])
        assert index.store.get_meta(ENCODER_META_KEY) == "model-a" == index.indexed_encoder()
        assert index.check_consistency().ok
    finally:
        index.close()


def test_another_encoder_is_refused_until_repair_re_embeds_everything(index_settings, arxiv_papers):
    built = _open(index_settings, HashEncoder("model-a"))
    built.upsert(arxiv_papers[:5])
    built.close()

    other = HashEncoder("model-b")
    index = _open(index_settings, other)
    try:
        for search in (index.search, index.dense_search):
            with pytest.raises(ConfigError) as refused:
                search("diphoton production", k=3)
        message = str(refused.value)
        assert "'model-a'" in message and "'model-b'" in message and "paperbot doctor --repair" in message
        assert "re-embed all 5 records" in message
        with pytest.raises(ConfigError):
            index.upsert(arxiv_papers[5:8])
        assert index.count() == 5 and index.dense.count() == 5 and other.texts == []  # nothing written or embedded
        # what needs no vector still works: BM25, unchanged and metadata-only upserts
        assert index.lexical_search("diphoton", k=1)
        retitled_venue = arxiv_papers[0].model_copy(update={"venue": "Phys. Rev. D"})
        report = index.upsert([retitled_venue, *arxiv_papers[1:5]])
        assert report.updated == [retitled_venue.id] and report.embedded == 0

        check = index.check_consistency()
        assert not check.ok and check.encoder_changed
        assert (check.indexed_encoder, check.current_encoder) == ("model-a", "model-b")
        assert "doctor --repair" in check.describe()

        progress: list[tuple[int, int]] = []
        repaired = index.repair(progress=lambda done, total: progress.append((done, total)))
        assert repaired.repaired and "re-embedded with the encoder 'model-b'" in repaired.describe()
        assert progress[0] == (0, 5) and progress[-1] == (5, 5)
        assert sorted(other.texts) == sorted(p.embedding_text for p in arxiv_papers[:5])
        assert index.indexed_encoder() == "model-b" and index.check_consistency().ok
        stored = index.dense.vectors([p.id for p in arxiv_papers[:5]])
        expected = HashEncoder("model-b").encode([p.embedding_text for p in arxiv_papers[:5]])
        assert np.allclose(np.stack([stored[p.id] for p in arxiv_papers[:5]]), expected, atol=1e-6)
        assert index.search("diphoton production", k=3)
        assert index.upsert(arxiv_papers[5:8]).embedded == 3
    finally:
        index.close()


def test_an_interrupted_re_embedding_is_neither_searched_nor_taken_for_done(index_settings, arxiv_papers, monkeypatch):
    built = _open(index_settings, HashEncoder("model-a"))
    built.upsert(arxiv_papers[:6])
    built.close()

    calls: list[int] = []

    def failing_embed(encoder, papers):
        calls.append(len(papers))
        if len(calls) == 2:
            raise RuntimeError("killed half-way")
        return encoder.encode([p.embedding_text for p in papers])

    monkeypatch.setattr(maintenance, "ENCODE_BATCH", 2)
    index = _open(index_settings, HashEncoder("model-b"), embed=failing_embed)
    try:
        with pytest.raises(RuntimeError):
            index.repair()
        assert index.indexed_encoder() == "unfinished re-embedding from model-a to model-b"
        calls.clear()
        with pytest.raises(RuntimeError):  # interrupted again: the marker still names the origin
            index.repair()
        assert index.indexed_encoder() == "unfinished re-embedding from model-a to model-b"
    finally:
        index.close()
    # two of six vectors are model-b's now: neither encoder may search the mixture
    for name in ("model-a", "model-b"):
        reopened = _open(index_settings, HashEncoder(name))
        try:
            with pytest.raises(ConfigError, match="middle of an unfinished re-embedding") as refused:
                reopened.search("diphoton", k=1)
            assert "paperbot doctor --repair" in str(refused.value)
        finally:
            reopened.close()
    finishing = _open(index_settings, HashEncoder("model-b"))
    try:
        found = finishing.check_consistency()
        assert not found.ok and found.describe().startswith(
            "an unfinished re-embedding from model-a to model-b, not by the current encoder 'model-b'")
        assert finishing.repair().encoder_changed
        assert finishing.indexed_encoder() == "model-b" and finishing.check_consistency().ok
        assert finishing.search("diphoton", k=1)
    finally:
        finishing.close()


def _legacy_index(settings, papers) -> None:
    """An index as written before encoder names were recorded: records and vectors, no name."""
    index = _open(settings, HashEncoder(LEGACY_ENCODER_NAME))
    try:
        vectors = index.encoder.encode([p.embedding_text for p in papers])
        index.dense.upsert([p.id for p in papers], vectors, [record_metadata(p) for p in papers])
        index.store.put_many(papers)
        assert index.store.get_meta(ENCODER_META_KEY) is None
    finally:
        index.close()


def test_an_index_without_a_recorded_name_was_made_by_the_torch_encoder(index_settings, arxiv_papers):
    _legacy_index(index_settings, arxiv_papers[:4])
    index = _open(index_settings, HashEncoder("all-MiniLM-L6-v2/onnx-int8-pc"))
    try:
        assert index.indexed_encoder() == LEGACY_ENCODER_NAME
        with pytest.raises(ConfigError) as refused:
            index.search("diphoton", k=1)
        assert "PAPERBOT_ENCODER=torch" in str(refused.value) and "doctor --repair" in str(refused.value)
    finally:
        index.close()
    same = _open(index_settings, HashEncoder(LEGACY_ENCODER_NAME))
    try:
        assert same.search("diphoton", k=1)
        same.upsert(arxiv_papers[4:6])  # the first embedding upsert writes the name down
        assert same.store.get_meta(ENCODER_META_KEY) == LEGACY_ENCODER_NAME
    finally:
        same.close()


def test_consistency_report_wording():
    found = ConsistencyReport(records=3, vectors=3, indexed_encoder="a", current_encoder="b")
    assert not found.ok and found.encoder_changed
    assert found.describe() == ("the vectors were made by 'a', not by the current encoder 'b' "
                                "(run `paperbot doctor --repair` to re-embed all 3 records).")
    same = ConsistencyReport(records=3, vectors=3, indexed_encoder="a", current_encoder="a")
    assert same.ok and not same.encoder_changed
    assert ConsistencyReport(records=0, vectors=0, indexed_encoder=None, current_encoder="b").ok
