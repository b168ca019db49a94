"""What the core hands to the doors: search hits, cited answers, scholar profiles, experts.

These are the public contracts. ``--json`` output of the CLI is exactly ``model_dump()`` of
the ``*Result`` models here (see the issue contracts); the Slack layer renders the same
objects as Block Kit. Change them only additively.

Sections: questions and answers (filters, hits, citations, answers and their stream events),
scholars and collaborators, ingests, fetches and syncs, the roster and follows, the index's
statistics. The doors import these, ``retrieval.assistant``, ``retrieval.errors`` and
``retrieval.config``, and nothing else of the core (``tests/test_architecture.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, computed_field, field_validator

from retrieval.records.paper import (
    Paper,
    clean_text,
    format_authors,
    normalize_openalex_id,
    normalize_orcid,
    unique_clean,
)
from retrieval.text import fold

if TYPE_CHECKING:
    from retrieval.errors import SourceError


# --- what validation and parsing removed, as the doors report it ---------------------------------


@dataclass(frozen=True)
class SkippedItem:
    """One item of a document that produced no paper (or, in warnings, lost a field)."""

    item: str  # what it was: "entry 'smith2020' (line 120)", "line 17", "record 3 (oai:...)"
    reason: str  # why, specifically: "no title", "unbalanced braces", ...


@dataclass(frozen=True)
class DroppedSentence:
    text: str
    # "uncited" | "invalid citation only" | "prompt leak" | "wrong citation" | "wrong author" |
    # "says nothing" | "unsupported" (retrieval.answers.citations, .attribution)
    reason: str


@dataclass(frozen=True)
class ModelProbe:
    """What ``retrieval.answers.model_probe.probe_model`` measured (``paperbot doctor``'s
    ``model``); None where it could not be measured. Seconds and rates are rounded."""

    configured: bool
    reachable: bool | None = None
    model: str | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    first_token_seconds: float | None = None
    reply_tokens: int | None = None
    seconds: float | None = None
    prompt_tokens_per_second: float | None = None
    generation_tokens_per_second: float | None = None
    budget_first_token_seconds: float | None = None  # a prompt of the budget's size, at the measured speed
    typical_answer_seconds: float | None = None  # that, plus a typical answer
    fits: bool | None = None
    advice: str | None = None


@dataclass(frozen=True)
class ValidationReport:
    """The validated answer plus what validation removed (kept for tests and the bench)."""

    text: str  # final text; citations renumbered 1..m. Empty when abstained.
    order: tuple[int, ...]  # order[i] = evidence number behind final citation [i + 1]
    abstained: bool
    reason: str | None = None  # why it abstained: "refusal" | "no valid citation" | "empty"
    dropped: tuple[DroppedSentence, ...] = ()
    invalid_citations: tuple[int, ...] = ()  # numbers that pointed to no evidence, in order seen
    raw_citations: int = 0  # citation numbers in the raw text, valid or not
    kept_sentences: int = 0  # claim sentences kept

    @property
    def dropped_sentences(self) -> list[str]:
        return [d.text for d in self.dropped]


# --- questions and answers ---------------------------------------------------------------------


class SearchFilters(BaseModel):
    """Restrictions applied inside every retriever (never after truncation)."""

    since: int | None = None  # first year included
    until: int | None = None  # last year included
    authors: list[str] = Field(default_factory=list)  # any of these names (folded match)
    venue: str | None = None  # case-insensitive substring of the venue

    def is_empty(self) -> bool:
        return self.since is None and self.until is None and not self.authors and not self.venue

    def describe(self) -> str:
        """Human wording, e.g. "since 2024, by Zhao Zhang"."""
        parts: list[str] = []
        if self.since is not None and self.until is not None and self.since == self.until:
            parts.append(f"in {self.since}")
        else:
            if self.since is not None:
                parts.append(f"since {self.since}")
            if self.until is not None:
                parts.append(f"until {self.until}")
        if self.authors:
            parts.append("by " + " or ".join(self.authors))
        if self.venue:
            parts.append(f"in venue {self.venue!r}")
        return ", ".join(parts)

    def wording(self) -> str:
        """"by Zhao Zhang in Nature since 2025": the filters in the order a sentence reads them."""
        parts: list[str] = []
        if self.authors:
            parts.append("by " + " or ".join(self.authors))
        if self.venue:
            parts.append(f"in {self.venue}")
        since, until = self.since, self.until
        if since is not None and until is not None:
            parts.append(f"in {since}" if since == until else f"from {since} to {until}")
        elif since is not None:
            parts.append(f"since {since}")
        elif until is not None:
            parts.append(f"until {until}")
        return " ".join(parts)


class SearchHit(BaseModel):
    """One retrieved paper with its relevance score (higher is better, roughly 0..1)."""

    paper: Paper
    score: float
    dense_score: float | None = None
    lexical_score: float | None = None


class Citation(BaseModel):
    """A numbered paper record as the user sees it (the ``citations`` items of ``ask --json``)."""

    n: int
    id: str
    title: str
    authors: list[str]
    year: int | None
    venue: str | None
    doi: str | None
    arxiv_id: str | None
    url: str | None
    score: float
    # shown as a badge in Slack; kept out of --json so the citation contract stays exact
    open_access: bool | None = Field(default=None, exclude=True)

    @classmethod
    def from_paper(cls, n: int, paper: Paper, score: float) -> Citation:
        return cls(
            n=n,
            id=paper.id,
            title=paper.title,
            authors=paper.author_names,
            year=paper.year,
            venue=paper.venue,
            doi=paper.doi,
            arxiv_id=paper.arxiv_id,
            url=paper.link,
            score=round(float(score), 4),
            open_access=paper.open_access,
        )

    def byline(self, limit: int = 3) -> str:
        """"A, B and C" or "A, B, C et al." (``records.paper.format_authors``)."""
        return format_authors(self.authors, limit)


class SearchResult(BaseModel):
    """``paperbot search --json``: ranked records with scores."""

    query: str
    results: list[Citation]
    notice: str | None = Field(default=None, exclude=True)  # e.g. which filter emptied the result


AnswerMode = Literal["extractive", "llm"]
AnswerKind = Literal["listing", "topic", "mixed"]  # see retrieval.answers.question_shape


class AnswerResult(BaseModel):
    """``paperbot ask --json``. ``citations`` holds only records cited in ``answer``, in order."""

    question: str
    answer: str
    mode: AnswerMode
    abstained: bool
    citations: list[Citation]
    kind: AnswerKind = "topic"  # listing: every record matching the filters; mixed: a topic within them
    filters: dict[str, int | str | list[str]] = Field(default_factory=dict)  # SearchFilters fields applied
    notice: str | None = Field(default=None, exclude=True)  # e.g. "LLM unreachable: extractive answer"

    def with_notice(self, *parts: str | None) -> AnswerResult:
        """A copy whose notice is ``parts`` joined in order (empty ones left out; None when all
        are): pass ``self.notice`` where the existing notice goes."""
        return self.model_copy(update={"notice": " ".join(part for part in parts if part) or None})


@dataclass(frozen=True)
class TextDelta:
    """A piece of model text as it streams (unvalidated)."""

    text: str


@dataclass(frozen=True)
class Progress:
    """What the answer is waiting for, for the asker (never answer text): sent once before a
    model call that may take a while to start (a small local model reads a long prompt for tens
    of seconds). A door may show it until the first ``TextDelta``; ignoring it loses nothing."""

    text: str


@dataclass(frozen=True)
class Final:
    """The validated answer; always the last event. ``report`` is set when a model answered."""

    result: AnswerResult
    report: ValidationReport | None = None
    query: str = ""  # the query retrieval ran with (the standalone rewrite for follow-ups)


AnswerEvent = TextDelta | Progress | Final


# --- scholars and collaborators ----------------------------------------------------------------


class ScholarIdentity(BaseModel):
    name: str
    ids: dict[str, str] = Field(default_factory=dict)  # orcid, openalex, arxiv_name...
    affiliations: dict[str, list[str]] = Field(default_factory=lambda: {"current": list[str](), "previous": list[str]()})


class Theme(BaseModel):
    label: str
    citations: list[int]


class Coauthor(BaseModel):
    name: str
    shared: int
    person_id: str | None = None  # two co-authors may share a name; their ids tell them apart


class CoauthorLink(BaseModel):
    """Two of the scholar's top co-authors who also wrote ``shared`` indexed papers together."""

    a: str
    b: str
    shared: int
    a_id: str | None = None  # person ids of a and b (names may repeat)
    b_id: str | None = None


