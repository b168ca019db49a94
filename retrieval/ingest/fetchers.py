"""One-off fetches from arXiv, OpenAlex and Crossref (`paperbot ingest arxiv|openalex|crossref`).

``plan_fetch`` turns a ``FetchRequest`` into a ``FetchPlan``: the source's connector, built
from the settings, and the works to ask it for. Exactly one way of selecting works is used:

    arxiv     author NAME | query Q | ids ID...
    openalex  author ID (a name is searched: one profile must agree) | orcid | dois | query
    crossref  dois | orcid | query

``collect`` drains the plan's works; a source that fails part-way keeps what it delivered
(``fetch_and_index`` indexes that part, then the caller reports the failure). An arXiv author
search also matches other people's names: only works with an author whose name agrees are
kept, by the same rule as a sync (``sync.written_by``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING

from retrieval.config import Settings
from retrieval.errors import InputError, SourceError
from retrieval.ingest.sync import SOURCE_NAMES, choose_openalex_profile, written_by
from retrieval.records.paper import Paper, normalize_openalex_id, normalize_orcid
from retrieval.results import FetchResult, IngestReport, SkippedItem

if TYPE_CHECKING:
    from retrieval.sources.apis.arxiv import ArxivSource
    from retrieval.sources.apis.crossref import CrossrefSource
    from retrieval.sources.apis.openalex import OpenAlexSource
    from retrieval.sources.fetched import Fetched, PaperStream

LABELS = {"arxiv": "arXiv", "openalex": "OpenAlex", "crossref": "Crossref"}
DEFAULT_MAX_RESULTS = 200
#: The selectors each source accepts (``FetchRequest`` field names).
SELECTORS = {
    "arxiv": ("author", "query", "ids"),
    "openalex": ("author", "orcid", "dois", "query"),
    "crossref": ("dois", "orcid", "query"),
}

#: ``bars(description, total)``: a progress display for one phase (fetching, indexing), yielding
#: ``update(done, total)``; the CLI passes ``CliContext.progress``.
ProgressBars = Callable[[str, "int | None"], AbstractContextManager[Callable[[int, "int | None"], None]]]
#: How fetched works are indexed: the facade's ``Assistant.library.ingest_papers`` (under the writer lock).
Ingest = Callable[..., IngestReport]


@dataclass(frozen=True)
class FetchRequest:
    """What to fetch from one source: one selector (author, query, ids, orcid or dois) and limits."""

    source: str
    author: str | None = None
    query: str | None = None
    ids: tuple[str, ...] = ()
    orcid: str | None = None
    dois: tuple[str, ...] = ()
    since: date | None = None  # author/ORCID forms: only works from this date
    max_results: int = DEFAULT_MAX_RESULTS

    def selector(self) -> str:
        """The one selector given, checked against the source; an ``InputError`` otherwise."""
        if self.source not in SELECTORS:
            raise InputError(f"Unknown source {self.source!r}.", hint="Use one of: " + ", ".join(SOURCE_NAMES))
        given = [name for name in ("author", "query", "ids", "orcid", "dois") if getattr(self, name)]
        allowed = SELECTORS[self.source]
        if len(given) != 1 or given[0] not in allowed:
            raise InputError(f"Say what to fetch from {LABELS[self.source]} in exactly one way.",
                             hint="One of: " + ", ".join(f"--{name.rstrip('s')}" for name in allowed))
        return given[0]


@dataclass
class FetchPlan:
    """The works to fetch, the connector that yields them and what the user is told."""

    source: str
    what: str  # "arXiv papers of 'Adrian Del Maestro'"
    connector: ArxivSource | OpenAlexSource | CrossrefSource
    works: Callable[[], Iterator[Paper]] = lambda: iter(())
    notes: list[str] = field(default_factory=list)  # filled while the works are drained
    lookups: list[SkippedItem] = field(default_factory=list)  # DOIs the source does not know
    unusable: list[SkippedItem] = field(default_factory=list)  # items the source's calls could not use

    @property
    def label(self) -> str:
        return LABELS[self.source]

    def skipped(self) -> list[SkippedItem]:
        """What the source could not deliver: unknown DOIs, then the items its calls could not use."""
        return [*self.lookups, *self.unusable]

    def delivering(self, outcome: PaperStream | Fetched[Paper]) -> Iterator[Paper]:
        """The papers of one call's outcome; what the call could not use joins ``unusable`` once
        the papers are drained or the stream fails."""
        try:
            yield from outcome
        finally:
            self.unusable.extend(outcome.skipped)

    def close(self) -> None:
        self.connector.http.close()


@dataclass
class Collected:
    """The works a plan delivered, and the source's error when it stopped part-way."""

    papers: list[Paper]
    failure: SourceError | None = None


