"""Keep the roster's publications up to date: fetch what is new, merge it, index it.

For every scholar on the roster, ``sync_roster`` asks each source for works since that
scholar's last *complete* fetch from that source (everything, up to a cap, the first time):

- **arXiv**: an author query on ``arxiv_name`` (else the name); arXiv matches names loosely, so
  only papers with an author whose name is compatible with one of the scholar's names are kept;
- **OpenAlex**: by OpenAlex author id, else ORCID, else a name search that must single out one
  profile whose name agrees (several plausible profiles -> skipped with a message saying how to
  pin one with ``--openalex``);
- **Crossref**: by ORCID only. Crossref's author search matches any string in the metadata,
  far too noisy to attribute works to a person, so a scholar without ORCID is skipped there.

Each scholar's works are deduplicated and ingested as one batch through ``ingest_papers``;
only after that batch is committed does the roster record the sync time for the sources that
answered completely. A source that fails is recorded in the report (the other sources go on,
and what it delivered before failing is kept); its sync time is not advanced, so the next run
asks again from the same point and duplicates fold into the existing records.

The report names the papers that are NEW in this sync (not in the index before it began), per
scholar and overall, for the follow alerts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from retrieval.config import Settings
from retrieval.errors import InputError, PaperbotError, SourceError, UnknownScholarError
from retrieval.ingest.pipeline import ingest_papers
from retrieval.records.merge import dedupe, same_paper
from retrieval.records.names import NameMatch, name_match, names_compatible
from retrieval.records.paper import Paper
from retrieval.results import ScholarSync, SkippedItem, SourceFailure, SyncEvent, SyncReport
from retrieval.storage.roster import Roster, Scholar

if TYPE_CHECKING:
    import httpx

    from retrieval.index.paper_index import PaperIndex
    from retrieval.sources.apis.arxiv import ArxivSource
    from retrieval.sources.apis.crossref import CrossrefSource
    from retrieval.sources.apis.openalex import OpenAlexSource
    from retrieval.sources.fetched import PaperStream
    from retrieval.sources.providers.openalex import OpenAlexAuthor

#: Works fetched per scholar and source in one sync; the first sync of a prolific author stops here.
MAX_RESULTS = 500
#: Incremental fetches look back this far before the last sync: sources date works by
#: publication, and a work published last month may be registered only today.
OVERLAP = timedelta(days=90)
SOURCE_NAMES = ("arxiv", "openalex", "crossref")
SKIPS_REPORTED = 5


def _utc_now() -> datetime:
    return datetime.now(UTC)


# --- sources ------------------------------------------------------------------------------------


@dataclass
class SyncSources:
    """The connectors a sync uses; ``None`` leaves that source out."""

    arxiv: ArxivSource | None = None
    openalex: OpenAlexSource | None = None
    crossref: CrossrefSource | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        only: Iterable[str] = SOURCE_NAMES,
    ) -> SyncSources:
        """Connectors aimed at the configured base URLs (``only`` picks a subset)."""
        from retrieval.sources.apis.arxiv import ArxivSource
        from retrieval.sources.apis.crossref import CrossrefSource
        from retrieval.sources.apis.openalex import OpenAlexSource

        wanted = set(only)
        return cls(
            arxiv=ArxivSource(settings, client, sleep) if "arxiv" in wanted else None,
            openalex=OpenAlexSource(settings, client, sleep) if "openalex" in wanted else None,
            crossref=CrossrefSource(settings, client, sleep) if "crossref" in wanted else None,
        )

    def close(self) -> None:
        for source in (self.arxiv, self.openalex, self.crossref):
            if source is not None:
                source.http.close()


# --- report -------------------------------------------------------------------------------------


SyncProgress = Callable[[SyncEvent], None]


# --- choosing an OpenAlex profile ---------------------------------------------------------------


@dataclass
class ProfileChoice:
    """The OpenAlex profile a name search settled on; else the plausible ones (none or several)."""

    author_id: str | None
    plausible: list[OpenAlexAuthor] = field(default_factory=list)

    def problem(self, name: str) -> str:
        """Why no profile was chosen, naming the candidates."""
        if not self.plausible:
            return f"OpenAlex has no author profile whose name agrees with {name!r}."
        shown = "; ".join(describe_profile(author) for author in self.plausible[:5])
        return f"OpenAlex has {len(self.plausible)} profiles that could be {name!r}: {shown}."


def describe_profile(author: OpenAlexAuthor) -> str:
    """"A123 (Name; Institution; 42 works)" for choosing between namesakes."""
    where = ", ".join(author.current_institutions[:1])
    return f"{author.id} ({author.display_name}{'; ' + where if where else ''}; {author.works_count} works)"


def choose_openalex_profile(names: list[str], candidates: list[OpenAlexAuthor], *, orcid: str | None = None) -> ProfileChoice:
    """Pick the one OpenAlex profile that is this person, from a name search.

    A candidate is plausible when its display name (or an alternative name) agrees with one of
    ``names`` and, given an ``orcid``, its ORCID does not disagree. A unique STRONG agreement
    wins ("Adrian Del Maestro" over "A. Del Maestro"); several are ambiguous: no choice.
    """
    scored: list[tuple[NameMatch, OpenAlexAuthor]] = []
    for author in candidates:
        if orcid and author.orcid and author.orcid != orcid:
            continue
        theirs = [author.display_name, *author.alternative_names]
        best = max((name_match(mine, other) for mine in names for other in theirs), default=NameMatch.NONE)
        if best is not NameMatch.NONE:
            scored.append((best, author))
    strong = [author for strength, author in scored if strength is NameMatch.STRONG]
    pool = strong or [author for _, author in scored]
    if len(pool) == 1:
        return ProfileChoice(pool[0].id, pool)
    return ProfileChoice(None, pool)


# --- the sync -----------------------------------------------------------------------------------


def _since(last: str | None) -> date | None:
    if not last:
        return None
    try:
        when = datetime.fromisoformat(last)
    except ValueError:
        return None  # an unreadable mark means "fetch everything again": safe, dedupe absorbs it
    return (when - OVERLAP).date()


@dataclass
class _Fetch:
    """What one source produced for one scholar."""

    papers: list[Paper] = field(default_factory=list)
    complete: bool = False
    failure: SourceFailure | None = None
    notes: list[str] = field(default_factory=list)
    asked: bool = True  # False when the source was skipped for this scholar (see notes)


def written_by(paper: Paper, names: Sequence[str]) -> bool:
    """Whether some author of ``paper`` could be the person known by ``names``
    (``names_compatible``): arXiv's author search also returns other people's papers."""
    return any(names_compatible(mine, author.name) for mine in names for author in paper.authors)


def _drain(source: str, works: Callable[[], PaperStream], keep: Callable[[Paper], bool], cap: int) -> _Fetch:
    """Collect works until the stream ends or fails; what arrived before a failure is kept, and
    the items the stream could not use end the notes."""
    result = _Fetch()
    received = 0
    stream: PaperStream | None = None
    try:
        stream = works()
        for paper in stream:
            received += 1
            if keep(paper):
                result.papers.append(paper)
    except (SourceError, InputError) as exc:  # InputError: e.g. a deleted OpenAlex profile
        message = exc.user_message if isinstance(exc, SourceError) else str(exc)
        result.failure = SourceFailure(source=source, message=message, fetched_before_failure=len(result.papers))
        result.notes.extend(_skips(source, stream.skipped if stream is not None else []))
        return result
    dropped = received - len(result.papers)
    if dropped:
        result.notes.append(f"{source}: left out {dropped} work(s) with no author whose name agrees with the scholar's.")
    if received >= cap:
        result.notes.append(f"{source}: stopped at {cap} works; older works were not fetched.")
    result.notes.extend(_skips(source, stream.skipped))
    result.complete = True
    return result


class _ScholarFetcher:
    """Runs the three sources for one scholar."""

    def __init__(self, sources: SyncSources, scholar: Scholar, cap: int) -> None:
        self.sources = sources
        self.scholar = scholar
        self.cap = cap

    def plan(self) -> list[tuple[str, Callable[[], _Fetch]]]:
        steps: list[tuple[str, Callable[[], _Fetch]]] = []
        if self.sources.arxiv is not None:
            steps.append(("arxiv", self.arxiv))
        if self.sources.openalex is not None:
            steps.append(("openalex", self.openalex))
        if self.sources.crossref is not None:
            steps.append(("crossref", self.crossref))
        return steps

    def _since(self, source: str) -> date | None:
        return _since(self.scholar.last_synced.get(source))

    def _is_theirs(self, paper: Paper) -> bool:
        return written_by(paper, self.scholar.names)

    def arxiv(self) -> _Fetch:
        source = self.sources.arxiv
        assert source is not None
        query_name = self.scholar.arxiv_name or self.scholar.name
        since = self._since("arxiv")
        result = _drain("arxiv", lambda: source.by_author(query_name, since=since, max_results=self.cap),
                        self._is_theirs, self.cap)
        return result

    def openalex(self) -> _Fetch:
        source = self.sources.openalex
        assert source is not None
        since = self._since("openalex")
        scholar = self.scholar
        if scholar.openalex_id:
            author_id = scholar.openalex_id
            result = _drain("openalex", lambda: source.works_by_author(author_id, since=since, max_results=self.cap),
                            lambda _: True, self.cap)
        elif scholar.orcid:
            orcid = scholar.orcid
            result = _drain("openalex", lambda: source.works_by_orcid(orcid, since=since, max_results=self.cap),
                            lambda _: True, self.cap)
        else:
            try:
                candidates = source.find_authors(scholar.name).items
            except SourceError as exc:
                return _Fetch(failure=SourceFailure(source="openalex", message=exc.user_message))
            choice = choose_openalex_profile(scholar.names, candidates, orcid=scholar.orcid)
            if choice.author_id is None:
                message = f"openalex: skipped. {choice.problem(scholar.name)}"
                if choice.plausible:
                    message += (f' Pin the right one: `paperbot scholars remove "{scholar.name}"`, then '
                                f'`paperbot scholars add "{scholar.name}" --openalex ID`.')
                return _Fetch(notes=[message], asked=False)
            chosen = choice.author_id
            result = _drain("openalex", lambda: source.works_by_author(chosen, since=since, max_results=self.cap),
                            lambda _: True, self.cap)
            result.notes.insert(0, f"openalex: matched by name to profile {chosen}.")
        return result

    def crossref(self) -> _Fetch:
        source = self.sources.crossref
        assert source is not None
        if not self.scholar.orcid:
            return _Fetch(asked=False, notes=[
                "crossref: skipped, no ORCID on the roster (Crossref's name search is too noisy to attribute works "
                "to a person); re-add the scholar with --orcid to include Crossref."
            ])
        orcid = self.scholar.orcid
        since = self._since("crossref")
        result = _drain("crossref", lambda: source.works_by_orcid(orcid, since=since, max_results=self.cap),
                        lambda _: True, self.cap)
        return result


def _skips(source: str, skipped: list[SkippedItem]) -> list[str]:
    if not skipped:
        return []
    shown = "; ".join(f"{item.item}: {item.reason}" for item in skipped[:SKIPS_REPORTED])
    more = f" and {len(skipped) - SKIPS_REPORTED} more" if len(skipped) > SKIPS_REPORTED else ""
    return [f"{source}: skipped {len(skipped)} unusable item(s): {shown}{more}."]


class _NewTracker:
    """Which records are new in this sync, following id changes when later merges re-key them."""

    def __init__(self) -> None:
        self.new_ids: set[str] = set()
        self.renamed: dict[str, str] = {}

    def classify(self, before: list[str], after: list[str]) -> tuple[bool, str | None]:
        """(is new in this sync, its id now) for one incoming paper."""
        now_id = after[0] if after else None
        is_new = not before or all(old in self.new_ids for old in before)
        if now_id is not None:
            for old in before:
                if old != now_id:
                    self.renamed[old] = now_id
            if is_new:
                self.new_ids.add(now_id)
        return is_new, now_id

    def current(self, paper_id: str) -> str:
        seen: set[str] = set()
        while paper_id in self.renamed and paper_id not in seen:
            seen.add(paper_id)
            paper_id = self.renamed[paper_id]
        return paper_id


def sync_roster(
    settings: Settings,
    index: PaperIndex,
    *,
    sources: SyncSources | None = None,
    progress: SyncProgress | None = None,
    now: Callable[[], datetime] = _utc_now,
    names: Iterable[str] | None = None,
    max_results: int = MAX_RESULTS,
) -> SyncReport:
    """Fetch, merge and index new works of every roster scholar (or only ``names``)."""
    roster = Roster.load(settings)
    scholars = roster.list()
    if names is not None:
        scholars = [roster.get(name) for name in names]
    owned = sources is None
    sources = sources or SyncSources.from_settings(settings)
    started = now()
    report = SyncReport(started_at=started.isoformat(timespec="seconds"))
    tracker = _NewTracker()
    emit = progress or (lambda event: None)
    try:
        for position, scholar in enumerate(scholars, start=1):
            event = _emitter(emit, scholar.name, position, len(scholars))
            event("start")
            report.scholars.append(_sync_one(index, roster, scholar, sources, tracker, event, now, max_results))
            event("done", count=len(report.scholars[-1].new))
    finally:
        if owned:
            sources.close()
    for entry in report.scholars:
        entry.new = list(dict.fromkeys(tracker.current(pid) for pid in entry.new))
        entry.updated = [pid for pid in dict.fromkeys(tracker.current(p) for p in entry.updated) if pid not in entry.new]
    report.finished_at = now().isoformat(timespec="seconds")
    index.store.set_meta("last_sync", report.finished_at)
    return report


def _emitter(emit: SyncProgress, name: str, position: int, total: int) -> Callable[..., None]:
    """``event(stage, source=None, count=0, message="")`` for one scholar's progress events."""

    def event(stage: str, source: str | None = None, count: int = 0, message: str = "") -> None:
        emit(SyncEvent(name, position, total, stage, source, count, message))

    return event