class ThemeYears(BaseModel):
    """Papers per year of one theme (all the scholar's papers; older ones placed by similarity)."""

    label: str
    counts_by_year: dict[int, int]


class ScholarSummaryResult(BaseModel):
    """``paperbot summarize --json`` for a resolved scholar."""

    scholar: ScholarIdentity
    summary: str
    mode: AnswerMode
    themes: list[Theme]
    papers: list[Citation]
    coauthors: list[Coauthor]
    topics: list[str]
    counts_by_year: dict[int, int] = Field(default_factory=dict)
    window_note: str | None = None
    paper_count: int = 0  # all indexed papers of the scholar
    coauthor_count: int = 0  # distinct co-authors (grouped as people)
    coauthor_links: list[CoauthorLink] = Field(default_factory=list)
    timeline: list[ThemeYears] = Field(default_factory=list)
    notice: str | None = Field(default=None, exclude=True)  # e.g. "LLM unreachable: extractive themes"
    person_id: str | None = None  # "person:…": summarize / collaborators --for accept it back
    others_with_this_name: int = 0  # other indexed people the query also matched (not blended in)
    namesakes: list[ScholarCandidate] = Field(default_factory=list)  # the first few of them, to pick


class ScholarCandidate(BaseModel):
    name: str
    person_id: str | None = None  # "person:…": picks exactly this candidate
    affiliation: str | None
    papers: int
    sample_title: str | None
    ids: dict[str, str] = Field(default_factory=dict)
    coauthors: list[str] = Field(default_factory=list)  # top co-authors: tells namesakes apart
    latest_year: int | None = None


