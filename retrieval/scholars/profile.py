"""Profile facts of one person: affiliations, topics, co-authors, and the short profile that
tells namesakes apart."""

from __future__ import annotations

import calendar
from collections import Counter
from collections.abc import Sequence
from datetime import date
from typing import Protocol

from retrieval.records.paper import Paper
from retrieval.results import Coauthor, CoauthorLink, ScholarCandidate
from retrieval.scholars.people import PeopleDirectory, Person
from retrieval.scholars.themes import TermStats, salient_terms
from retrieval.text import fold

AFFILIATION_YEARS = 10
TOP_COAUTHORS = 10
MAX_TOPICS = 10


class SalientTerms(Protocol):
    """``themes.salient_terms``'s shape: the terms that set ``papers`` apart, best first."""

    def __call__(self, papers: Sequence[Paper], background: TermStats, *, limit: int) -> list[str]: ...


def period_end(published: str | None) -> date | None:
    """Last day of the period a date string names ("2024" -> 2024-12-31)."""
    if not published:
        return None
    parts = [int(x) for x in published.split("-")]
    year = parts[0]
    month = parts[1] if len(parts) > 1 else 12
    day = parts[2] if len(parts) > 2 else calendar.monthrange(year, month)[1]
    return date(year, month, min(day, calendar.monthrange(year, month)[1]))


def affiliations(person: Person, today: date, years: int = AFFILIATION_YEARS) -> dict[str, list[str]]:
    """``current``: the affiliations on the latest paper that has any; ``previous``: other
    affiliations on papers of the past ``years`` years, newest first."""
    current: list[str] = []
    previous: list[str] = []
    current_paper: str | None = None
    for mention in person.mentions:  # newest first
        if not mention.author.affiliations:
            continue
        if current_paper is None:
            current_paper = mention.paper_id
        if mention.paper_id == current_paper:
            current += [a for a in mention.author.affiliations if a not in current]
            continue
        end = period_end(mention.published)
        if end is not None and end.year < today.year - years:
            break
        folded_known = {fold(a) for a in current + previous}
        previous += [a for a in mention.author.affiliations if fold(a) not in folded_known]
    return {"current": current, "previous": previous}


def topics(papers: Sequence[Paper], background: TermStats, limit: int = MAX_TOPICS, *,
           salient: SalientTerms = salient_terms) -> list[str]:
    """Up to ``limit`` topics of ``papers``: their most frequent categories (at most half of them;
    each used twice, or by one of fewer than three papers), then the terms that set the papers apart
    from ``background`` (``salient``, called with ``limit=``; a benchmark passes its baseline)."""
    counts = Counter(c for p in papers for c in p.categories)
    found: list[str] = [c for c, n in counts.most_common() if n >= 2 or len(papers) < 3][: limit // 2]
    for term in salient(papers, background, limit=limit):
        if len(found) >= limit:
            break
        if fold(term) not in {fold(f) for f in found}:
            found.append(term)
    return found


def coauthor_facts(
    directory: PeopleDirectory, person: Person, top: int = TOP_COAUTHORS
) -> tuple[int, list[Coauthor], list[CoauthorLink]]:
    """(number of distinct co-authors, the top ones by shared papers, links among the top)."""
    shared = directory.coauthors_of(person)
    ranked = sorted(shared.items(), key=lambda item: (-item[1], directory.get(item[0]).name))[:top]
    people = [directory.get(key) for key, _ in ranked]
    coauthors = [Coauthor(name=p.name, shared=n, person_id=p.key) for p, (_, n) in zip(people, ranked, strict=True)]
    links: list[CoauthorLink] = []
    paper_sets = [set(p.paper_ids) for p in people]
    for i in range(len(people)):
        for j in range(i + 1, len(people)):
            both = len(paper_sets[i] & paper_sets[j])
            if both:
                links.append(
                    CoauthorLink(a=people[i].name, b=people[j].name, shared=both, a_id=people[i].key, b_id=people[j].key)
                )
    return len(shared), coauthors, links


def candidate(directory: PeopleDirectory, person: Person, today: date) -> ScholarCandidate:
    """A short profile telling one of several matching people apart from the others."""
    papers = directory.papers_of(person)
    current = affiliations(person, today)["current"]
    _, top, _ = coauthor_facts(directory, person, top=3)
    years = [p.year for p in papers if p.year is not None]
    return ScholarCandidate(
        name=person.name,
        person_id=person.key,
        affiliation=current[0] if current else None,
        papers=len(papers),
        sample_title=papers[0].title if papers else None,
        ids=dict(person.ids),
        coauthors=[c.name for c in top],
        latest_year=max(years) if years else None,
    )
