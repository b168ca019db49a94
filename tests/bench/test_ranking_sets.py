"""The ranking benchmark's arithmetic (``bench/ranking_sets.py``): first gold rank and R@k."""

import pytest

from bench.ranking_sets import CUTS, first_gold_rank, recall_table


def test_the_first_gold_record_is_ranked_from_one() -> None:
    assert first_gold_rank(["a", "b", "c"], {"c", "b"}) == 2
    assert first_gold_rank(["a", "b"], {"z"}) is None
    assert first_gold_rank([], {"a"}) is None


def test_recall_counts_questions_with_some_gold_record_within_each_cut() -> None:
    table = recall_table([1, 3, 9, None])
    assert list(table) == [f"R@{k}" for k in CUTS]
    assert table["R@1"] == 0.25 and table["R@3"] == 0.5 and table["R@8"] == 0.5
    assert table["R@20"] == pytest.approx(0.75) and table["R@50"] == pytest.approx(0.75)
    assert recall_table([]) == {}
