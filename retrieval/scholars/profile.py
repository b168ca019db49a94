"""Scholar summaries: resolve a name to one person, build the profile, summarise recent work.

Resolution (``resolve_person``)
-------------------------------
The index's author mentions are grouped into people first (``retrieval.scholars.people``: ids, then
co-author/affiliation evidence; namesakes stay apart). A query is then matched:

1. an ORCID or OpenAlex author id selects the people carrying it;
2. a roster entry (name, alias, arXiv name or id) selects the people carrying its ids, else
   its names are matched like a typed name, and id-less groups written exactly as one of the
   roster's names are taken as that person (the roster is the group's own statement);
3. a name matches every person with a compatible written name. People whose written name is
   the query itself (case and accents aside) win over merely compatible ones ("Zhao Zhang"
   over "Z. Zhang"), and people with a given name win over family-name-only mentions.

One person left: summarised. Several: ``AmbiguousScholarResult`` with a short profile of each
(never a blend). None: ``UnknownScholarError`` with close written names as suggestions.

Recent work
-----------
Papers of the last ``RECENT_MONTHS`` months before ``today`` (or from January 1st of
``since``). A paper dated only by year or month counts when any day of that period is in the
window. Fewer than ``MIN_RECENT`` papers there: the latest ``FALLBACK_RECENT`` papers are used
instead and ``window_note`` says so. The papers are grouped into themes
(``retrieval.scholars.themes``); each theme gets a sentence or two citing its papers, written by the
chat model under the citation rules of answers when one is configured, extractive otherwise.
"""

from __future__ import annotations

import calendar
import difflib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

import numpy as np

from prompts import Prompt, load_prompt
from retrieval.answers.attribution import EvidenceAttribution
from retrieval.answers.citations import validate_answer
from retrieval.answers.evidence import build_evidence, neutralise, strip_markup
from retrieval.answers.model_output import ReplyRejected, bounded_pieces, clean_reply, unusable_answer_reason
from retrieval.config import Settings
from retrieval.errors import UnknownScholarError
from retrieval.records.names import parse_name
from retrieval.records.paper import Paper, fold, normalize_openalex_id, normalize_orcid
from retrieval.results import (
    AmbiguousScholarResult,
    AnswerMode,
    Citation,
    Coauthor,
    CoauthorLink,
    ScholarCandidate,
    ScholarIdentity,
    ScholarSummaryResult,
    SearchHit,
    Theme,
    ThemeYears,
)
from retrieval.scholars.people import (
    Claim,
    PeopleDirectory,
    Person,
    claims_of,
    directory_for,
    same_written_name,
    stored_vectors_of,
)
from retrieval.scholars.themes import (
    OTHER_LABEL,
    TermStats,
    ThemeGroup,
    assign_to_themes,
    extractive_theme_text,
    group_into_themes,
    salient_terms,
)

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

RECENT_MONTHS = 24
MIN_RECENT = 3
FALLBACK_RECENT = 5
AFFILIATION_YEARS = 10
TOP_COAUTHORS = 10
MAX_CANDIDATES = 10
MAX_TOPICS = 10
MAX_THEMES = 5


class RosterEntry(Protocol):
    name: str
    orcid: str | None
    openalex_id: str | None

    @property
    def names(self) -> list[str]: ...


class RosterLike(Protocol):
    def find(self, query: str) -> RosterEntry | None: ...


class PaperSource(Protocol):
    """What summaries need from the index."""

    def iter_papers(self) -> Iterable[Paper]: ...


# --- resolution --------------------------------------------------------------------------------

# One candidate dominates when it has at least this many papers and this many times the next one's.
DOMINANT_MIN_PAPERS = 3
DOMINANT_RATIO = 2.0
MAX_NAMESAKES = 5


