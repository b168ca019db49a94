"""The judgement fit's arithmetic (``bench/fit_judgement.py``): group weights, dropped signals, the
separability report and the occlusion probe signal."""

import random
from collections.abc import Sequence

import numpy as np
import pytest

from bench.fit_judgement import (
    HELD_OUT,
    TUNE,
    Row,
    auc,
    fit,
    group_weights,
    held_back_scores,
    occlusion_gain,
    separability,
)
from retrieval.answers.judgement import SIGNAL_NAMES
from retrieval.records.paper import Paper
from retrieval.results import SearchHit


def _rows(count: int, set_name: str, seed: int) -> list[Row]:
    """``count`` rows whose label follows the first signal, with noise in the others."""
    rng = random.Random(seed)
    rows = []
    for n in range(count):
        label = n % 2
        values = tuple([label + rng.gauss(0, 0.5)] + [rng.gauss(0, 1) for _ in SIGNAL_NAMES[1:]])
        rows.append(Row(set_name, f"{set_name}{n}", TUNE, label, True, values))
    return rows


def test_each_set_and_label_group_weighs_the_same_and_all_weigh_as_many_as_the_rows() -> None:
    rows = _rows(200, "scifact", 1) + _rows(14, "scholars", 2)
    weights = group_weights(rows)
    assert weights.sum() == pytest.approx(len(rows))
    totals: dict[tuple[str, int], float] = {}
    for row, weight in zip(rows, weights, strict=True):
        totals[(row.set, row.label)] = totals.get((row.set, row.label), 0.0) + float(weight)
    assert len(totals) == 4 and max(totals.values()) == pytest.approx(min(totals.values()))


def test_a_dropped_signal_gets_weight_zero_and_the_telling_one_keeps_its_sign() -> None:
    rows = _rows(120, "scifact", 3)
    weights, _ = fit(rows, drop=[SIGNAL_NAMES[1]], balance_groups=True)
    assert list(weights) == list(SIGNAL_NAMES)
    assert weights[SIGNAL_NAMES[1]] == 0.0
    assert weights[SIGNAL_NAMES[0]] > 1.0
    with pytest.raises(ValueError, match="unknown signals"):
        fit(rows, drop=["no_such_signal"])


def test_auc_counts_pairs_in_order_and_ties_as_half() -> None:
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5, 0.5], [0.5]) == 0.5
    assert auc([0.3, 0.9], [0.5]) == 0.5
    with pytest.raises(ValueError, match="at least one"):
        auc([], [0.1])


def _labelled(set_name: str, label: int, count: int, telling: float, seed: int, half: str = TUNE) -> list[Row]:
    """Rows whose first signal is ``telling`` + noise and whose other signals are noise."""
    rng = random.Random(seed)
    return [Row(set_name, f"{set_name}{label}{n}", half, label, True,
                tuple([telling + rng.gauss(0, 0.3)] + [rng.gauss(0, 1) for _ in SIGNAL_NAMES[1:]]))
            for n in range(count)]


def test_separability_reads_only_tuning_rows_and_tells_a_separating_signal_from_noise() -> None:
    rows = (_labelled("paraphrase_questions", 1, 20, 2.0, 1) + _labelled("near_miss_questions", 0, 20, 0.0, 2)
            + _labelled("scifact_train", 1, 30, 2.0, 3) + _labelled("scholars_questions", 1, 10, 2.0, 4)
            + _labelled("scholars_questions", 0, 10, 0.0, 5)
            # held-out rows that would ruin the figures if they were read
            + _labelled("paraphrase_questions", 1, 40, -5.0, 6, HELD_OUT))
    report = separability(rows, list(SIGNAL_NAMES[:3]))
    assert report["auc"][SIGNAL_NAMES[0]]["paraphrase_questions / near_miss_questions"] > 0.95
    assert 0.2 < report["auc"][SIGNAL_NAMES[1]]["paraphrase_questions / near_miss_questions"] < 0.8
    assert report["auc"]["leave-one-out fit"]["scholars_questions / scholars_questions"] > 0.9
    assert report["answered_at_cut"]["paraphrase_questions"] > 0.8


def test_answered_share_counts_answerable_rows_without_gold_retrieved_as_not_answered() -> None:
    rows = (_labelled("paraphrase_questions", 1, 10, 2.0, 1) + _labelled("near_miss_questions", 0, 20, 0.0, 2)
            + _labelled("scifact_train", 1, 20, 2.0, 3))
    missing_gold = [Row(r.set, r.id + "x", r.half, 1, False, r.values) for r in _labelled("paraphrase_questions", 1, 10, 2.0, 7)]
    with_missing = separability(rows + missing_gold, list(SIGNAL_NAMES[:2]))["answered_at_cut"]["paraphrase_questions"]
    alone = separability(rows, list(SIGNAL_NAMES[:2]))["answered_at_cut"]["paraphrase_questions"]
    assert with_missing == pytest.approx(alone / 2, abs=0.051)


def test_a_held_back_score_does_not_see_its_own_row() -> None:
    rows = _labelled("scifact_train", 1, 15, 1.0, 1) + _labelled("near_miss_questions", 0, 15, 0.0, 2)
    outlier = Row("near_miss_questions", "odd", TUNE, 0, True, tuple([50.0] + [0.0] * (len(SIGNAL_NAMES) - 1)))
    scores = held_back_scores([*rows, outlier], [SIGNAL_NAMES[0]])
    assert scores[-1] > max(scores[:-1])  # a fit that had seen it would have pulled its weight down


VOCABULARY = ("water", "cool", "gpu", "training", "language", "model", "data", "centre")


def _bag_of_words(texts: Sequence[str]) -> np.ndarray:
    """A stand-in encoder whose cosine is word overlap, so the expected gains can be worked out."""
    return np.asarray([[text.lower().split().count(word) + 0.01 for word in VOCABULARY] for text in texts])


def _hit(title: str, dense: float | None) -> SearchHit:
    return SearchHit(paper=Paper(title=title, published="2024"), score=dense or 0.0, dense_score=dense)


def test_occlusion_gain_rises_for_a_word_the_best_record_lacks() -> None:
    hits = [_hit("gpu training", 0.6), _hit("water", 0.2)]
    uncovered = occlusion_gain("water cool gpu training", hits, _bag_of_words)
    covered = occlusion_gain("gpu training", hits, _bag_of_words)
    # leaving out "water" (or "cool") moves the question towards the best record: cos 1/sqrt(2) -> sqrt(2/3)
    assert uncovered == pytest.approx((2 / 3) ** 0.5 - 0.5 ** 0.5, abs=0.01)
    assert covered < 0.0  # every word is the record's: leaving one out only moves away


def test_occlusion_gain_is_zero_without_dense_hits_or_content_words() -> None:
    assert occlusion_gain("water cool", [_hit("gpu training", None)], _bag_of_words) == 0.0
    assert occlusion_gain("what is the", [_hit("gpu training", 0.5)], _bag_of_words) == 0.0
