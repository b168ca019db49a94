"""Pure ranking arithmetic: rank fusion, score scaling, near-duplicate removal, threshold calibration.

No I/O and no retriever knowledge: ``search.py`` feeds the signals and vectors in. The
measurements behind the weights and the threshold are in ``docs/index.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# The fused score a top hit needs to count as relevant (records with an abstract): calibrated by
# bench/calibrate_threshold.py at 5% false accepts (docs/index.md, "Relevance threshold"). The
# answer chain's evidence policy starts from it (``retrieval.answers.evidence``). Rerun the
# calibration whenever the fusion changes.
CALIBRATED_MIN_RELEVANCE = 0.51


@dataclass(frozen=True)
class FusionConfig:
    """How the dense and lexical signals are combined (see ``fused_score``).

    A weighted mean of the cosine similarity, the BM25 score scaled by the best BM25 score of
    the query, and the query-term coverage (the IDF-weighted share of the query's distinct
    terms a record contains). Weights were chosen on the SciFact train claims only: this beat
    reciprocal rank fusion (nDCG@10 0.744 vs 0.715 for RRF k=60) and per-query z-score or
    min-max normalisation (0.737-0.738); unlike a rank fusion it yields a score whose value means
    something, so a relevance threshold can be calibrated on it. The table is in
    ``docs/index.md``.
    """

    dense_weight: float = 0.7
    lexical_weight: float = 0.3
    coverage_weight: float = 0.2
    fetch_k: int = 50  # candidates taken from each retriever before fusing
    duplicate_cosine: float = 0.97
    # BM25's weight is multiplied by the best query-term coverage any record reaches, to this
    # power (``lexical_trust``); 0 (the default) trusts BM25 fully whatever it matched. 2 ranks
    # paraphrased questions' gold records far higher, but the threshold and the evidence
    # judgement were calibrated without it: docs/notes/lexical-trust.md
    lexical_trust_power: float = 0.0
    # BM25 matches an acronym and its long form alike, as the records the first search found
    # define them ("LLMs" for "large language models"): ``index.acronyms``; docs/index.md
    acronym_bridging: bool = True

    def __post_init__(self) -> None:
        weights = (self.dense_weight, self.lexical_weight, self.coverage_weight)
        if min(weights) < 0 or sum(weights) <= 0:
            raise ValueError("fusion weights must be non-negative and not all zero")
        if self.fetch_k < 1:
            raise ValueError("fetch_k must be at least 1")
        if self.lexical_trust_power < 0:
            raise ValueError("lexical_trust_power must be non-negative")

    def describe(self) -> str:
        """One line for benchmark tables, e.g. "0.7 cosine + 0.3 BM25/max + 0.2 coverage (weighted mean), 50 candidates each"."""
        trust = f" x best coverage^{self.lexical_trust_power:g}" if self.lexical_trust_power else ""
        parts = [f"{self.dense_weight:g} cosine", f"{self.lexical_weight:g} BM25/max{trust}"]
        if self.coverage_weight:
            parts.append(f"{self.coverage_weight:g} coverage")
        bridging = ", acronyms read both ways" if self.acronym_bridging else ""
        return " + ".join(parts) + f" (weighted mean), {self.fetch_k} candidates each{bridging}"


def scaled_lexical(raw: float, best: float) -> float:
    """BM25 score relative to the best one of the same query (0..1)."""
    if raw <= 0 or best <= 0:
        return 0.0
    return min(raw / best, 1.0)


def lexical_trust(best_coverage: float, config: FusionConfig) -> float:
    """How far this query's BM25 ranking is trusted (0..1): the best query-term coverage any
    record reaches, to the power ``config.lexical_trust_power``.

    BM25 is scaled by the query's best score (``scaled_lexical``), so the best lexical match
    scores 1 whether it holds the question's terms or only a few of its everyday words. A
    question worded unlike every record (a paraphrase) has no record covering much of it, and
    its lexical ranking is then mostly noise: it weighs less.
    """
    if config.lexical_trust_power == 0:
        return 1.0
    return min(max(best_coverage, 0.0), 1.0) ** config.lexical_trust_power


def fused_score(dense: float | None, lexical: float, config: FusionConfig, coverage: float = 0.0,
                trust: float = 1.0) -> float:
    """``(w_d * max(cosine, 0) + w_l * trust * lexical + w_c * coverage) / (w_d + w_l + w_c)``: 0..1, higher is better.

    ``lexical`` is already scaled (``scaled_lexical``), ``coverage`` is the 0..1 share of the
    query's terms the record contains (``lexical.LexicalScores``) and ``trust`` the query's
    ``lexical_trust``; a record the dense side has no vector for counts with cosine 0.
    """
    cosine = max(dense, 0.0) if dense is not None else 0.0
    total = config.dense_weight + config.lexical_weight + config.coverage_weight
    weighted = (config.dense_weight * cosine + config.lexical_weight * trust * lexical
                + config.coverage_weight * coverage)
    return weighted / total


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], rrf_k: int = 60
) -> list[tuple[str, float]]:
    """Weighted RRF, ``sum_i w_i / (rrf_k + rank_i)``: the baseline the benchmarks compare with.

    Ties keep the order in which ids were first seen (first ranking first).
    """
    if len(rankings) != len(weights):
        raise ValueError("one weight per ranking is required")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (rrf_k + rank)
    order = {item: n for n, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def drop_near_duplicates(
    ranked: Sequence[str],
    title_keys: Mapping[str, str],
    vectors: Mapping[str, np.ndarray],
    max_cosine: float = 0.97,
    limit: int | None = None,
) -> list[str]:
    """Keep the best-ranked record of each group of near-duplicates (at most ``limit``).

    Two records are near-duplicates when their normalised titles are equal or their
    (L2-normalised) embeddings have cosine similarity above ``max_cosine``. Records without a
    vector are compared by title only.
    """
    kept: list[str] = []
    kept_titles: set[str] = set()
    kept_vectors: list[np.ndarray] = []
    for item in ranked:
        if limit is not None and len(kept) >= limit:
            break
        key = title_keys.get(item)
        if key and key in kept_titles:
            continue
        vector = vectors.get(item)
        if vector is not None and kept_vectors and float(np.max(np.asarray(kept_vectors) @ vector)) > max_cosine:
            continue
        kept.append(item)
        if key:
            kept_titles.add(key)
        if vector is not None:
            kept_vectors.append(vector)
    return kept


@dataclass(frozen=True)
class Calibration:
    """A threshold and how it separates answerable from unanswerable queries."""

    threshold: float
    accepted_relevant: float  # share of answerable queries kept
    accepted_irrelevant: float  # share of unanswerable queries wrongly kept


def calibrate_threshold(
    relevant: Sequence[float] | np.ndarray, irrelevant: Sequence[float] | np.ndarray, max_false_accept: float = 0.05
) -> Calibration:
    """Lowest threshold that lets through at most ``max_false_accept`` of the irrelevant scores.

    ``relevant``: the score of the best relevant record for answerable queries;
    ``irrelevant``: the best score for queries the corpus cannot answer. Keeping the false
    accept rate fixed (rather than maximising accuracy) is what an abstaining assistant needs:
    a confident answer from unrelated papers is worse than an abstention.
    """
    negatives = np.sort(np.asarray(irrelevant, dtype=np.float64))
    positives = np.asarray(relevant, dtype=np.float64)
    if positives.size == 0 or negatives.size == 0:
        raise ValueError("both score samples are needed to calibrate")
    allowed = math.floor(max_false_accept * len(negatives))
    # threshold just above the (allowed+1)-th highest irrelevant score
    cut = negatives[len(negatives) - allowed - 1]
    threshold = float(np.nextafter(cut, np.inf))
    return Calibration(
        threshold=threshold,
        accepted_relevant=float(np.mean(positives >= threshold)),
        accepted_irrelevant=float(np.mean(negatives >= threshold)),
    )
