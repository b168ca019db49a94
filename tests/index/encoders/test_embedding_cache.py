"""The embedding cache: hits skip the encoder, misses are encoded once, nothing is lost."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from retrieval.errors import StorageError
from retrieval.index.embedding_cache import EmbeddingCache, encode_with_cache, paper_embedder
from retrieval.records.paper import Paper


class CountingEncoder:
    """Deterministic fake: a vector derived from the text's hash; counts every text it encodes."""

    dimension = 8

    def __init__(self, name: str = "fake/v1", fail_on_call: int | None = None) -> None:
        self.name = name
        self.calls: list[list[str]] = []
        self._fail_on_call = fail_on_call

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self._fail_on_call is not None and len(self.calls) == self._fail_on_call:
            raise RuntimeError("encoder crashed")
        return np.stack([vector_of(text, self.dimension) for text in texts]) if texts else np.zeros((0, self.dimension), np.float32)

    @property
    def encoded(self) -> int:
        return sum(len(call) for call in self.calls)


def vector_of(text: str, dimension: int = 8) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    vector = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return vector / np.linalg.norm(vector)


def pairs(texts: Sequence[str]) -> list[tuple[str, str]]:
    return [(text, hashlib.sha256(text.encode()).hexdigest()) for text in texts]


TEXTS = [f"abstract number {n} about topic {n % 3}" for n in range(7)]


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[EmbeddingCache]:
    with EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite3") as opened:
        yield opened


def test_first_call_encodes_then_hits_skip_the_encoder(cache):
    encoder = CountingEncoder()
    first = encode_with_cache(encoder, pairs(TEXTS), cache)
    assert encoder.encoded == len(TEXTS)
    np.testing.assert_array_equal(first, np.stack([vector_of(t) for t in TEXTS]))
    again = encode_with_cache(encoder, pairs(TEXTS[::-1]), cache)
    assert encoder.encoded == len(TEXTS)  # no new call
    np.testing.assert_array_equal(again, first[::-1])


def test_only_misses_are_encoded_and_duplicates_once(cache):
    encoder = CountingEncoder()
    encode_with_cache(encoder, pairs(TEXTS[:3]), cache)
    mixed = pairs([TEXTS[5], TEXTS[0], TEXTS[5], TEXTS[4], TEXTS[1]])
    vectors = encode_with_cache(encoder, mixed, cache)
    assert encoder.calls[-1] == [TEXTS[5], TEXTS[4]]
    np.testing.assert_array_equal(vectors, np.stack([vector_of(text) for text, _ in mixed]))


def test_vectors_are_kept_apart_per_encoder_name(cache):
    first, second = CountingEncoder("model/torch"), CountingEncoder("model/onnx-int8")
    encode_with_cache(first, pairs(TEXTS), cache)
    encode_with_cache(second, pairs(TEXTS), cache)
    assert second.encoded == len(TEXTS)
    assert cache.encoders() == {"model/torch": len(TEXTS), "model/onnx-int8": len(TEXTS)}
    assert cache.drop_encoder("model/torch") == len(TEXTS)
    assert cache.count() == len(TEXTS)


def test_progress_counts_hits_then_chunks(cache):
    encoder = CountingEncoder()
    encode_with_cache(encoder, pairs(TEXTS[:2]), cache)
    seen: list[tuple[int, int]] = []
    encode_with_cache(encoder, pairs(TEXTS), cache, progress=lambda done, total: seen.append((done, total)), chunk_size=2)
    assert seen == [(2, 7), (4, 7), (6, 7), (7, 7)]
    assert [len(call) for call in encoder.calls[1:]] == [2, 2, 1]


def test_vectors_survive_reopening(tmp_path):
    path = tmp_path / "embeddings.sqlite3"
    with EmbeddingCache(path) as cache:
        encode_with_cache(CountingEncoder(), pairs(TEXTS), cache)
    encoder = CountingEncoder()
    with EmbeddingCache(path) as cache:
        vectors = encode_with_cache(encoder, pairs(TEXTS), cache)
    assert encoder.encoded == 0
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 8)


def test_an_interrupted_run_keeps_the_chunks_it_finished(cache):
    crashing = CountingEncoder(fail_on_call=2)
    with pytest.raises(RuntimeError, match="encoder crashed"):
        encode_with_cache(crashing, pairs(TEXTS), cache, chunk_size=3)
    assert cache.count("fake/v1") == 3
    retry = CountingEncoder()
    encode_with_cache(retry, pairs(TEXTS), cache, chunk_size=3)
    assert retry.encoded == len(TEXTS) - 3