def plan_fetch(settings: Settings, request: FetchRequest) -> FetchPlan:
    """The plan for ``request`` (may ask OpenAlex which profile an author name is)."""
    selector = request.selector()
    if selector == "orcid":  # checked before any connection is opened
        request = replace(request, orcid=_orcid(str(request.orcid)))
    return _PLANS[request.source](settings, request, selector)


def collect(plan: FetchPlan, progress: Callable[[int], None] | None = None) -> Collected:
    """Drain the plan's works (``progress(count)`` after each); a ``SourceError`` ends it, keeping
    what arrived before. The connector is closed either way."""
    papers: list[Paper] = []
    failure: SourceError | None = None
    try:
        for paper in plan.works():
            papers.append(paper)
            if progress is not None:
                progress(len(papers))
    except SourceError as exc:
        failure = exc
    finally:
        plan.close()
    return Collected(papers, failure)


def fetch_and_index(settings: Settings, request: FetchRequest, ingest: Ingest,
                    bars: ProgressBars | None = None) -> FetchResult:
    """Plan, fetch and index: ``ingest(papers, progress=update)`` indexes what arrived, even when
    the source failed part-way; the report's skips start with what the source could not deliver."""
    bars = bars or _no_bars
    plan = plan_fetch(settings, request)
    with bars(f"Fetching {plan.what}", None) as update:
        collected = collect(plan, lambda count: update(count, None))
    papers, report = collected.papers, IngestReport()
    if papers:
        with bars(f"Indexing {len(papers)} work(s)", len(papers)) as update:
            report = ingest(papers, progress=update)
    report.skipped = [*plan.skipped(), *report.skipped]
    return FetchResult(source=plan.source, label=plan.label, what=plan.what, fetched=len(papers), report=report,
                       notes=plan.notes, failure=collected.failure)


@contextmanager
def _no_bars(description: str, total: int | None) -> Iterator[Callable[[int, int | None], None]]:
    yield lambda done, total: None


# --- one plan per source -------------------------------------------------------------------------


def _arxiv(settings: Settings, request: FetchRequest, selector: str) -> FetchPlan:
    from retrieval.sources.apis.arxiv import ArxivSource

    source = ArxivSource(settings)
    if selector == "author":
        name = str(request.author)
        plan = FetchPlan("arxiv", f"arXiv papers of {name!r}", source)
        plan.works = lambda: _by_author(source, name, request, plan)
        return plan
    if selector == "query":
        plan = FetchPlan("arxiv", f"arXiv search {request.query!r}", source)
        plan.works = lambda: plan.delivering(source.search(str(request.query), max_results=request.max_results))
        return plan
    plan = FetchPlan("arxiv", "arXiv ids", source)
    plan.works = lambda: plan.delivering(source.by_ids(list(request.ids)))
    return plan


