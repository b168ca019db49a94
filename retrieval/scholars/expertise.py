"""Scoring people through their retrieved papers: the arithmetic of expert finding (no I/O).

The *document model* of expert finding (Balog et al., TREC Enterprise): retrieve the papers
closest to the topic, then score each person through their papers,

    score(person) = sum over retrieved papers d of person:  rel(d) * recency(d) * position(person, d)

with ``rank_relevance`` (decaying with the hit's rank), ``recency_weight`` (halving every
``HALF_LIFE_YEARS`` down to ``RECENCY_FLOOR``) and ``position_weight`` (first, last, other
author). ``single_best_scores``, each person scored by their single best paper, is the baseline
of ``bench/experts.py``. People are the groups of ``retrieval.scholars.people`` over the whole
index, so every paper of a person counts once and a namesake's papers never add up.

Why ranks and not scores, and how the constants were chosen: ``docs/scholars.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from retrieval.results import SearchHit
from retrieval.scholars.people import Mention, PeopleDirectory, Person

HALF_LIFE_YEARS = 5.0
RECENCY_FLOOR = 0.5
RANK_DECAY = 10.0
FIRST_AUTHOR_WEIGHT = 1.0
LAST_AUTHOR_WEIGHT = 0.9
OTHER_AUTHOR_WEIGHT = 0.7


def rank_relevance(rank: int) -> float:
    """``rel`` of the hit at 1-based ``rank``: ``exp(-(rank - 1) / RANK_DECAY)``."""
    return math.exp(-(rank - 1) / RANK_DECAY)


def recency_weight(year: int | None, today: date) -> float:
    """1 for a paper of this year, halving every ``HALF_LIFE_YEARS`` down to ``RECENCY_FLOOR``;
    an undated paper counts as old."""
    if year is None:
        return RECENCY_FLOOR
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (max(0, today.year - year) / HALF_LIFE_YEARS)


def position_weight(mention: Mention) -> float:
    """The weight of an author position: first, last (the senior author in most
    fields), any other; a sole author counts as first."""
    if mention.is_first:
        return FIRST_AUTHOR_WEIGHT
    if mention.is_last:
        return LAST_AUTHOR_WEIGHT
    return OTHER_AUTHOR_WEIGHT


@dataclass
class Evidence:
    """One retrieved paper of a person and what it contributes."""

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

    Evidence is listed strongest first; ties go to the better best rank, then the name.
    """
    best = max((hit.score for hit in hits), default=0.0)
    experts: dict[str, Expert] = {}
    for rank, hit in enumerate(hits, start=1):
        for position in range(len(hit.paper.authors)):
            person = directory.person_at(hit.paper.id, position)
            if person is None:
                continue
            mention = person.mention_in(hit.paper.id)
            assert mention is not None
            expert = experts.setdefault(person.key, Expert(person))
            expert.evidence.append(Evidence(hit, rank, mention, weight(hit, rank, mention, best)))
    for expert in experts.values():
        expert.evidence.sort(key=lambda e: (-e.contribution, e.rank))
        expert.score = aggregate([e.contribution for e in expert.evidence])
    return sorted(experts.values(), key=lambda e: (-e.score, e.best_rank, e.person.name))


def _rank_weight(today: date) -> PaperWeight:
    def weight(hit: SearchHit, rank: int, mention: Mention, best: float) -> float:
        return rank_relevance(rank) * recency_weight(hit.paper.year, today) * position_weight(mention)

    return weight


def document_model_scores(hits: Sequence[SearchHit], directory: PeopleDirectory, today: date) -> list[Expert]:
    """Everyone with a retrieved paper, best first, scored by the sum over their papers."""
    return rank_people(hits, directory, _rank_weight(today), sum)


def single_best_scores(hits: Sequence[SearchHit], directory: PeopleDirectory, today: date) -> list[Expert]:
    """Baseline: everyone scored by their single best retrieved paper (same weights)."""
    return rank_people(hits, directory, _rank_weight(today), max)
