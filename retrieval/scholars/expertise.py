"""Scoring people through their retrieved papers: the arithmetic of expert finding (no I/O).

The *document model* of expert finding (Balog et al., TREC Enterprise): the papers retrieved for
a topic are the evidence, and each paper speaks for each of its authors,

    score'(d)    = score(d) - HUB_WEIGHT * hubness(d)
    rel(d)       = exp((score'(d) - score'(best hit)) / SCORE_SCALE)
    weight(d)    = rel(d) * recency(d)
    evidence(p)  = sum over p's retrieved papers, strongest first:  weight(d_i) * NEXT_PAPER_FACTOR ** i
    score(p)     = evidence(p) * exp(WORK_WEIGHT * work_similarity(p))

* ``rel`` is relative to the query's own best hit (``score_relevance``): the best hit counts 1,
  one ``SCORE_SCALE`` below it e^-1, and a paper far below the best adds almost nothing, however
  many such papers a person has. ``score`` is the hybrid retriever's fused score (a weighted
  mean of cosine, scaled BM25 and term coverage: its differences mean something).
* ``hubness`` (``retrieval.scholars.hubness``, when given) is how close a paper is to its ten
  nearest indexed papers: a paper in a crowded region comes up moderately close for many
  unrelated queries, and its authors collect many moderate matches (CSLS's discount).
* ``recency`` (``recency_weight``) halves every ``HALF_LIFE_YEARS`` down to ``RECENCY_FLOOR``.
* The sum *saturates* (``saturating_sum``): the i-th strongest paper counts ``NEXT_PAPER_FACTOR
  ** i``, so a person's evidence is at most ``1 / (1 - NEXT_PAPER_FACTOR)`` times their best paper.
  Several strong papers beat one; many middling ones cannot outweigh a few strong ones.
* Every author of a paper gets the same weight from it, whatever their position.
* ``work_similarity`` (``retrieval.scholars.work_similarity``) looks past the retrieved papers:
  the mean cosine of the query with the person's five closest indexed papers, missing ones
  counting 0. It keeps the co-authors of one top paper from crowding out the person with a body
  of work on the topic, and breaks their ties. ``document_model_scores`` is ``evidence`` alone;
  ``with_work_similarity`` applies the factor.

Two rankings are kept as baselines for the benchmarks (``bench/experts.py``,
``bench/experts_scholars.py``): ``rank_sum_scores``, the previous document model (a plain sum of
``rank_relevance`` x recency x ``position_weight``), and ``single_best_scores`` (each person's
single best paper with those weights). People are the groups of ``retrieval.scholars.people``
over the whole index, so every paper of a person counts once and a namesake's papers never add
up. How the constants were chosen: ``docs/scholars.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from retrieval.results import SearchHit
from retrieval.scholars.people import Mention, PeopleDirectory, Person

SCORE_SCALE = 0.1
NEXT_PAPER_FACTOR = 0.85
HALF_LIFE_YEARS = 5.0
RECENCY_FLOOR = 0.5
WORK_WEIGHT = 5.0
HUB_WEIGHT = 0.3
# the baselines' weights
RANK_DECAY = 10.0
FIRST_AUTHOR_WEIGHT = 1.0
LAST_AUTHOR_WEIGHT = 0.9
OTHER_AUTHOR_WEIGHT = 0.7


def score_relevance(score: float, best: float) -> float:
    """``rel`` of a hit scoring ``score`` when the query's best hit scores ``best``: 1 at the best
    (or above it), ``exp(-1)`` one ``SCORE_SCALE`` below it."""
    return math.exp(min(0.0, score - best) / SCORE_SCALE)


def saturating_sum(weights: Iterable[float]) -> float:
    """``weights`` strongest first, the i-th (from 0) times ``NEXT_PAPER_FACTOR ** i``, summed;
    at most ``max(weights) / (1 - NEXT_PAPER_FACTOR)``."""
    return sum(w * NEXT_PAPER_FACTOR**i for i, w in enumerate(sorted(weights, reverse=True)))


def rank_relevance(rank: int) -> float:
    """The baselines' ``rel`` of the hit at 1-based ``rank``: ``exp(-(rank - 1) / RANK_DECAY)``."""
    return math.exp(-(rank - 1) / RANK_DECAY)


def recency_weight(year: int | None, today: date) -> float:
    """1 for a paper of this year, halving every ``HALF_LIFE_YEARS`` down to ``RECENCY_FLOOR``;
    an undated paper counts as old."""
    if year is None:
        return RECENCY_FLOOR
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (max(0, today.year - year) / HALF_LIFE_YEARS)


def position_weight(mention: Mention) -> float:
    """The baselines' weight of an author position: first, last (the senior author in most
    fields), any other; a sole author counts as first."""
    if mention.is_first:
        return FIRST_AUTHOR_WEIGHT
    if mention.is_last:
        return LAST_AUTHOR_WEIGHT
    return OTHER_AUTHOR_WEIGHT


