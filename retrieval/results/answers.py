"""Questions and answers: filters, search hits, citations, answers and their stream events.

Part of the public contracts of ``retrieval.results`` (import them from there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from retrieval.records.paper import (
    Paper,
    format_authors,
)
from retrieval.results.validation import ValidationReport

if TYPE_CHECKING:
    pass


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
