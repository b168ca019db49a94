"""What an answer may rest on: the evidence policy, and safe evidence blocks.

Evidence policy (both answer modes, every door). ``resolve_policy`` decides the threshold in
one place: the caller's ``min_relevance`` > ``PAPERBOT_MIN_RELEVANCE`` > the calibrated
default. ``select_relevant`` keeps, in retriever order, the hits that may serve as evidence;
none kept means abstain:

1. **Answer or abstain, by meaning.** With the calibrated default and a retriever that gives
   dense scores, the evidence judgement (``retrieval.answers.judgement.judge``) decides from
   signals that survive paraphrase: the best cosine against the index's own background, how far
   the best record stands above the pack, how both rankings and the question's concepts back it,
   and words the index has never seen (against). A threshold set by the caller or the
   environment replaces it with the field-aware cut of that threshold (``RelevancePolicy.cut``);
   a lexical-only retriever (no dense score) gets ``LEXICAL_ONLY_MIN_RELEVANCE``.
2. **Relative to the best hit.** Once the question is answered, hits within ``RELATIVE_FLOOR``
   of the best score count; below ``RELATIVE_FLOOR`` x the best, none does.

Evidence blocks (LLM mode): each untrusted record and the question sit between marker lines
with a random per-request boundary; ``neutralise`` first removes whatever could forge
structure (the boundary, markup tags, chat-template and Slack control tokens, ``[n]``).

The rules in full, the measurements behind each constant and what was tried instead:
``docs/evidence.md``.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from retrieval.answers.judgement import TYPICAL_BACKGROUND, Rarity, Verdict, judge
from retrieval.config import Settings
from retrieval.index.background import Background
from retrieval.index.fusion import CALIBRATED_MIN_RELEVANCE  # bench/calibrate_threshold.py: records with an abstract
from retrieval.results import SearchHit
from retrieval.text import content_phrases, content_terms

# Calibration: the one place to tune (docs/evidence.md says where each number comes from).
CALIBRATED_MIN_RELEVANCE_TITLE_ONLY = 0.54  # bench/calibrate_threshold.py --title-only
LEXICAL_ONLY_MIN_RELEVANCE = 0.35  # hits without a dense score, bench/answers.py --sweep
DEFAULT_MIN_RELEVANCE = CALIBRATED_MIN_RELEVANCE  # the public name of the default threshold
RELATIVE_FLOOR = 0.5  # share of the query's best score a hit needs to count
RARITY_MIN_RECORDS = 500  # an index this large before IDF tells specific words apart (the judgement's rarity)
# Fraction of the question's content terms a record must contain to count without the score.
LEXICAL_MIN_SUPPORT = 0.75
# Abstract characters shown to the model: at most this per record, and at most the total
# budget across records (about 2.5k tokens, so k=8 fits a 4k-context local model with room to
# answer); longer abstracts are cut at a word.
MAX_EVIDENCE_ABSTRACT_CHARS = 1500
EVIDENCE_ABSTRACT_BUDGET = 9000
MIN_EVIDENCE_ABSTRACT_CHARS = 300

@dataclass(frozen=True)
class RelevancePolicy:
    """The threshold in force and where it came from ("argument", "PAPERBOT_MIN_RELEVANCE", "calibrated")."""

    min_relevance: float = CALIBRATED_MIN_RELEVANCE
    source: str = "calibrated"

    def cut(self, hit: SearchHit) -> float:
        """The score ``hit`` needs on its own (rule 1 of the module docstring)."""
        if self.source == "calibrated" and hit.dense_score is None:
            return LEXICAL_ONLY_MIN_RELEVANCE
        if not (hit.paper.abstract or "").strip():
            return self.min_relevance * CALIBRATED_MIN_RELEVANCE_TITLE_ONLY / CALIBRATED_MIN_RELEVANCE
        return self.min_relevance


def resolve_policy(settings: Settings | None, override: float | None = None) -> RelevancePolicy:
    """The one place the threshold is decided: argument > PAPERBOT_MIN_RELEVANCE > calibrated."""
    if override is not None:
        return RelevancePolicy(override, "argument")
    if settings is not None and settings.min_relevance is not None:
        return RelevancePolicy(settings.min_relevance, "PAPERBOT_MIN_RELEVANCE")
    return RelevancePolicy()


def resolve_min_relevance(settings: Settings | None, override: float | None = None) -> float:
    """The threshold in force for records with an abstract (see ``resolve_policy``)."""
    return resolve_policy(settings, override).min_relevance


class CountedIndex(Protocol):
    """What ``index_rarity`` reads of an index (``PaperIndex``)."""

    def count(self) -> int: ...

    def term_rarity(self, term: str) -> float: ...


def index_rarity(index: CountedIndex) -> Rarity | None:
    """``index.term_rarity`` for the judgement, or None for an index too small (under
    ``RARITY_MIN_RECORDS``) for word frequencies to say which word is specific."""
    return index.term_rarity if index.count() >= RARITY_MIN_RECORDS else None


def question_concepts(question: str) -> list[tuple[str, ...]]:
    """The question's key concepts: runs of stemmed content words between stopwords."""
    return content_phrases(neutralise(question))