class AmbiguousScholarResult(BaseModel):
    """``paperbot summarize --json`` when several people match the name."""

    ambiguous: Literal[True] = True
    query: str
    candidates: list[ScholarCandidate]
    more: int = 0  # further matching people not listed in ``candidates``


class ExpertCandidate(BaseModel):
    name: str
    person_id: str | None = None  # "person:…": summarize accepts it
    score: float
    affiliation: str | None
    reason: str
    papers: list[Citation]
    # mean cosine of the topic with the person's five closest indexed papers (missing ones 0);
    # None when it was not measured (no stored vectors, or ranked beyond the first hundred)
    work_similarity: float | None = None


class CollaboratorsResult(BaseModel):
    """``paperbot collaborators --json``."""

    topic: str
    scholars: list[ExpertCandidate]
    notice: str | None = Field(default=None, exclude=True)  # e.g. "no indexed paper is close to the topic"
    for_person: str | None = Field(default=None, exclude=True)  # who --for resolved to (display name)


# --- ingests, fetches and syncs ------------------------------------------------------------------

EMPTY_FILE = "the file is empty"  # ``FileResult.problem`` of a file with nothing in it


@dataclass(frozen=True)
class FileResult:
    """What one file of an ingest yielded; ``problem`` says why it yielded no record."""

    path: str
    format: str | None  # None when the file could not be read in any format
    records: int  # papers parsed from it (before deduplication)
    skipped: int  # the report's skipped items that come from this file
    problem: str | None = None  # "the file is empty", "not in a format paperbot reads", ...