def _by_author(source: ArxivSource, name: str, request: FetchRequest, plan: FetchPlan) -> Iterator[Paper]:
    """arXiv's author search, keeping the works with an author whose name agrees with ``name``."""
    dropped = 0
    for paper in plan.delivering(source.by_author(name, since=request.since, max_results=request.max_results)):
        if written_by(paper, [name]):
            yield paper
        else:
            dropped += 1
    if dropped:
        plan.notes.append(f"Left out {dropped} arXiv result(s) with no author whose name agrees with {name!r}.")


def _openalex(settings: Settings, request: FetchRequest, selector: str) -> FetchPlan:
    from retrieval.sources.apis.openalex import OpenAlexSource

    source = OpenAlexSource(settings)
    since, cap = request.since, request.max_results
    if selector == "author":
        try:
            author_id = _openalex_author(source, str(request.author))
        except BaseException:
            source.http.close()
            raise
        plan = FetchPlan("openalex", f"OpenAlex works of {author_id}", source)
        plan.works = lambda: plan.delivering(source.works_by_author(author_id, since=since, max_results=cap))
        return plan
    if selector == "orcid":
        orcid = str(request.orcid)
        plan = FetchPlan("openalex", f"OpenAlex works of ORCID {orcid}", source)
        plan.works = lambda: plan.delivering(source.works_by_orcid(orcid, since=since, max_results=cap))
        return plan
    if selector == "dois":
        plan = FetchPlan("openalex", "OpenAlex DOIs", source)
        plan.works = lambda: _doi_lookup(source.work_by_doi, request.dois, plan)
        return plan
    plan = FetchPlan("openalex", f"OpenAlex search {request.query!r}", source)
    plan.works = lambda: plan.delivering(source.search(str(request.query), max_results=cap))
    return plan


def _openalex_author(source: OpenAlexSource, value: str) -> str:
    """An OpenAlex author id: the id itself, or the one profile a name search finds (as a sync chooses)."""
    bare = normalize_openalex_id(value)
    if bare and bare.startswith("A"):
        return bare
    choice = choose_openalex_profile([value], source.find_authors(value).items)
    if choice.author_id is None:
        raise InputError(choice.problem(value), hint="Pass the OpenAlex author id: paperbot ingest openalex --author A...")
    return choice.author_id


def _crossref(settings: Settings, request: FetchRequest, selector: str) -> FetchPlan:
    from retrieval.sources.apis.crossref import CrossrefSource

    source = CrossrefSource(settings)
    if selector == "orcid":
        orcid = str(request.orcid)
        plan = FetchPlan("crossref", f"Crossref works of ORCID {orcid}", source)
        plan.works = lambda: plan.delivering(
            source.works_by_orcid(orcid, since=request.since, max_results=request.max_results))
        return plan
    if selector == "dois":
        plan = FetchPlan("crossref", "Crossref DOIs", source)
        plan.works = lambda: _doi_lookup(source.work_by_doi, request.dois, plan)
        return plan
    plan = FetchPlan("crossref", f"Crossref search {request.query!r}", source)
    plan.works = lambda: plan.delivering(source.search(str(request.query), max_results=request.max_results))
    return plan


def _doi_lookup(lookup: Callable[[str], Fetched[Paper] | None], dois: Sequence[str],
                plan: FetchPlan) -> Iterator[Paper]:
    """The work of each DOI; unknown DOIs join ``plan.lookups``, unusable works ``plan.unusable``."""
    for doi in dois:
        fetched = lookup(doi)
        if fetched is None:
            plan.lookups.append(SkippedItem(f"DOI {doi}", f"{plan.label} does not know this DOI"))
        else:
            yield from plan.delivering(fetched)


def _orcid(value: str) -> str:
    orcid = normalize_orcid(value)
    if orcid is None:
        raise InputError(f"{value!r} is not an ORCID.", hint="An ORCID looks like 0000-0002-1825-0097.")
    return orcid


_PLANS: dict[str, Callable[[Settings, FetchRequest, str], FetchPlan]] = {
    "arxiv": _arxiv, "openalex": _openalex, "crossref": _crossref,
}
