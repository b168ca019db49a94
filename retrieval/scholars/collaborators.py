"""Expert finding: a topic -> the people whose indexed papers make the strongest case.

``find_collaborators`` retrieves the ``RETRIEVE_K`` papers closest to the topic and ranks people
with ``rank_experts``: through the retrieved papers (``retrieval.scholars.expertise``, where the
arithmetic and its baselines live), each discounted by how generic it is in the index
(``retrieval.scholars.hubness``), then the first ``WORK_DEPTH`` also by how close their whole
indexed work is to the topic (``retrieval.scholars.work_similarity``: stored vectors against the
search's own query vector, nothing encoded). This module resolves ``--for``, leaves people out,
and builds the result with each person's strongest papers and a one-line ``reason``. People are
the groups of ``retrieval.scholars.people`` over the whole index.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import date
from pathlib import Path
from typing import Protocol

import numpy as np

from retrieval.config import Settings
from retrieval.errors import InputError
from retrieval.records.paper import Paper
from retrieval.results import Citation, CollaboratorsResult, ExpertCandidate, SearchFilters, SearchHit
from retrieval.scholars.cache import directory_for
from retrieval.scholars.clustering import Vectors
from retrieval.scholars.coverage import TopicJudge, covers, not_covered_notice
from retrieval.scholars.expertise import Expert, document_model_scores, with_work_similarity
from retrieval.scholars.hubness import Neighbours, paper_hubness, stored_neighbours_of
from retrieval.scholars.people import PeopleDirectory, Person, stored_vectors_of
from retrieval.scholars.profile import affiliations
from retrieval.scholars.resolve import RosterLike, resolve_person, roster_claims
from retrieval.scholars.work_similarity import work_similarities

RETRIEVE_K = 150
CLOSE_RANK = 20  # "among the 20 closest papers" in the one-line reason
MAX_EVIDENCE = 3
MAX_LIMIT = 50
WORK_DEPTH = 2 * MAX_LIMIT  # people (after exclusions) whose whole indexed work is compared


class Retrieved(Protocol):
    hits: list[SearchHit]
    query_vector: np.ndarray | None


class SearchableIndex(Protocol):
    def retrieve(self, query: str, k: int, filters: SearchFilters | None = None) -> Retrieved: ...

    def iter_papers(self) -> Iterable[Paper]: ...


def rank_experts(
    hits: Sequence[SearchHit],
    directory: PeopleDirectory,
    today: date,
    *,
    query_vector: np.ndarray | None,
    vectors: Vectors | None,
    excluded: Collection[str] = (),
    neighbours: Neighbours | None = None,
) -> list[Expert]:
    """The ranking of ``paperbot collaborators``, best first: everyone with a retrieved paper but
    the ``excluded`` person keys, by ``document_model_scores`` (each hit discounted by its paper's
    ``paper_hubness`` when the index gives stored ``vectors`` and their ``neighbours``); then the
    first ``WORK_DEPTH`` of them rescored and re-ranked by ``with_work_similarity`` (their papers'
    stored ``vectors`` against ``query_vector``). Without a query vector or stored vectors, the
    document model alone.
    """
    vectors = _read_once(vectors) if vectors is not None else None
    hubness = (paper_hubness([hit.paper.id for hit in hits], vectors, neighbours)
               if vectors is not None and neighbours is not None else None)
    ranked = [e for e in document_model_scores(hits, directory, today, hubness) if e.person.key not in excluded]
    if query_vector is None or vectors is None:
        return ranked
    similarity = work_similarities([e.person for e in ranked[:WORK_DEPTH]], query_vector, vectors)
    return with_work_similarity(ranked, similarity)


def _read_once(vectors: Vectors) -> Vectors:
    """``vectors`` reading each id from the store at most once: one ranking reads the hits' vectors
    for their hubness, then those of the first people's papers, most hits among them, for the work
    similarity."""
    seen: dict[str, np.ndarray | None] = {}

    def lookup(ids: list[str]) -> dict[str, np.ndarray]:
        missing = [paper_id for paper_id in dict.fromkeys(ids) if paper_id not in seen]
        if missing:
            found = vectors(missing)
            seen.update((paper_id, found.get(paper_id)) for paper_id in missing)
        return {paper_id: vector for paper_id in ids if (vector := seen[paper_id]) is not None}

    return lookup


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
    judge_topic: TopicJudge | None = None,
) -> CollaboratorsResult:
    """People ranked by expertise on ``topic`` with the papers that make the case.

    ``for_name`` excludes that person (resolved like ``summarize``; an ambiguous name is an
    ``InputError`` listing the candidates); ``new_only`` also excludes their co-authors.
    ``directory`` (the index grouped into people) is built from the index when not given.
    ``judge_topic`` (``retrieval.scholars.coverage.topic_judge``) decides ``topic_covered``; a topic
    judged not covered keeps its ranking and gets a notice saying so. Without it, not judged (None).
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
    retrieved = index.retrieve(topic, k=retrieve_k, filters=None)
    hits = retrieved.hits
    if not hits:
        return CollaboratorsResult(topic=topic, scholars=[], notice="No indexed paper matches this topic.")
    directory = _directory_for(index, hits, directory, roster, settings.cache_dir)
    excluded: set[str] = set()
    asker: Person | None = None
    if for_name:
        asker = _resolve_for(directory, for_name, roster)
        excluded = _excluded(directory, asker, new_only)
    ranked = rank_experts(hits, directory, today, query_vector=retrieved.query_vector,
                          vectors=stored_vectors_of(index), excluded=excluded,
                          neighbours=stored_neighbours_of(index))
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
                work_similarity=None if expert.work_similarity is None else round(expert.work_similarity, 4),
            )
        )
    verdict = judge_topic(topic, hits) if judge_topic is not None else None
    covered = None if verdict is None else covers(verdict)
    notices = [not_covered_notice(verdict)] if verdict is not None and not covered else []
    if not scholars:
        notices.append("Everyone with a matching paper was excluded by --for/--new-only.")
    return CollaboratorsResult(
        topic=topic, scholars=scholars, notice=" ".join(notices) or None,
        for_person=asker.name if asker is not None else None,
        topic_covered=covered,
    )
