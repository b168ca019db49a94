"""The judgement fit's arithmetic (``bench/fit_judgement.py``): group weights and dropped signals."""

import random

import pytest

from bench.fit_judgement import TUNE, Row, fit, group_weights
from retrieval.answers.judgement import SIGNAL_NAMES


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