def test_a_vector_of_another_length_counts_as_a_miss(cache):
    text_hash = pairs(TEXTS[:1])[0][1]
    cache.put_many("fake/v1", {text_hash: np.ones(4, dtype=np.float32)})
    encoder = CountingEncoder()
    vectors = encode_with_cache(encoder, pairs(TEXTS[:1]), cache)
    assert encoder.encoded == 1
    np.testing.assert_array_equal(vectors[0], vector_of(TEXTS[0]))


def test_an_encoder_returning_the_wrong_shape_is_refused(cache):
    class Broken(CountingEncoder):
        def encode(self, texts):
            return np.zeros((len(texts), 3), dtype=np.float32)

    with pytest.raises(ValueError, match="shape"):
        encode_with_cache(Broken(), pairs(TEXTS), cache)
    assert cache.count() == 0


def test_empty_input(cache):
    seen = []
    vectors = encode_with_cache(CountingEncoder(), [], cache, progress=lambda d, t: seen.append((d, t)))
    assert vectors.shape == (0, 8) and seen == [(0, 0)]


def test_a_corrupt_file_is_moved_aside_and_replaced(tmp_path, caplog):
    path = tmp_path / "embeddings.sqlite3"
    path.write_bytes(b"this is not a database, just garbage bytes" * 100)
    with caplog.at_level(logging.WARNING, logger="retrieval.index.embedding_cache"):
        with EmbeddingCache(path) as cache:
            encode_with_cache(CountingEncoder(), pairs(TEXTS), cache)
            assert cache.count() == len(TEXTS)
    aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a database")
    assert "moved it to" in caplog.text
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == len(TEXTS)


def test_an_unusable_path_is_a_storage_error(tmp_path):
    with pytest.raises(StorageError) as caught:
        EmbeddingCache(tmp_path)  # a directory, not a file
    assert "PAPERBOT_DATA_DIR" in str(caught.value)


def test_paper_embedder_uses_the_records_text_and_hash(cache):
    papers = [Paper(title=f"Title {n}", abstract=f"Abstract {n}.") for n in range(3)]
    encoder = CountingEncoder()
    embed = paper_embedder(cache)
    vectors = embed(encoder, papers)
    assert encoder.calls == [[p.embedding_text for p in papers]]
    np.testing.assert_array_equal(vectors, np.stack([vector_of(p.embedding_text) for p in papers]))
    embed(encoder, papers)
    assert len(encoder.calls) == 1
    assert cache.get_many(encoder.name, [papers[0].embedding_hash], 8).keys() == {papers[0].embedding_hash}


def test_held_names_the_hashes_with_a_vector_of_that_encoder_and_length(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite3")
    hashes = [f"h{n}" for n in range(1200)]  # more than one chunk of SQL variables
    cache.put_many("fake/v1", {h: vector_of(h) for h in hashes[:1100]})
    cache.put_many("fake/v1", {"short": np.zeros(4, np.float32)})  # a vector of another length
    cache.put_many("fake/v2", {"h1150": vector_of("h1150")})  # another encoder's
    assert cache.held("fake/v1", [*hashes, "short", "h3"], 8) == set(hashes[:1100])
    assert cache.held("fake/v1", ["short"], 4) == {"short"}
    assert cache.held("fake/v2", hashes, 8) == {"h1150"}
    assert set(cache.get_many("fake/v1", [*hashes, "short"], 8)) == set(hashes[:1100])


def test_the_paper_embedder_says_which_papers_it_would_encode(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite3")
    papers = [Paper(title=text) for text in TEXTS]
    embed = paper_embedder(cache)
    encoder = CountingEncoder()
    embed(encoder, papers[:3])
    assert embed.uncached(encoder, papers) == papers[3:]
    assert embed.uncached(CountingEncoder("fake/other"), papers) == papers


def test_three_caches_opening_a_new_file_at_once_all_get_through(tmp_path: Path) -> None:
    """Three replicas of one data dir opening its new cache file together: their switches to WAL
    escalate locks at once, and SQLite answered one of them "database is locked" at once (no busy
    wait) in about 1 of 11 trials before the switch was retried. 40 trials here."""
    errors: list[BaseException] = []
    for attempt in range(40):
        path = tmp_path / f"data-{attempt}" / "cache" / "embeddings.sqlite3"
        start = threading.Barrier(3)

        def open_and_write(n: int, path: Path = path, start: threading.Barrier = start) -> None:
            start.wait(10)
            try:
                with EmbeddingCache(path) as cache:
                    cache.put_many("fake/v1", {f"hash-{n}": vector_of(str(n))})
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=open_and_write, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if not errors:
            with EmbeddingCache(path) as cache:
                assert cache.count("fake/v1") == 3
    assert errors == []
