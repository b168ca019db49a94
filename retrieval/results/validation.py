"""What validation and parsing removed, as the doors report it: skipped items, dropped sentences, the model probe.

Part of the public contracts of ``retrieval.results`` (import them from there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


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
