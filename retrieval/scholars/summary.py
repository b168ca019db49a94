"""A scholar's summary: resolve the name, then the profile facts and the recent work in themes.

Recent work: papers of the last ``RECENT_MONTHS`` months before ``today`` (or from January 1st
of ``since``). A paper dated only by year or month counts when any day of that period is in the
window. A paper with no date counts when ``since`` reaches back to the scholar's earliest dated
paper (the window is their whole record); otherwise it is left out, and the note says how many. Fewer than ``MIN_RECENT`` papers there: the latest ``FALLBACK_RECENT`` papers are used
instead and ``window_note`` says so. The papers are grouped into themes
(``retrieval.scholars.themes``), each told in a sentence or two citing its papers
(``retrieval.scholars.theme_texts``).

Several comparable people for the name: ``AmbiguousScholarResult`` with a short profile of each
(never a blend); nobody: ``UnknownScholarError`` (``retrieval.scholars.resolve``).
"""

from __future__ import annotations

import calendar
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Protocol

import numpy as np

from retrieval.config import Settings
from retrieval.records.paper import Paper
from retrieval.results import (
    AmbiguousScholarResult,
    Citation,
    ScholarIdentity,
    ScholarSummaryResult,
    Theme,
    ThemeYears,
)
from retrieval.scholars.cache import background_of, directory_for
from retrieval.scholars.linkage import Linkage, average_linkage
from retrieval.scholars.people import PeopleDirectory, Person, stored_vectors_of
from retrieval.scholars.profile import affiliations, candidate, coauthor_facts, period_end, topics
from retrieval.scholars.resolve import RosterLike, resolve, roster_claims
from retrieval.scholars.theme_texts import cited_numbers, extractive_texts, llm_texts
from retrieval.scholars.themes import OTHER_LABEL, TermStats, ThemeGroup, assign_to_themes, group_into_themes

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

RECENT_MONTHS = 24
MIN_RECENT = 3
FALLBACK_RECENT = 5
MAX_CANDIDATES = 10
MAX_NAMESAKES = 5
MAX_THEMES = 5


class PaperSource(Protocol):
    """What summaries need from the index."""

    def iter_papers(self) -> Iterable[Paper]: ...


# --- recent work -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecentWork:
    papers: list[Paper]
    note: str | None
    describe: str  # "3 papers in the 24 months since March 2024", "the latest 5 papers"