@dataclass
class IngestReport:
    """What one ingest did, id by id."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[SkippedItem] = field(default_factory=list)
    warnings: list[SkippedItem] = field(default_factory=list)  # kept records that lost a bad optional value
    merged_duplicates: int = 0  # incoming items folded into another item of the same batch
    files: list[FileResult] = field(default_factory=list)  # file ingests: one per given file

    def extend(self, other: IngestReport) -> None:
        self.added.extend(other.added)
        self.updated.extend(other.updated)
        self.unchanged.extend(other.unchanged)
        self.skipped.extend(other.skipped)
        self.warnings.extend(other.warnings)
        self.merged_duplicates += other.merged_duplicates
        self.files.extend(other.files)

    @property
    def total(self) -> int:
        return len(self.added) + len(self.updated) + len(self.unchanged)

    @property
    def nothing_read(self) -> bool:
        """No record came out of the given files: each was unreadable, empty or fully skipped."""
        return self.total == 0 and bool(self.files) and all(result.problem for result in self.files)

    def as_dict(self) -> dict[str, object]:
        return {
            "added": len(self.added),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "merged_duplicates": self.merged_duplicates,
            "skipped": [{"item": s.item, "reason": s.reason} for s in self.skipped],
            "warnings": [{"item": w.item, "reason": w.reason} for w in self.warnings],
            "files": [asdict(result) for result in self.files],
        }


@dataclass(frozen=True)
class KeptAfterRemoval:
    """A record a removed file described that other sources describe too: kept without the
    file's provenance and ``fields_removed``, the fields only the file had supplied."""

    id: str
    title: str
    other_sources: list[str]  # "arxiv 2401.01234", "bibtex smith2020", ...
    fields_removed: list[str]


@dataclass
class RemovalReport:
    """What `paperbot remove --source` did (or, with ``dry_run``, would do), id by id.

    ``removed``: records every source of which was one of the files' entries. ``kept``: records
    an entry describes that other sources describe too (``retrieval.ingest.removal``).
    ``not_indexed``: entries that match no indexed record. ``files`` and ``skipped``: reading
    the files again, as an ingest reports it.
    """

    source: str  # what the user named: a file path, several, or "demo"
    dry_run: bool = False
    removed: list[str] = field(default_factory=list)
    kept: list[KeptAfterRemoval] = field(default_factory=list)
    not_indexed: int = 0
    files: list[FileResult] = field(default_factory=list)
    skipped: list[SkippedItem] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "dry_run": self.dry_run,
            "removed": list(self.removed),
            "kept": [asdict(kept) for kept in self.kept],
            "not_indexed": self.not_indexed,
            "files": [asdict(result) for result in self.files],
            "skipped": [{"item": s.item, "reason": s.reason} for s in self.skipped],
        }


@dataclass
class FetchResult:
    """What one `paperbot ingest arxiv|openalex|crossref` fetch did (``retrieval.ingest.fetchers``).

    ``report`` is the ingest of the works received, its ``skipped`` led by what the source could
    not deliver (unknown DOIs, unusable items); ``failure`` is the source's error when it failed
    part-way (the works received before it are indexed).
    """

    source: str  # "arxiv", "openalex", "crossref"
    label: str  # "arXiv", "OpenAlex", "Crossref"
    what: str  # "arXiv papers of 'Adrian Del Maestro'"
    fetched: int
    report: IngestReport
    notes: list[str] = field(default_factory=list)  # e.g. results left out by the name filter
    failure: SourceError | None = None


class SourceFailure(BaseModel):
    """A source that failed for one scholar; works it delivered before failing were kept."""

    source: str
    message: str
    fetched_before_failure: int = 0