def _match_tier(person: Person, queries: Sequence[str]) -> int:
    """3: a written name is the query (either order, case and accents aside); 2: compatible with
    a given name; 1: family name only."""
    if any(same_written_name(n, q) for n in person.names for q in queries):
        return 3
    if any(parse_name(n).given for n in person.names):
        return 2
    return 1


def _by_ids(directory: PeopleDirectory, orcid: str | None, openalex: str | None) -> list[Person]:
    found: list[Person] = []
    for kind, value in (("orcid", orcid), ("openalex", openalex)):
        if value:
            found += [p for p in directory.with_id(kind, value) if p not in found]
    return found


def suggestions(directory: PeopleDirectory, name: str, limit: int = 5) -> list[str]:
    """Written names close to ``name`` (difflib over folded names), most similar first."""
    by_fold: dict[str, str] = {}
    for written in directory.written_names():
        by_fold.setdefault(fold(written), written)
    close = difflib.get_close_matches(fold(name), list(by_fold), n=limit, cutoff=0.6)
    return [by_fold[c] for c in close]


@dataclass(frozen=True)
class Resolution:
    """What a query names: ``person`` when one is chosen, else ``candidates`` to pick from.

    ``others``: the other people written with the same name, when one was chosen over them.
    """

    person: Person | None
    candidates: list[Person]
    others: list[Person]


def _dominant(matches: Sequence[Person]) -> Person | None:
    """The roster's scholar, or a candidate with clearly more papers than the next."""
    claimed = [p for p in matches if p.claimed_by]
    if len(claimed) == 1:
        return claimed[0]
    ranked = sorted(matches, key=lambda p: -len(p.paper_ids))
    top, second = len(ranked[0].paper_ids), len(ranked[1].paper_ids)
    if top >= DOMINANT_MIN_PAPERS and top >= DOMINANT_RATIO * second:
        return ranked[0]
    return None


def resolve(directory: PeopleDirectory, name: str, roster: RosterLike | None = None, *, choose: bool = True) -> Resolution:
    """The person ``name`` denotes (a name, alias, ORCID, OpenAlex author id or ``person:`` id).

    With ``choose`` (the default), a dominant candidate (``_dominant``) is chosen over comparable
    namesakes, who are returned as ``others``; without it any second candidate makes the answer
    a list (the baseline policy). Raises ``UnknownScholarError`` (with suggestions) when nobody
    matches.
    """
    query = " ".join(name.split())
    if query.lower().startswith("person:"):
        person = directory.find_person_id(query)
        if person is None:
            raise UnknownScholarError(query, [])
        return Resolution(person, [person], [])
    orcid = normalize_orcid(query)
    openalex = normalize_openalex_id(query)
    if openalex and not openalex.startswith("A"):
        openalex = None
    names = [query]
    entry = roster.find(query) if roster is not None else None
    if entry is not None:
        claimed = [p for p in directory.people if p.claimed_by == entry.name]
        if claimed:
            others = [p for p in _named(directory, [query, *entry.names]) if p is not claimed[0] and _match_tier(p, names) == 3]
            return Resolution(claimed[0], claimed, others)
        orcid, openalex = entry.orcid or orcid, entry.openalex_id or openalex
        names = list(dict.fromkeys([*entry.names, query]))
    if orcid or openalex:
        found = _by_ids(directory, orcid, openalex)
        if len(found) == 1 or (found and not choose):
            return Resolution(found[0] if len(found) == 1 else None, found, [])
        if found:  # several people carry the id (an ORCID over two OpenAlex profiles): the largest
            found.sort(key=lambda p: -len(p.paper_ids))
            return Resolution(found[0], found, found[1:])
        if entry is None:
            raise UnknownScholarError(query, [])
    matches = _named(directory, names)
    if not matches and "," not in query:  # a family name with a particle: "Del Maestro", "van Gool"
        matches = directory.compatible_with(query + ",")
    if not matches:
        raise UnknownScholarError(query, suggestions(directory, query))
    best = max(_match_tier(p, names) for p in matches)
    matches = sorted((p for p in matches if _match_tier(p, names) == best), key=lambda p: (-len(p.paper_ids), p.name))
    if len(matches) == 1:
        return Resolution(matches[0], matches, [])
    # only a spelled-out name chooses: "Z. Zhang" may be any of them
    spelled = best == 3 or any(parse_name(written).has_full_given for written in names)
    chosen = _dominant(matches) if choose and best >= 2 and spelled else None
    if chosen is None:
        return Resolution(None, matches, [])
    return Resolution(chosen, matches, [p for p in matches if p is not chosen])


