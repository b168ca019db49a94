"""Score fusion, near-duplicate removal and threshold calibration (pure functions)."""

import numpy as np
import pytest

from retrieval.index.fusion import (
    FusionConfig,
    calibrate_threshold,
    drop_near_duplicates,
    fused_score,
    lexical_trust,
    reciprocal_rank_fusion,
    scaled_lexical,
)


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_fused_score_is_a_weighted_mean_on_0_to_1():
    config = FusionConfig(dense_weight=0.7, lexical_weight=0.3, coverage_weight=0.0)
    assert fused_score(1.0, 1.0, config) == pytest.approx(1.0)
    assert fused_score(0.5, 0.0, config) == pytest.approx(0.35)
    assert fused_score(None, 1.0, config) == pytest.approx(0.3)
    assert fused_score(-0.2, 0.0, config) == 0.0  # a negative cosine counts as no similarity
    assert fused_score(0.5, 0.0, config, coverage=1.0) == pytest.approx(0.35)  # weight 0: ignored


def test_coverage_is_a_third_weighted_signal():
    config = FusionConfig()  # the defaults chosen on the SciFact train claims
    assert (config.dense_weight, config.lexical_weight, config.coverage_weight) == (0.7, 0.3, 0.2)
    assert fused_score(1.0, 1.0, config, coverage=1.0) == pytest.approx(1.0)
    assert fused_score(0.6, 0.5, config, coverage=0.0) == pytest.approx((0.42 + 0.15) / 1.2)
    with_terms = fused_score(0.6, 0.5, config, coverage=1.0)
    assert with_terms - fused_score(0.6, 0.5, config, coverage=0.0) == pytest.approx(0.2 / 1.2)
    assert config.describe() == ("0.7 cosine + 0.3 BM25/max + 0.2 coverage (weighted mean), 50 candidates each, "
                                 "acronyms read both ways")
    assert FusionConfig(acronym_bridging=False).describe().endswith("50 candidates each")
    assert FusionConfig(lexical_trust_power=2).describe().startswith("0.7 cosine + 0.3 BM25/max x best coverage^2 +")


def test_bm25_weighs_by_how_well_the_best_record_covers_the_question():
    config = FusionConfig(lexical_trust_power=2)
    assert lexical_trust(0.3, FusionConfig()) == 1.0  # the default trusts BM25 fully
    assert lexical_trust(1.0, config) == 1.0  # some record holds every term: BM25 at full weight
    assert lexical_trust(0.5, config) == pytest.approx(0.25)
    assert lexical_trust(0.0, config) == 0.0  # no record holds a term: BM25 ranks noise
    assert lexical_trust(0.3, FusionConfig(lexical_trust_power=0)) == 1.0
    # the best lexical match of a paraphrase (scaled to 1) no longer outranks a closer meaning
    paraphrase = lexical_trust(0.3, config)
    assert fused_score(0.45, 1.0, config, 0.3, paraphrase) < fused_score(0.6, 0.0, config, 0.1, paraphrase)
    assert fused_score(0.45, 1.0, config, 0.3) > fused_score(0.6, 0.0, config, 0.1)  # trusted fully, it did
    assert fused_score(0.6, 0.5, config, 0.0, trust=0.5) == pytest.approx((0.42 + 0.075) / 1.2)


def test_scaled_lexical_is_relative_to_the_best_score_of_the_query():
    assert scaled_lexical(5.0, 10.0) == 0.5
    assert scaled_lexical(10.0, 10.0) == 1.0
    assert scaled_lexical(0.0, 10.0) == 0.0 and scaled_lexical(3.0, 0.0) == 0.0


def test_fusion_config_rejects_meaningless_weights():
    with pytest.raises(ValueError):
        FusionConfig(dense_weight=0, lexical_weight=0, coverage_weight=0)
    with pytest.raises(ValueError):
        FusionConfig(coverage_weight=-0.1)
    with pytest.raises(ValueError):
        FusionConfig(fetch_k=0)
    with pytest.raises(ValueError):
        FusionConfig(lexical_trust_power=-1)


def test_reciprocal_rank_fusion_rewards_agreement_and_is_deterministic():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], [1.0, 1.0], rrf_k=60)
    assert [item for item, _ in fused] == ["b", "a", "d", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    tie = reciprocal_rank_fusion([["x"], ["y"]], [1.0, 1.0])
    assert [item for item, _ in tie] == ["x", "y"]
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], [1.0, 2.0])


def test_near_duplicates_keep_the_best_ranked_record():
    ranked = ["a", "b", "c", "d", "e"]
    titles = {"a": "graph networks", "b": "graph networks", "c": "other", "d": "third", "e": "fourth"}
    vectors = {"a": unit(1, 0, 0), "b": unit(0, 1, 0), "c": unit(0, 1, 0), "d": unit(0, 1, 0.01), "e": unit(0, 0, 1)}
    # b: same title as a; d: cosine 0.99995 with c
    assert drop_near_duplicates(ranked, titles, vectors, 0.97) == ["a", "c", "e"]
    assert drop_near_duplicates(ranked, titles, vectors, 0.97, limit=2) == ["a", "c"]
    # records without a vector are compared by title only
    assert drop_near_duplicates(["a", "b", "x"], titles, {}, 0.97) == ["a", "x"]


def test_calibrated_threshold_bounds_the_false_accept_rate():
    rng = np.random.default_rng(7)
    relevant = rng.normal(0.7, 0.08, 400)
    irrelevant = rng.normal(0.35, 0.08, 400)
    calibration = calibrate_threshold(relevant, irrelevant, max_false_accept=0.05)
    assert calibration.accepted_irrelevant <= 0.05
    assert np.mean(irrelevant >= calibration.threshold) == pytest.approx(calibration.accepted_irrelevant)
    assert calibration.accepted_relevant > 0.95
    strict = calibrate_threshold(relevant, irrelevant, max_false_accept=0.0)
    assert strict.threshold > max(irrelevant) and strict.accepted_irrelevant == 0.0
    with pytest.raises(ValueError):
        calibrate_threshold([], [0.1])
