"""``DenseStore.nearest_many``, the batched nearest-neighbour search the expert ranking's hubness
discount reads (``retrieval.scholars.hubness``): on the embedded store and on a real Chroma server."""

from __future__ import annotations

import numpy as np

from retrieval.config import Settings
from retrieval.index.dense import DenseStore

DIMENSION = 32


def _vectors(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, DIMENSION)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_each_row_gets_its_nearest_stored_records_nearest_first(index_settings: Settings) -> None:
    store = DenseStore(index_settings)
    try:
        assert store.nearest_many(_vectors(2, 1), 5) == [[], []]  # nothing stored yet
        stored = _vectors(40, 2)
        ids = [f"paper-{n:02d}" for n in range(len(stored))]
        store.upsert(ids, stored, [{"embedding_hash": i} for i in ids])
        asked = np.vstack([stored[3], _vectors(1, 3)[0]])
        found = store.nearest_many(asked, 6)
        exact = asked @ stored.T
        for row, near in zip(exact, found, strict=True):
            expected = [ids[k] for k in np.argsort(-row, kind="stable")[:6]]
            assert [i for i, _ in near] == expected  # 40 vectors: the approximate search is exact here
            assert [c for _, c in near] == sorted((c for _, c in near), reverse=True)
            assert np.allclose([c for _, c in near], np.sort(row)[::-1][:6], atol=1e-4)
        assert found[0][0] == ("paper-03", found[0][0][1]) and found[0][0][1] > 0.999  # a stored vector finds itself
        assert len(store.nearest_many(asked[:1], 100)[0]) == 40  # never more than are stored
        assert store.nearest_many(np.zeros((0, DIMENSION), dtype=np.float32), 3) == []
    finally:
        store.close()
