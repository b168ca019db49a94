"""Expert finding: a topic -> the people whose indexed papers make the strongest case.

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Protocol

from retrieval.config import Settings
from retrieval.errors import InputError
from retrieval.records.paper import Paper
from retrieval.results import Citation, CollaboratorsResult, ExpertCandidate, SearchFilters, SearchHit
from retrieval.scholars.cache import directory_for
from retrieval.scholars.people import Mention, PeopleDirectory, Person, stored_vectors_of
from retrieval.scholars.profile import affiliations
from retrieval.scholars.resolve import RosterLike, resolve_person, roster_claims

RETRIEVE_K = 150
RANK_DECAY = 10.0
HALF_LIFE_YEARS = 5.0
RECENCY_FLOOR = 0.5
CLOSE_RANK = 20  # "among the 20 closest papers" in the one-line reason
FIRST_AUTHOR_WEIGHT = 1.0
LAST_AUTHOR_WEIGHT = 0.9
OTHER_AUTHOR_WEIGHT = 0.7
MAX_EVIDENCE = 3
MAX_LIMIT = 50


class SearchableIndex(Protocol):
    def search(self, query: str, k: int, filters: SearchFilters | None = None) -> list[SearchHit]: ...

    def iter_papers(self) -> Iterable[Paper]: ...


def rank_relevance(rank: int) -> float:
    """``rel`` of the hit at 1-based ``rank``."""
    return math.exp(-(rank - 1) / RANK_DECAY)


def recency_weight(year: int | None, today: date) -> float:
    if year is None:
        return RECENCY_FLOOR
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (max(0, today.year - year) / HALF_LIFE_YEARS)


def position_weight(mention: Mention) -> float:
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
    person: Person
    score: float = 0.0
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def best_rank(self) -> int:
        return min(e.rank for e in self.evidence)


def _experts(hits: Sequence[SearchHit], directory: PeopleDirectory, today: date) -> dict[str, Expert]:
    experts: dict[str, Expert] = {}
    for rank, hit in enumerate(hits, start=1):
        rel = rank_relevance(rank) * recency_weight(hit.paper.year, today)
        for position in range(len(hit.paper.authors)):
            person = directory.person_at(hit.paper.id, position)
            if person is None:
                continue
            mention = person.mention_in(hit.paper.id)
            assert mention is not None
            expert = experts.setdefault(person.key, Expert(person))
            expert.evidence.append(Evidence(hit, rank, mention, rel * position_weight(mention)))
    return experts


def _ranked(
    hits: Sequence[SearchHit], directory: PeopleDirectory, today: date, score: Callable[[list[Evidence]], float]
) -> list[Expert]:
    """Everyone with a retrieved paper, their evidence strongest first, ranked by ``score`` of it."""
    experts = _experts(hits, directory, today)
    for expert in experts.values():
        expert.evidence.sort(key=lambda e: (-e.contribution, e.rank))
        expert.score = score(expert.evidence)
    return sorted(experts.values(), key=lambda e: (-e.score, e.best_rank, e.person.name))


def document_model_scores(
    hits: Sequence[SearchHit], directory: PeopleDirectory, today: date
) -> list[Expert]:
    """Everyone with a retrieved paper, best first, scored by the sum over their papers."""
    return _ranked(hits, directory, today, lambda evidence: sum(e.contribution for e in evidence))


def single_best_scores(
    hits: Sequence[SearchHit], directory: PeopleDirectory, today: date
) -> list[Expert]:
    """Baseline: everyone scored by their single best retrieved paper (same weights)."""
    return _ranked(hits, directory, today, lambda evidence: evidence[0].contribution)


def reason(expert: Expert, retrieved: int) -> str:
    """One line on why, e.g. "3 papers among the 20 closest (best #1), 5 among the 150
    retrieved; latest 2024; first author on 2, last author on 1"."""
    close = sum(1 for e in expert.evidence if e.rank <= CLOSE_RANK)
    count = len(expert.evidence)
    if close:
        head = f"{close} {'paper' if close == 1 else 'papers'} among the {CLOSE_RANK} closest (best #{expert.best_rank})"
        if count > close:
            head += f", {count} among the {retrieved} retrieved"
    else:
        head = f"{count} {'paper' if count == 1 else 'papers'} among the {retrieved} retrieved (best #{expert.best_rank})"
    parts = [head]
    years = [e.hit.paper.year for e in expert.evidence if e.hit.paper.year is not None]
    if years:
        parts.append(f"latest {max(years)}")
    roles = []
    first = sum(1 for e in expert.evidence if e.mention.is_first)
    last = sum(1 for e in expert.evidence if e.mention.is_last)
    if first:
        roles.append(f"first author on {first}")
    if last:
        roles.append(f"last author on {last}")
    if roles:
        parts.append(", ".join(roles))
    return "; ".join(parts)


