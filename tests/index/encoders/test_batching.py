"""How ``OnnxEncoder`` cuts a window of texts into runs: longest first, within the caps.

No model is loaded: ``_batches`` only looks at token counts.
"""

from __future__ import annotations

import numpy as np

from retrieval.index.encoders.onnx_runtime import OnnxEncoder


def batcher(batch_size: int = 1, token_budget: int | None = None, sort: bool = True) -> OnnxEncoder:
    encoder = object.__new__(OnnxEncoder)
    encoder._batch_size, encoder._token_budget, encoder._sort = batch_size, token_budget, sort
    return encoder


def runs(encoder: OnnxEncoder, lengths: list[int]) -> list[list[int]]:
    return [list(map(int, batch)) for batch in encoder._batches(np.asarray(lengths))]


def test_one_text_per_run_longest_first():
    assert runs(batcher(), [5, 40, 12]) == [[1], [2], [0]]
    assert runs(batcher(sort=False), [5, 40, 12]) == [[0], [1], [2]]


def test_the_token_budget_lets_short_texts_share_a_run_and_long_ones_go_alone():
    lengths = [256, 250, 30, 28, 25, 24, 20, 12]
    assert runs(batcher(batch_size=16, token_budget=256), lengths) == [[0], [1], [2, 3, 4, 5, 6, 7]]
    assert runs(batcher(batch_size=4, token_budget=256), lengths) == [[0], [1], [2, 3, 4, 5], [6, 7]]
    assert runs(batcher(batch_size=16, token_budget=100), lengths) == [[0], [1], [2, 3, 4], [5, 6, 7]]


def test_every_text_is_in_exactly_one_run():
    lengths = list(np.random.default_rng(3).integers(1, 257, size=300))
    for encoder in (batcher(), batcher(8), batcher(32, 512)):
        flat = sorted(i for batch in runs(encoder, lengths) for i in batch)
        assert flat == list(range(300))
