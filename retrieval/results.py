"""What the core hands to the doors: search hits, cited answers, scholar profiles, experts.

These are the public contracts. ``--json`` output of the CLI is exactly ``model_dump()`` of
the ``*Result`` models here (see the issue contracts); the Slack layer renders the same
objects as Block Kit. Change them only additively.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from retrieval.records.paper import Paper


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


class ScholarIdentity(BaseModel):
    name: str
    ids: dict[str, str] = Field(default_factory=dict)  # orcid, openalex, arxiv_name...
    affiliations: dict[str, list[str]] = Field(default_factory=lambda: {"current": [], "previous": []})


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


class CollaboratorsResult(BaseModel):
    """``paperbot collaborators --json``."""

    topic: str
    scholars: list[ExpertCandidate]
    notice: str | None = Field(default=None, exclude=True)  # e.g. "no indexed paper is close to the topic"
    for_person: str | None = Field(default=None, exclude=True)  # who --for resolved to (display name)


ScholarSummaryResult.model_rebuild()