def _excluded(directory: PeopleDirectory, person: Person, new_only: bool) -> set[str]:
    """Keys of ``person`` (and, with ``new_only``, of everyone who wrote a paper with them)."""
    keys = {p.key for m in person.mentions if (p := directory.person_at(m.paper_id, m.position))}
    if new_only:
        for key in list(keys):
            keys |= set(directory.coauthors_of(directory.get(key)))
    return keys


def _resolve_for(directory: PeopleDirectory, name: str, roster: RosterLike | None) -> Person:
    found = resolve_person(directory, name, roster)
    if isinstance(found, Person):
        return found
    listed = "; ".join(
        f"{p.name} [{p.key}] ({len(p.paper_ids)} papers, e.g. “{directory.papers_of(p)[0].title}”)" for p in found[:5]
    )
    raise InputError(
        f"--for {name!r} matches {len(found)} different people: {listed}.",
        hint="Pick one with its id (--for person:…), or give a fuller name, an ORCID or an OpenAlex author id.",
    )


def _directory_for(
    index: SearchableIndex,
    hits: Sequence[SearchHit],
    directory: PeopleDirectory | None,
    roster: RosterLike | None,
    cache_dir: Path,
) -> PeopleDirectory:
    if directory is None:
        return directory_for(index, roster_claims(roster), cache_dir=cache_dir)
    missing = [h.paper for h in hits if h.paper.id not in directory.papers]
    if missing:  # the index changed since the directory was built
        return PeopleDirectory(
            [*directory.papers.values(), *missing],
            clustering=directory.clustering,
            vectors=stored_vectors_of(index),
            claims=roster_claims(roster),
        )
    return directory


def find_collaborators(
    index: SearchableIndex,
    settings: Settings,
    topic: str,
    *,
    for_name: str | None = None,
    new_only: bool = False,
    limit: int = 10,
    today: date | None = None,
    roster: RosterLike | None = None,
    directory: PeopleDirectory | None = None,
    retrieve_k: int = RETRIEVE_K,
) -> CollaboratorsResult:
    """People ranked by expertise on ``topic`` with the papers that make the case.

    ``for_name`` excludes that person (resolved like ``summarize``; an ambiguous name is an
    ``InputError`` listing the candidates); ``new_only`` also excludes their co-authors.
    ``directory`` (the index grouped into people) is built from the index when not given.
    """
    topic = " ".join(topic.split())
    if not topic:
        raise InputError("The topic is empty.", hint='Try: paperbot collaborators "optical interconnects"')
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"--limit must be between 1 and {MAX_LIMIT} (got {limit}).")
    if new_only and not for_name:
        raise InputError("--new-only needs --for NAME: new to whom?", hint='Try: --for "Zhao Zhang" --new-only')
    today = today or date.today()
    if roster is None:
        from retrieval.storage.roster import Roster

        roster = Roster.load(settings)
    hits = index.search(topic, k=retrieve_k, filters=None)
    if not hits:
        return CollaboratorsResult(topic=topic, scholars=[], notice="No indexed paper matches this topic.")
    directory = _directory_for(index, hits, directory, roster, settings.cache_dir)
    excluded: set[str] = set()
    asker: Person | None = None
    if for_name:
        asker = _resolve_for(directory, for_name, roster)
        excluded = _excluded(directory, asker, new_only)
    ranked = [e for e in document_model_scores(hits, directory, today) if e.person.key not in excluded]
    numbers: dict[str, int] = {}
    scholars: list[ExpertCandidate] = []
    for expert in ranked[:limit]:
        papers: list[Citation] = []
        for item in expert.evidence[:MAX_EVIDENCE]:
            paper = item.hit.paper
            n = numbers.setdefault(paper.id, len(numbers) + 1)
            papers.append(Citation.from_paper(n, paper, item.hit.score))
        current = affiliations(expert.person, today)["current"]
        scholars.append(
            ExpertCandidate(
                name=expert.person.name,
                person_id=expert.person.key,
                score=round(expert.score, 4),
                affiliation=current[0] if current else None,
                reason=reason(expert, len(hits)),
                papers=papers,
            )
        )
    notice = None
    if not scholars:
        notice = "Everyone with a matching paper was excluded by --for/--new-only."
    return CollaboratorsResult(
        topic=topic, scholars=scholars, notice=notice, for_person=asker.name if asker is not None else None
    )