def _record_ids(index: PaperIndex, paper: Paper) -> list[str]:
    """Ids of the indexed records that are this paper (candidates confirmed by ``same_paper``)."""
    # find_matches also returns same-title candidates by other people: only confirmed ones count
    return [match.id for match in index.find_matches(paper) if same_paper(match, paper)]


def _sync_one(
    index: PaperIndex,
    roster: Roster,
    scholar: Scholar,
    sources: SyncSources,
    tracker: _NewTracker,
    event: Callable[..., None],
    now: Callable[[], datetime],
    cap: int,
) -> ScholarSync:
    """Fetch every source for one scholar, ingest the batch, then advance the sync marks."""
    outcome = ScholarSync(name=scholar.name)
    fetched: list[Paper] = []
    complete: list[str] = []
    fetch_started = now().isoformat(timespec="seconds")
    for source, run in _ScholarFetcher(sources, scholar, cap).plan():
        result = run()
        fetched.extend(result.papers)
        outcome.notes.extend(result.notes)
        for note in result.notes:
            event("note", source, message=note)
        if result.asked:
            outcome.fetched[source] = len(result.papers)
        if result.failure is not None:
            outcome.errors.append(result.failure)
            event("error", source, len(result.papers), result.failure.message)
        elif result.asked:
            event("source", source, len(result.papers))
        if result.complete:
            complete.append(source)
    unique = dedupe(fetched)
    before = [_record_ids(index, paper) for paper in unique]
    ingested = ingest_papers(index, unique)
    outcome.unchanged = len(ingested.unchanged)
    for paper, previous in zip(unique, before, strict=True):
        after = _record_ids(index, paper)
        is_new, now_id = tracker.classify(previous, after)
        if now_id is None:
            continue
        if is_new:
            outcome.new.append(now_id)
        elif now_id in ingested.updated:
            outcome.updated.append(now_id)
    for skipped in ingested.skipped:
        outcome.notes.append(f"not indexed: {skipped.item}: {skipped.reason}")
    if complete:
        try:
            roster.update(scholar.name, lambda entry: entry.last_synced.update(dict.fromkeys(complete, fetch_started)))
            outcome.completed = complete
        except UnknownScholarError:
            outcome.notes.append("removed from the roster during the sync; its sync time was not recorded.")
        except PaperbotError as exc:
            outcome.notes.append(f"could not record the sync time ({exc}); the next sync will fetch these works again.")
    return outcome
