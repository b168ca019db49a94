"""Scholars and collaborators: a scholar's summary, the candidates of an ambiguous name, experts.

Part of the public contracts of ``retrieval.results`` (import them from there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from retrieval.results.answers import AnswerMode, Citation

if TYPE_CHECKING:
    pass


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
    # ask's evidence judgement of the topic's closest papers (retrieval.scholars.coverage): False when
    # the index does not seem to cover it (the ranking is still given, with a notice); None: not judged
    topic_covered: bool | None = None


ScholarSummaryResult.model_rebuild()  # ScholarCandidate is defined after it