@dataclass
class Evidence:
    """One retrieved paper of a person and what it contributes (before saturation)."""

    hit: SearchHit
    rank: int
    mention: Mention
    contribution: float


@dataclass
class Expert:
    """A person with their evidence, strongest first, and their score."""

    person: Person
    score: float = 0.0
    evidence: list[Evidence] = field(default_factory=list)
    work_similarity: float | None = None  # set by ``with_work_similarity``

    @property
    def best_rank(self) -> int:
        return min(e.rank for e in self.evidence)


# (hit, its 1-based rank, the person's mention in it, the query's best score) -> contribution
PaperWeight = Callable[[SearchHit, int, Mention, float], float]


def rank_people(
    hits: Sequence[SearchHit],
    directory: PeopleDirectory,
    weight: PaperWeight,
    aggregate: Callable[[list[float]], float],
) -> list[Expert]:
    """Everyone with a retrieved paper, best first: each hit gives each of its authors
    ``weight(hit, rank, mention, best score)``; a person's score is ``aggregate`` of theirs.

    Evidence is listed strongest first. Equal scores (in practice: the co-authors of the same
    papers) go to the better best rank, then to the person with more indexed papers, then by name.
    """
    best = max((hit.score for hit in hits), default=0.0)
    experts: dict[str, Expert] = {}
    for rank, hit in enumerate(hits, start=1):
        paper_id = hit.paper.id  # derived on every read: once per hit
        for position in range(len(hit.paper.authors)):
            person = directory.person_at(paper_id, position)
            if person is None:
                continue
            mention = person.mention_in(paper_id)
            assert mention is not None
            expert = experts.setdefault(person.key, Expert(person))
            expert.evidence.append(Evidence(hit, rank, mention, weight(hit, rank, mention, best)))
    for expert in experts.values():
        expert.evidence.sort(key=lambda e: (-e.contribution, e.rank))
        expert.score = aggregate([e.contribution for e in expert.evidence])
    return sorted(experts.values(), key=_order)


def _order(expert: Expert) -> tuple[float, int, int, str]:
    return (-expert.score, expert.best_rank, -expert.person.paper_count, expert.person.name)


def with_work_similarity(experts: Sequence[Expert], similarity: Mapping[str, float]) -> list[Expert]:
    """``experts`` with a ``similarity`` (by person key) rescored, ``score * exp(WORK_WEIGHT *
    similarity)``, and re-ranked among themselves (ties as in ``rank_people``); then the others,
    unchanged and in their order. Returns new ``Expert`` objects; ``experts`` is not modified."""
    scored: list[Expert] = []
    rest: list[Expert] = []
    for expert in experts:
        value = similarity.get(expert.person.key)
        if value is None:
            rest.append(expert)
        else:
            scored.append(Expert(expert.person, expert.score * math.exp(WORK_WEIGHT * value), expert.evidence, value))
    return sorted(scored, key=_order) + rest


def hub_discounted(hit: SearchHit, hubness: Mapping[str, float]) -> float:
    """``score(d) - HUB_WEIGHT * hubness(d)``: the hit's fused score less its paper's hubness
    (``retrieval.scholars.hubness``; a paper without one is not discounted)."""
    return hit.score - HUB_WEIGHT * hubness.get(hit.paper.id, 0.0)


def document_model_scores(
    hits: Sequence[SearchHit], directory: PeopleDirectory, today: date, hubness: Mapping[str, float] | None = None
) -> list[Expert]:
    """``evidence`` of the module docstring's formula: score-relative relevance x recency, summed
    with saturation (``paperbot collaborators`` before ``with_work_similarity``). With ``hubness``
    (by paper id), each hit's score is ``hub_discounted`` first, the best hit's too."""
    hubs = hubness or {}
    scores = [hub_discounted(hit, hubs) for hit in hits]
    best = max(scores, default=0.0)
    # the same for every author of a hit: worked out once per hit, looked up by rank
    weights = [score_relevance(score, best) * recency_weight(hit.paper.year, today)
               for score, hit in zip(scores, hits, strict=True)]

    def weight(hit: SearchHit, rank: int, mention: Mention, _best: float) -> float:
        return weights[rank - 1]

    return rank_people(hits, directory, weight, saturating_sum)


def _rank_weight(today: date) -> PaperWeight:
    def weight(hit: SearchHit, rank: int, mention: Mention, best: float) -> float:
        return rank_relevance(rank) * recency_weight(hit.paper.year, today) * position_weight(mention)

    return weight


def rank_sum_scores(hits: Sequence[SearchHit], directory: PeopleDirectory, today: date) -> list[Expert]:
    """Baseline (the previous document model): the plain sum over a person's retrieved papers of
    rank relevance x recency x author position."""
    return rank_people(hits, directory, _rank_weight(today), sum)


def single_best_scores(hits: Sequence[SearchHit], directory: PeopleDirectory, today: date) -> list[Expert]:
    """Baseline: everyone scored by their single best retrieved paper (``rank_sum_scores``' weights)."""
    return rank_people(hits, directory, _rank_weight(today), max)