def _months_before(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _span(papers: Sequence[Paper]) -> str:
    years = sorted(p.year for p in papers if p.year is not None)
    if not years:
        return "undated"
    return str(years[0]) if years[0] == years[-1] else f"{years[0]}–{years[-1]}"


def recent_work(papers: Sequence[Paper], today: date, since: int | None = None) -> RecentWork:
    """The papers of the window (see the module docstring), newest first."""
    if since is not None:
        start = date(since, 1, 1)
        window = f"since {since}"
    else:
        start = _months_before(today, RECENT_MONTHS)
        window = f"in the {RECENT_MONTHS} months since {start:%B %Y}"
    inside = [p for p in papers if (end := period_end(p.published)) is not None and end >= start]
    undated = [p for p in papers if period_end(p.published) is None]
    earliest = min((end for p in papers if (end := period_end(p.published)) is not None), default=None)
    if undated and since is not None and (earliest is None or start <= earliest.replace(month=1, day=1)):
        inside += undated  # the window holds every dated paper: the undated ones belong too (listed last)
        undated = []
    if len(inside) >= MIN_RECENT or len(inside) == len(papers):
        noun = "paper" if len(inside) == 1 else "papers"
        left_out = None
        if undated:
            what = "1 paper has" if len(undated) == 1 else f"{len(undated)} papers have"
            shown = "it is" if len(undated) == 1 else "they are"
            left_out = f"{what} no date on record and cannot be placed {window}; {shown} not shown."
        return RecentWork(inside, left_out, f"{len(inside)} {noun} {window}")
    latest = list(papers[:FALLBACK_RECENT])
    if len(latest) == len(papers):
        shown = "the only indexed paper" if len(latest) == 1 else f"all {len(latest)} indexed papers"
    else:
        shown = f"the latest {len(latest)} papers"
    counted = {0: "No paper falls", 1: "Only 1 paper falls"}.get(len(inside), f"Only {len(inside)} papers fall")
    note = f"{counted} {window}; showing {shown} instead ({_span(latest)})."
    return RecentWork(latest, note, shown)


# --- the summary -------------------------------------------------------------------------------


def _timeline(papers: Sequence[Paper], labels: Mapping[str, str], themes: Sequence[ThemeGroup]) -> list[ThemeYears]:
    order = [t.label for t in themes if t.label != OTHER_LABEL] + [OTHER_LABEL]
    counts: dict[str, Counter[int]] = {label: Counter() for label in order}
    for paper in papers:
        if paper.year is not None:
            counts[labels.get(paper.id, OTHER_LABEL)][paper.year] += 1
    return [ThemeYears(label=label, counts_by_year=dict(sorted(c.items()))) for label, c in counts.items() if c]


def _summary_text(name: str, recent: RecentWork, themes: Sequence[ThemeGroup], texts: Sequence[str]) -> str:
    theme_count = len([t for t in themes if t.label != OTHER_LABEL])
    head = f"Recent work of {name}: {recent.describe}, published {_span(recent.papers)}"
    if theme_count > 1:
        head += f", in {theme_count} themes"
    lines = [head + ":"]
    lines += [f"- {theme.label}: {text}" for theme, text in zip(themes, texts, strict=True)]
    return "\n".join(lines)


def stored_vectors(index: object, papers: Sequence[Paper]) -> dict[str, np.ndarray] | None:
    """The embeddings the index already holds for ``papers`` (nothing is encoded), or None
    when the index cannot give them all (then themes group by shared terms)."""
    lookup = stored_vectors_of(index)
    if lookup is None or not papers:
        return None
    found = lookup([p.id for p in papers])  # {} when the vector store is down
    if any(p.id not in found for p in papers):
        return None
    return {p.id: np.asarray(found[p.id], dtype=np.float64) for p in papers}


def build_summary(
    directory: PeopleDirectory,
    person: Person,
    *,
    today: date,
    since: int | None = None,
    chat_model: BaseChatModel | None = None,
    settings: Settings | None = None,
    background: TermStats | None = None,
    vectors: Mapping[str, np.ndarray] | None = None,
    display_name: str | None = None,
    extra_ids: Mapping[str, str] | None = None,
    linkage: Linkage = average_linkage,
) -> ScholarSummaryResult:
    """Profile and recent-work summary of one resolved ``person``.

    ``vectors`` (paper id -> embedding, for the person's papers) lets themes group by meaning;
    ``linkage`` is passed to ``group_into_themes``.
    """
    papers = directory.papers_of(person)
    background = background or background_of(directory)
    name = display_name or person.name
    recent = recent_work(papers, today, since)
    themes = group_into_themes(recent.papers, background, vectors=vectors, max_themes=MAX_THEMES, linkage=linkage)
    if chat_model is not None and settings is not None and themes:
        written = llm_texts(themes, name, chat_model, settings)
    else:
        written = extractive_texts(themes)
    numbers = {p.id: n for n, p in enumerate(written.papers, start=1)}
    theme_models = [Theme(label=t.label, citations=cited_numbers(text)) for t, text in zip(themes, written.texts, strict=True)]
    count, coauthors, links = coauthor_facts(directory, person)
    labels = assign_to_themes(papers, themes, background, vectors=vectors)
    return ScholarSummaryResult(
        scholar=ScholarIdentity(
            name=name, ids={**(extra_ids or {}), **person.ids}, affiliations=affiliations(person, today)
        ),
        summary=_summary_text(name, recent, themes, written.texts),
        mode=written.mode,
        themes=theme_models,
        papers=[Citation.from_paper(numbers[p.id], p, 1.0) for p in written.papers],
        coauthors=coauthors,
        topics=topics(papers, background),
        counts_by_year=dict(sorted(Counter(p.year for p in papers if p.year is not None).items())),
        window_note=recent.note,
        paper_count=len(papers),
        coauthor_count=count,
        coauthor_links=links,
        timeline=_timeline(papers, labels, themes),
        notice=written.notice,
        person_id=person.key,
    )


def summarize_scholar(
    index: PaperSource,
    settings: Settings,
    name: str,
    *,
    since: int | None = None,
    chat_model: BaseChatModel | None = None,
    roster: RosterLike | None = None,
    today: date | None = None,
    directory: PeopleDirectory | None = None,
    choose: bool = True,
) -> ScholarSummaryResult | AmbiguousScholarResult:
    """Resolve ``name`` and summarise that scholar, or list the candidates when ambiguous.

    ``directory`` (the index grouped into people) is built from ``index.iter_papers()`` when
    not given, with the roster's claims, and kept with its term statistics in
    ``settings.cache_dir`` for the next call (``retrieval.scholars.cache``). Themes use the embeddings the index stores for the
    papers when it has them. ``choose=False`` lists every candidate instead of answering for a
    dominant one (the baseline of ``bench/people.py``).
    """
    today = today or date.today()
    own_directory = directory is None
    if directory is None:
        directory = directory_for(index, roster_claims(roster), cache_dir=settings.cache_dir)
    found = resolve(directory, name, roster, choose=choose)
    if found.person is None:
        listed = found.candidates[:MAX_CANDIDATES]
        return AmbiguousScholarResult(
            query=name,
            candidates=[candidate(directory, p, today) for p in listed],
            more=len(found.candidates) - len(listed),
        )
    person = found.person
    background = background_of(directory, index, cache_dir=settings.cache_dir) if own_directory else None
    entry = roster.find(name) if roster is not None else None
    extra_ids: dict[str, str] = {}
    if entry is not None:
        extra_ids = {k: v for k, v in (("orcid", entry.orcid), ("openalex", entry.openalex_id)) if v}
    summary = build_summary(
        directory,
        person,
        today=today,
        since=since,
        chat_model=chat_model,
        settings=settings,
        background=background,
        vectors=stored_vectors(index, directory.papers_of(person)),
        display_name=entry.name if entry is not None else None,
        extra_ids=extra_ids,
    )
    return summary.model_copy(
        update={
            "others_with_this_name": len(found.others),
            "namesakes": [candidate(directory, p, today) for p in found.others[:MAX_NAMESAKES]],
        }
    )
