"""Average-linkage clustering: the fast bookkeeping gives the groups of the definition."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.scholars.linkage import TIE_TOLERANCE, average_linkage, naive_average_linkage


def _cosines(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    return unit @ unit.T


def _random_case(rng: np.random.Generator, kind: str) -> tuple[np.ndarray, float]:
    n = int(rng.integers(2, 45))
    vectors = rng.normal(size=(n, int(rng.integers(2, 10))))
    if kind == "duplicates":  # identical papers: exact ties between pairs
        vectors[rng.integers(0, n, size=n // 2)] = vectors[0]
    elif kind == "coarse":  # few distinct directions: many tied averages
        vectors = np.round(vectors)
    return _cosines(vectors), float(rng.uniform(-0.3, 0.8))


@pytest.mark.parametrize("kind", ["plain", "duplicates", "coarse"])
def test_the_same_groups_in_the_same_order_as_the_definition(kind: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        similarity, threshold = _random_case(rng, kind)
        assert average_linkage(similarity, threshold) == naive_average_linkage(similarity, threshold)


def test_the_rule_on_a_small_matrix() -> None:
    similarity = np.array(  # binary fractions: every average below is exact
        [
            [1.0, 0.125, 0.75, 0.0],
            [0.125, 1.0, 0.25, 0.625],
            [0.75, 0.25, 1.0, 0.125],
            [0.0, 0.625, 0.125, 1.0],
        ]
    )
    # (0, 2) merge at 0.75, (1, 3) at 0.625; then {0, 2} and {1, 3} average 0.125: below 0.5, stop
    assert average_linkage(similarity, 0.5) == [[0, 2], [1, 3]]
    # at threshold 0.125 the last pair merges too ("at least"), the later group appended
    assert average_linkage(similarity, 0.125) == [[0, 2, 1, 3]]
    assert average_linkage(similarity, 0.8) == [[0], [1], [2], [3]]


def test_averages_within_the_tolerance_are_a_tie_won_by_the_first_pair() -> None:
    similarity = np.eye(3)
    similarity[0, 2] = similarity[2, 0] = 0.6 + TIE_TOLERANCE / 4  # a rounding error above (0, 1)
    similarity[0, 1] = similarity[1, 0] = 0.6
    assert average_linkage(similarity, 0.5)[0][:2] == [0, 1]
    assert naive_average_linkage(similarity, 0.5)[0][:2] == [0, 1]


def test_no_items_and_one_item() -> None:
    assert average_linkage(np.zeros((0, 0)), 0.5) == []
    assert average_linkage(np.ones((1, 1)), 0.5) == [[0]]


def test_many_items_in_separate_directions_form_one_group_per_direction() -> None:
    rng = np.random.default_rng(3)
    directions = np.eye(8)[:6]
    owner = np.arange(600) % 6
    vectors = directions[owner] + rng.normal(scale=0.05, size=(600, 8))
    groups = average_linkage(_cosines(vectors), 0.5)
    assert len(groups) == 6
    assert sorted(sorted(group) for group in groups) == [list(np.flatnonzero(owner == k)) for k in range(6)]