def _named(directory: PeopleDirectory, names: Sequence[str]) -> list[Person]:
    """Everyone compatible with one of ``names``."""
    matches: list[Person] = []
    for written in names:
        matches += [p for p in directory.compatible_with(written) if p not in matches]
    return matches


def resolve_person(
    directory: PeopleDirectory, name: str, roster: RosterLike | None = None, *, choose: bool = True
) -> Person | list[Person]:
    """The one person ``name`` denotes, or every candidate when several are comparable (best
    first). Raises ``UnknownScholarError`` (with suggestions) when nobody matches."""
    found = resolve(directory, name, roster, choose=choose)
    return found.person if found.person is not None else found.candidates


# --- profile facts -----------------------------------------------------------------------------


def _period_end(published: str | None) -> date | None:
    """Last day of the period a date string names ("2024" -> 2024-12-31)."""
    if not published:
        return None
    parts = [int(x) for x in published.split("-")]
    year = parts[0]
    month = parts[1] if len(parts) > 1 else 12
    day = parts[2] if len(parts) > 2 else calendar.monthrange(year, month)[1]
    return date(year, month, min(day, calendar.monthrange(year, month)[1]))


def _months_before(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


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
        end = _period_end(mention.published)
        if end is not None and end.year < today.year - years:
            break
        folded_known = {fold(a) for a in current + previous}
        previous += [a for a in mention.author.affiliations if fold(a) not in folded_known]
    return {"current": current, "previous": previous}


def topics(papers: Sequence[Paper], background: TermStats, limit: int = MAX_TOPICS) -> list[str]:
    """Most frequent categories/topics, then the phrases that set the papers apart."""
    counts = Counter(c for p in papers for c in p.categories)
    found: list[str] = [c for c, n in counts.most_common() if n >= 2 or len(papers) < 3][: limit // 2]
    for term in salient_terms(papers, background, limit=limit):
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
    coauthors = [Coauthor(name=p.name, shared=n, person_id=p.key) for p, (_, n) in zip(people, ranked)]
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


# --- recent work -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecentWork:
    papers: list[Paper]
    note: str | None
    describe: str  # "3 papers in the 24 months since March 2024", "the latest 5 papers"


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
    inside = [p for p in papers if (end := _period_end(p.published)) is not None and end >= start]
    if len(inside) >= MIN_RECENT or len(inside) == len(papers):
        noun = "paper" if len(inside) == 1 else "papers"
        return RecentWork(inside, None, f"{len(inside)} {noun} {window}")
    latest = list(papers[:FALLBACK_RECENT])
    if len(latest) == len(papers):
        shown = "the only indexed paper" if len(latest) == 1 else f"all {len(latest)} indexed papers"
    else:
        shown = f"the latest {len(latest)} papers"
    counted = {0: "No paper falls", 1: "Only 1 paper falls"}.get(len(inside), f"Only {len(inside)} papers fall")
    note = f"{counted} {window}; showing {shown} instead ({_span(latest)})."
    return RecentWork(latest, note, shown)


def _numbering(themes: Sequence[ThemeGroup]) -> dict[str, int]:
    numbers: dict[str, int] = {}
    for theme in themes:
        for paper in theme.papers:
            numbers.setdefault(paper.id, len(numbers) + 1)
    return numbers


@dataclass
class ThemeTexts:
    """Per-theme text with final citation numbers, and the papers behind those numbers."""

    texts: list[str]
    papers: list[Paper]  # papers[n - 1] is citation [n]
    mode: AnswerMode
    notice: str | None = None


def extractive_texts(themes: Sequence[ThemeGroup]) -> ThemeTexts:
    numbers = _numbering(themes)
    ordered = sorted({p.id: p for t in themes for p in t.papers}.values(), key=lambda p: numbers[p.id])
    return ThemeTexts([extractive_theme_text(t, numbers) for t in themes], ordered, "extractive")


# --- LLM-written themes ------------------------------------------------------------------------

_THEME_LINE = re.compile(r"^\s*[*_#>\-\s]*theme\s+(\d{1,2})\s*[:.)\-–—]\s*", re.IGNORECASE)
_CITE = re.compile(r"\[(\d+)\]")


@lru_cache(maxsize=1)
def _system_prompt() -> Prompt:
    return load_prompt("scholar_themes", required=set())


@lru_cache(maxsize=1)
def _user_prompt() -> Prompt:
    return load_prompt("scholar_themes_user", required={"boundary", "scholar", "themes", "records"})


def _echoes_label(text: str, label: str) -> bool:
    """True when a theme's sentences say nothing but the theme's own label."""
    said = set(fold(_CITE.sub(" ", text)).split())
    return not said or said <= set(fold(label).split()) | {"theme", "papers", "paper", "work", "on", "and"}


def _theme_listing(themes: Sequence[ThemeGroup], numbers: Mapping[str, int], boundary: str) -> str:
    lines = []
    for k, theme in enumerate(themes, start=1):
        refs = ", ".join(f"[{numbers[p.id]}]" for p in theme.papers)
        lines.append(f"THEME {k}: {neutralise(theme.label, boundary)} (records {refs})")
    return "\n".join(lines)


def llm_texts(
    themes: Sequence[ThemeGroup], scholar: str, chat_model: BaseChatModel, settings: Settings
) -> ThemeTexts:
    """Theme sentences written by the model, validated like answers; extractive on failure.

    Lines of the model's reply start ``THEME k:``. Invalid ``[n]`` are removed and sentences
    left without a valid citation dropped (``retrieval.answers.citations.validate_answer``); a theme
    whose every sentence was dropped falls back to its extractive sentence.
    """
    from langchain_core.messages import HumanMessage, SystemMessage

    from retrieval.answers.llm import LLM_FAILURES, describe_failure, model_attempts

    fallback = extractive_texts(themes)
    numbers = _numbering(themes)
    ordered = fallback.papers
    evidence = build_evidence([SearchHit(paper=p, score=1.0) for p in ordered])
    system_text = _system_prompt().format()  # the same for every scholar: servers cache it
    user_text = _user_prompt().format(
        boundary=evidence.boundary,
        scholar=neutralise(scholar, evidence.boundary),
        themes=_theme_listing(themes, numbers, evidence.boundary),
        records=evidence.render(),
    )
    try:  # streamed, so a long prompt on a slow server is bounded by the deadline, not a read timeout
        pieces = bounded_pieces(chat_model.stream([SystemMessage(system_text), HumanMessage(user_text)]), settings)
        raw = clean_reply("".join(pieces), evidence.boundary)
    except LLM_FAILURES as exc:
        reason = describe_failure(exc, model_attempts(chat_model, settings))
        fallback.notice = f"LLM unreachable ({reason}): extractive theme summaries instead."
        return fallback
    except ReplyRejected as rejected:
        fallback.notice = f"The model's reply was unusable ({rejected.reason}): extractive theme summaries instead."
        return fallback
    attribution = EvidenceAttribution.from_papers(ordered)
    report = validate_answer(raw, len(ordered), forbidden=[evidence.boundary], protected=[system_text],
                             attribution=attribution)
    if (reason := unusable_answer_reason(report, attribution)) is not None:
        fallback.notice = f"The model's reply was unusable ({reason}): extractive theme summaries instead."
        return fallback
    if report.abstained:
        fallback.notice = "The model's theme summaries cited no record validly: extractive summaries instead."
        return fallback
    per_theme: dict[int, list[str]] = {}
    current: int | None = None
    for line in strip_markup(report.text, evidence.boundary).splitlines():
        match = _THEME_LINE.match(line)
        if match:
            current = int(match.group(1))
            line = line[match.end() :]
        if current is not None and 1 <= current <= len(themes) and line.strip():
            per_theme.setdefault(current, []).append(line.strip())
    for k in list(per_theme):  # "THEME 2: Graph neural networks [3]." only echoes the label
        if _echoes_label(" ".join(per_theme[k]), themes[k - 1].label):
            del per_theme[k]
    if not per_theme:
        fallback.notice = "The model's reply did not follow the THEME format: extractive summaries instead."
        return fallback
    # report.order maps the validated numbers back to evidence numbers; extend it for themes the
    # model left out, which keep their extractive sentence with numbers continuing after.
    papers = [ordered[n - 1] for n in report.order]
    final_number = {p.id: i for i, p in enumerate(papers, start=1)}
    texts: list[str] = []
    for k, theme in enumerate(themes, start=1):
        if k in per_theme:
            texts.append(" ".join(per_theme[k]))
            continue
        for paper in theme.papers:
            if paper.id not in final_number:
                papers.append(paper)
                final_number[paper.id] = len(papers)
        texts.append(extractive_theme_text(theme, final_number))
    return ThemeTexts(texts, papers, "llm")


# --- the summary -------------------------------------------------------------------------------


@lru_cache(maxsize=2)
def background_of(directory: PeopleDirectory) -> TermStats:
    """Term statistics of every paper of ``directory`` (cached with it: directories are
    rebuilt, not changed, when the index changes)."""
    return TermStats.from_papers(directory.papers.values())


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
    lines += [f"- {theme.label}: {text}" for theme, text in zip(themes, texts)]
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
) -> ScholarSummaryResult:
    """Profile and recent-work summary of one resolved ``person``.

    ``vectors`` (paper id -> embedding, for the person's papers) lets themes group by meaning.
    """
    papers = directory.papers_of(person)
    background = background or background_of(directory)
    name = display_name or person.name
    recent = recent_work(papers, today, since)
    themes = group_into_themes(recent.papers, background, vectors=vectors, max_themes=MAX_THEMES)
    if chat_model is not None and settings is not None and themes:
        written = llm_texts(themes, name, chat_model, settings)
    else:
        written = extractive_texts(themes)
    numbers = {p.id: n for n, p in enumerate(written.papers, start=1)}
    theme_models = [
        Theme(label=t.label, citations=list(dict.fromkeys(int(n) for n in _CITE.findall(text))))
        for t, text in zip(themes, written.texts)
    ]
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


def roster_claims(roster: RosterLike | None) -> tuple[Claim, ...]:
    """The claims of every roster scholar (none for a roster that cannot list its entries)."""
    entries = getattr(roster, "list", None)
    return claims_of(entries()) if callable(entries) else ()


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
    not given, with the roster's claims. Themes use the embeddings the index stores for the
    papers when it has them. ``choose=False`` lists every candidate instead of answering for a
    dominant one (the baseline of ``bench/people.py``).
    """
    today = today or date.today()
    directory = directory or directory_for(index, roster_claims(roster))
    found = resolve(directory, name, roster, choose=choose)
    if found.person is None:
        listed = found.candidates[:MAX_CANDIDATES]
        return AmbiguousScholarResult(
            query=name,
            candidates=[candidate(directory, p, today) for p in listed],
            more=len(found.candidates) - len(listed),
        )
    person = found.person
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