def unique_hits(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` in order, each paper id once (its first hit)."""
    unique: list[SearchHit] = []
    seen: set[str] = set()
    for hit in hits:
        if hit.paper.id not in seen:
            unique.append(hit)
            seen.add(hit.paper.id)
    return unique


def _lexically_supported(question: str, hit: SearchHit) -> bool:
    """The record's title + abstract hold ``LEXICAL_MIN_SUPPORT`` of the question's content terms."""
    terms = content_terms(question)
    if not terms:
        return False
    needed = max(1, math.ceil(LEXICAL_MIN_SUPPORT * len(terms)))
    return len(terms & content_terms(hit.paper.embedding_text)) >= needed


@dataclass(frozen=True)
class Assessment:
    """The hits kept as evidence (retriever order) and, when the judgement decided, its verdict."""

    kept: list[SearchHit]
    verdict: Verdict | None = None


def assess(
    question: str,
    hits: Sequence[SearchHit],
    min_relevance: float | RelevancePolicy | None = None,
    rarity: Rarity | None = None,
    background: Background | None = None,
) -> Assessment:
    """The evidence for ``question`` among ``hits`` (the rules of the module docstring).

    ``min_relevance``: a ``RelevancePolicy``, an explicit threshold, or None for the calibrated
    default; ``rarity``: the index's IDF of a stemmed word (None: unknown, e.g. a small index);
    ``background``: the index's background figures (``retrieval.index.background``; None: the
    typical ones). Hits repeating an already kept paper id are skipped.
    """
    policy = min_relevance if isinstance(min_relevance, RelevancePolicy) else resolve_policy(None, min_relevance)
    unique = unique_hits(hits)
    if not unique:
        return Assessment([])
    verdict = None
    if policy.source == "calibrated" and any(hit.dense_score is not None for hit in unique):
        verdict = judge(neutralise(question), unique, background or TYPICAL_BACKGROUND, rarity)
        if not verdict.answer:
            return Assessment([], verdict)
        passing = unique[:1]
    else:
        passing = [hit for hit in unique if hit.score >= policy.cut(hit) or _lexically_supported(question, hit)]
        if not passing:
            return Assessment([])
    best = max(hit.score for hit in unique)
    floor = RELATIVE_FLOOR * best
    kept = [hit for hit in unique if hit.score >= floor and (hit in passing or any(p.score >= best for p in passing))]
    return Assessment(kept, verdict)


def select_relevant(
    question: str,
    hits: Sequence[SearchHit],
    min_relevance: float | RelevancePolicy | None = None,
    rarity: Rarity | None = None,
    background: Background | None = None,
) -> list[SearchHit]:
    """Hits that may serve as evidence, in retriever order (``assess`` without the verdict)."""
    return assess(question, hits, min_relevance, rarity, background).kept


# --- neutralising untrusted text -------------------------------------------------------------

_BOUNDARY_PREFIX = "@@PB-"
_BOUNDARY_SHAPE = re.compile(r"@@\s*PB\s*-\s*[0-9A-Za-z]*\s*@@|@@PB-[0-9A-Za-z]*", re.IGNORECASE)
_CONTROL_TOKENS = re.compile(
    r"<\|[^|<>\n]{0,40}\|>"  # <|im_start|>, <|endoftext|>, <|system|>
    r"|\[/?(?:INST|SYS)\]"  # Llama-2 [INST] [/INST]
    r"|<<\s*/?\s*SYS\s*>>"  # <<SYS>>
    r"|</?s>",  # sentence tokens
    re.IGNORECASE,
)
_SLACK_CONTROL = re.compile(r"<[!@#][^<>\n]{0,80}>")  # <!channel>, <!here|here>, <@U123>, <#C1|general>
_TAG = re.compile(r"</?[A-Za-z][\w:.-]{0,40}(?:\s[^<>\n]{0,200})?/?>")  # <evidence>, </system>, <p class=x>
_BRACKET_NUMBERS = re.compile(r"\[\s*(\d+(?:\s*[,;–-]\s*\d+)*)\s*\]")
_SPACES = re.compile(r"[ \t]+")


_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|prompts?|above)\b"
    r"|\b(?:system|developer|hidden)\s+prompt\b"
    r"|\bnew\s+instructions?\b"
    r"|\byou\s+(?:are|must)\s+now\b"
    r"|\b(?:answer|reply|respond)\s+(?:only\s+)?with\s+(?:the\s+word|exactly)\b"
    r"|\bas\s+an?\s+(?:ai|assistant|language\s+model)\b.{0,40}\b(?:must|should|will)\b",
    re.IGNORECASE,
)


def looks_like_instruction(sentence: str) -> bool:
    """True for text that addresses a model ("ignore previous instructions", "system prompt").

    Such sentences stay in the evidence the model sees (neutralised, between the boundaries)
    but are never quoted as an extractive answer's key sentence: quoting them would let an
    abstract make paperbot *say* the injected text.
    """
    return bool(_INSTRUCTION.search(sentence))


def new_boundary() -> str:
    """A fresh per-request marker token; the evidence cannot contain it (see ``neutralise``)."""
    return _BOUNDARY_PREFIX + secrets.token_hex(8).upper() + "@@"


def strip_markup(text: str, boundary: str | None = None) -> str:
    """Remove boundary-shaped strings, markup tags, chat control tokens and Slack control
    sequences (``<!channel>``), keeping line breaks and ``[n]`` citations. Used on model output."""
    out = text.replace(boundary, " ") if boundary else text
    for pattern in (_BOUNDARY_SHAPE, _CONTROL_TOKENS, _SLACK_CONTROL, _TAG):
        out = pattern.sub(" ", out)
    return "\n".join(_SPACES.sub(" ", line).strip() for line in out.split("\n"))


def neutralise(text: str | None, boundary: str | None = None) -> str:
    """Untrusted text made inert for a prompt or an extractive answer (one line, no markup).

    Removes ``boundary`` and anything shaped like a paperbot boundary, markup tags, chat
    control tokens and Slack control sequences; rewrites ``[12]`` as ``(12)``; collapses
    whitespace. Ordinary prose, maths such as ``p < 0.05`` and parentheses are kept.
    """
    if not text:
        return ""
    out = strip_markup(text.replace("\r", " ").replace("\n", " "), boundary)
    out = _BRACKET_NUMBERS.sub(lambda m: f"({m.group(1)})", out)
    return _SPACES.sub(" ", out).strip()


def cut_at_word(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, cut at a word with " …" when longer."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + " …"


# --- evidence set ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvidenceSet:
    """Evidence records numbered 1..n (``hits[n - 1]``) and the boundary wrapping them.

    ``abstracts``: when given, the abstract text each record shows (``abstracts[n - 1]``, as
    ``retrieval.answers.prompt_budget`` fitted it; neutralised when rendered, "" for none)
    instead of the record's abstract cut to its share of ``EVIDENCE_ABSTRACT_BUDGET``.
    """

    hits: tuple[SearchHit, ...]
    boundary: str
    abstracts: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.hits)

    def hit(self, n: int) -> SearchHit:
        """The record behind citation ``[n]`` (1-based); IndexError when out of range."""
        if not 1 <= n <= len(self.hits):
            raise IndexError(n)
        return self.hits[n - 1]

    def render(self) -> str:
        """All records as delimited blocks, in order (``blocks`` joined by blank lines)."""
        return "\n\n".join(self.blocks())

    def blocks(self) -> list[str]:
        """Each record's delimited block, in order."""
        return [self.block(n) for n in range(1, len(self.hits) + 1)]

    def abstract_text(self, n: int) -> str:
        """The abstract record ``n`` shows, neutralised: the fitted one, or the record's own cut
        to its share of ``EVIDENCE_ABSTRACT_BUDGET``."""
        paper = self.hit(n).paper
        if self.abstracts is not None:
            return neutralise(self.abstracts[n - 1], self.boundary)
        limit = max(MIN_EVIDENCE_ABSTRACT_CHARS, min(MAX_EVIDENCE_ABSTRACT_CHARS, EVIDENCE_ABSTRACT_BUDGET // len(self)))
        return cut_at_word(neutralise(paper.abstract, self.boundary), limit)

    def with_abstracts(self, hits: Sequence[SearchHit], abstracts: Sequence[str]) -> EvidenceSet:
        """``hits`` under this set's boundary, showing ``abstracts`` (one per hit)."""
        return EvidenceSet(tuple(hits), self.boundary, tuple(abstracts))

    def wrap_question(self, question: str) -> str:
        """The question neutralised like the records (it goes between markers of its own)."""
        return neutralise(question, self.boundary) or "(empty)"

    def block(self, n: int) -> str:
        """Record ``n``'s delimited block: its marker lines, fields and abstract."""
        b = self.boundary
        paper = self.hit(n).paper
        lines = [
            f"{b} RECORD [{n}]",
            f"id: {neutralise(paper.id, b)}",
            f"title: {neutralise(paper.title, b)}",
            f"authors: {neutralise(paper.short_authors(limit=6), b)}",
            f"year: {paper.year if paper.year is not None else 'unknown'}",
            f"venue: {neutralise(paper.venue, b) or 'unknown'}",
            f"abstract: {self.abstract_text(n) or '(no abstract)'}",
            f"{b} END RECORD [{n}]",
        ]
        return "\n".join(lines)


def build_evidence(hits: Sequence[SearchHit], boundary: str | None = None) -> EvidenceSet:
    """Number ``hits`` 1..n in the given order under a fresh (or given) boundary."""
    return EvidenceSet(hits=tuple(hits), boundary=boundary or new_boundary())