class ScholarSync(BaseModel):
    """What one scholar's sync did."""

    name: str
    new: list[str] = Field(default_factory=list)  # ids of papers not in the index before this sync
    updated: list[str] = Field(default_factory=list)  # existing records that gained information
    unchanged: int = 0
    fetched: dict[str, int] = Field(default_factory=dict)  # works received per source asked
    completed: list[str] = Field(default_factory=list)  # sources whose sync time was advanced
    errors: list[SourceFailure] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # skipped sources, ambiguous profiles, caps


class SyncReport(BaseModel):
    """The outcome of one ``sync_roster`` run (``paperbot sync --json`` prints this)."""

    started_at: str
    finished_at: str | None = None
    scholars: list[ScholarSync] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def new_paper_ids(self) -> list[str]:
        """Every paper that is new in this sync, once, in the order found."""
        return list(dict.fromkeys(pid for scholar in self.scholars for pid in scholar.new))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def updated_paper_ids(self) -> list[str]:
        new = set(self.new_paper_ids)
        return [pid for pid in dict.fromkeys(p for s in self.scholars for p in s.updated) if pid not in new]

    @property
    def errors(self) -> list[tuple[str, SourceFailure]]:
        """(scholar name, failure) for every source that failed."""
        return [(scholar.name, failure) for scholar in self.scholars for failure in scholar.errors]

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class SyncEvent:
    """Progress of a sync, for a progress bar or log lines.

    ``stage``: "start" (a scholar begins), "source" (a source delivered ``count`` works),
    "error" (a source failed, ``message``), "note" (``message``), "done" (scholar committed).
    """

    scholar: str
    position: int  # 1-based
    total: int
    stage: str
    source: str | None = None
    count: int = 0
    message: str = ""


# --- the roster and follows ----------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Scholar(BaseModel):
    """One rostered person and how to find their works in each source."""

    name: str
    orcid: str | None = None
    openalex_id: str | None = None
    arxiv_name: str | None = None
    aliases: list[str] = Field(default_factory=list)
    added_at: str = Field(default_factory=_now)
    last_synced: dict[str, str] = Field(default_factory=dict)  # source -> ISO time of the last complete fetch

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        name = clean_text(value)
        if not name:
            raise ValueError("the scholar's name is empty")
        return name

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        return unique_clean(value)

    @property
    def names(self) -> list[str]:
        """Every name this scholar is known by: name, arXiv name, aliases."""
        found = [self.name]
        for extra in [self.arxiv_name, *self.aliases]:
            if extra and extra not in found:
                found.append(extra)
        return found

    def matches(self, query: str) -> bool:
        """True for any of the scholar's names (case/accents ignored), their ORCID or OpenAlex id."""
        text = query.strip()
        orcid = normalize_orcid(text)
        if orcid and orcid == self.orcid:
            return True
        openalex = normalize_openalex_id(text)
        if openalex and openalex == self.openalex_id:
            return True
        wanted = fold(text)
        return bool(wanted) and any(fold(name) == wanted for name in self.names)


FollowKind = Literal["scholar", "topic"]


class Follow(BaseModel):
    """One follow of one channel."""

    id: int
    channel: str
    kind: FollowKind
    query: str
    created_by: str | None = None
    created_at: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.query}"


class FollowAlert(BaseModel):
    """New papers one follow has not announced yet."""

    follow: Follow
    papers: list[Paper]


@dataclass(frozen=True)
class FollowAdded:
    """``Assistant.follow``: the follow, whether it is new, and whether its kind was guessed."""

    follow: Follow
    created: bool
    guessed: bool  # the text did not say scholar or topic: ``alerts.follows.guess_kind`` chose


@dataclass
class PendingAlerts:
    """New papers queued by syncs, and per follow those it matches and has not announced."""

    paper_ids: list[str]
    alerts: list[FollowAlert]


# --- the index ---------------------------------------------------------------------------------


class IndexStats(BaseModel):
    """What is indexed, for `paperbot stats` and the Slack App Home."""

    papers: int
    scholars: int
    last_sync: str | None
    by_source: dict[str, int]
    by_year: dict[int, int]


ScholarSummaryResult.model_rebuild()
