"""What an answer may rest on: relevance gating, lexical support, and safe evidence blocks.

Relevance gate (both answer modes)
----------------------------------
A retrieved hit counts as evidence when **either**

* its retriever score is at least the threshold (``min_relevance``: the caller's value, else
  ``settings.min_relevance``, else ``DEFAULT_MIN_RELEVANCE``), **or**
* it has lexical support: its title + abstract contain at least ``LEXICAL_MIN_SUPPORT`` (3/4)
  of the question's content terms (stemmed words minus stopwords and question framing such as
  "which papers propose"), rounded up: 1 of 1, 2 of 2, 3 of 3 or 4, 4 of 5.

So paperbot abstains exactly when the best score is under the threshold *and* no hit shares
enough content words with the question. The second condition keeps answerable questions
answered while the hybrid retriever's score scale is still uncalibrated; the first keeps
paraphrased matches (no shared words, high dense score). ``DEFAULT_MIN_RELEVANCE`` is the one
place to calibrate (``python bench/answers.py --sweep`` prints answered/abstained rates per
threshold). The support fraction is 3/4 rather than 1/2 because at 1/2 unanswerable SciFact
questions were rescued by chance overlaps ("stock market volatility models" -> an HIV
financing abstract mentioning "models" and "market").

Evidence blocks (LLM mode)
--------------------------
Records and the question are untrusted text. Each is wrapped between marker lines carrying a
random per-request boundary token (``new_boundary()``); before wrapping, ``neutralise`` removes
anything that could forge structure: the boundary itself and anything shaped like it,
markup tags (``</evidence>``), chat-template control tokens (``<|im_start|>``, ``[INST]``),
Slack control sequences (``<!channel>``, ``<@U123>``), and turns bracketed numbers into
parentheses so ``[n]`` in the prompt only ever means "evidence record n".
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import Stemmer

from retrieval.config import Settings
from retrieval.models import SearchHit
from retrieval.records import Paper, fold

# Calibration: the one place to tune. Scores come from the hybrid retriever, higher is better,
# roughly 0..1. Hits scoring below this need lexical support to count as evidence.
DEFAULT_MIN_RELEVANCE = 0.35
# Fraction of the question's content terms a record must contain to count without the score.
LEXICAL_MIN_SUPPORT = 0.75
# Abstract characters shown to the model: at most this per record, and at most the total
# budget across records (about 2.5k tokens, so k=8 fits a 4k-context local model with room to
# answer); longer abstracts are cut at a word.
MAX_EVIDENCE_ABSTRACT_CHARS = 1500
EVIDENCE_ABSTRACT_BUDGET = 9000
MIN_EVIDENCE_ABSTRACT_CHARS = 300

# --- lexical terms ---------------------------------------------------------------------------

# English function words, plus the framing people wrap questions in ("which papers propose").
_STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could did didn do does doesn doing don
    down during each else ever few for from further get gets got had hadn has hasn have haven
    having he her here hers herself him himself his how i if in into is isn it its itself just
    let lets like me might more most much must mustn my myself no nor not now of off often on
    once one only onto or other others our ours ourselves out over own per please same shall
    shan she should shouldn since so some such than that the their theirs them themselves then there
    these they this those though through thus to too under until up upon us very via was wasn
    we were weren what whatever when where whether which while who whom whose why will with
    within without won would wouldn yet you your yours yourself yourselves
    paper papers article articles work works publication publications study studies research
    researcher researchers author authors scholar scholars record records indexed index
    propose proposes proposed proposing present presents presented introduce introduces
    introduced describe describes described discuss discusses discussed address addresses
    addressed investigate investigates investigated examine examines examined explore explores
    explored report reports reported show shows showed shown find finds found use uses used
    using approach approaches method methods technique techniques anyone someone something
    anything recent recently new novel existing known tell give list name mention mentions
    regarding related relate relates relating topic topics question questions answer answers
    """.split()
)
_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def content_words(text: str) -> list[str]:
    """Lowercased, ASCII-folded words of ``text`` minus stopwords, numbers and 1-letter tokens."""
    return [w for w in _WORD.findall(fold(text)) if len(w) > 1 and not w.isdigit() and w not in _STOPWORDS]


def content_terms(text: str) -> set[str]:
    """Stemmed content words: what "shares a word with the question" compares."""
    words = content_words(text)
    return set(_stemmer().stemWords(words)) if words else set()


def resolve_min_relevance(settings: Settings, override: float | None = None) -> float:
    """The threshold in force: explicit argument > PAPERBOT_MIN_RELEVANCE > DEFAULT_MIN_RELEVANCE."""
    if override is not None:
        return override
    if settings.min_relevance is not None:
        return settings.min_relevance
    return DEFAULT_MIN_RELEVANCE


def select_relevant(question: str, hits: Sequence[SearchHit], min_relevance: float) -> list[SearchHit]:
    """Hits that may serve as evidence (see the module docstring), in retriever order.

    Hits repeating an already kept paper id are skipped.
    """
    terms = content_terms(question)
    needed = max(1, math.ceil(LEXICAL_MIN_SUPPORT * len(terms))) if terms else None
    kept: list[SearchHit] = []
    seen: set[str] = set()
    for hit in hits:
        if hit.paper.id in seen:
            continue
        supported = needed is not None and len(terms & content_terms(hit.paper.embedding_text)) >= needed
        if hit.score >= min_relevance or supported:
            kept.append(hit)
            seen.add(hit.paper.id)
    return kept


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


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + " …"


# --- evidence set ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvidenceSet:
    """Evidence records numbered 1..n (``hits[n - 1]``) and the boundary wrapping them."""

    hits: tuple[SearchHit, ...]
    boundary: str

    def __len__(self) -> int:
        return len(self.hits)

    def hit(self, n: int) -> SearchHit:
        """The record behind citation ``[n]`` (1-based); IndexError when out of range."""
        if not 1 <= n <= len(self.hits):
            raise IndexError(n)
        return self.hits[n - 1]

    def render(self) -> str:
        """All records as delimited blocks, in order, abstracts cut to share the budget."""
        limit = MAX_EVIDENCE_ABSTRACT_CHARS
        if self.hits:
            limit = max(MIN_EVIDENCE_ABSTRACT_CHARS, min(limit, EVIDENCE_ABSTRACT_BUDGET // len(self.hits)))
        return "\n\n".join(self._block(n, hit.paper, limit) for n, hit in enumerate(self.hits, start=1))

    def wrap_question(self, question: str) -> str:
        """The question neutralised like the records (it goes between markers of its own)."""
        return neutralise(question, self.boundary) or "(empty)"

    def _block(self, n: int, paper: Paper, abstract_chars: int) -> str:
        b = self.boundary
        lines = [
            f"{b} RECORD [{n}]",
            f"id: {neutralise(paper.id, b)}",
            f"title: {neutralise(paper.title, b)}",
            f"authors: {neutralise(paper.short_authors(limit=6), b)}",
            f"year: {paper.year if paper.year is not None else 'unknown'}",
            f"venue: {neutralise(paper.venue, b) or 'unknown'}",
            f"abstract: {_cut(neutralise(paper.abstract, b), abstract_chars) or '(no abstract)'}",
            f"{b} END RECORD [{n}]",
        ]
        return "\n".join(lines)


def build_evidence(hits: Sequence[SearchHit], boundary: str | None = None) -> EvidenceSet:
    """Number ``hits`` 1..n in the given order under a fresh (or given) boundary."""
    return EvidenceSet(hits=tuple(hits), boundary=boundary or new_boundary())
