"""Inline ``[n]`` citations: find them, keep only valid ones, drop uncited claims, renumber.

Validation rules for a model's answer over evidence records 1..k (``validate_answer``):

1. Citation groups are ``[2]``, ``[1, 3]``, ``[1;3]``, ``[2-4]`` (short ranges) and runs of
   them (``[1][3]``). A number outside 1..k is removed (``invalid_citations``).
2. The text is split into lines, list items and sentences. A sentence is a *claim* unless it
   is a lead-in ending with ``:`` or a bare heading. A claim left with no valid citation is
   dropped (``dropped``); so is any sentence that leaks the prompt: it contains a ``forbidden``
   string (the boundary token), shares 8 consecutive words with a ``protected`` text (the system
   prompt), or is itself a run of 5+ words of one. With an ``attribution``
   (``retrieval.answers.attribution``), a claim whose citations point at another record than the one
   it is about is dropped as a "wrong citation"; one the cited records do not support as "says
   nothing" (no content term), "unsupported" (too few of its terms in them) or "wrong author"
   (it names an author of none of them).
3. The answer abstains when the model says it cannot answer, or when no valid citation
   survives. "Says it cannot answer" means: the ``NO_ANSWER`` sentinel anywhere; or a first
   sentence like "I cannot answer..." (cited or not); or an *uncited* first sentence like
   "The records do not contain..." (a cited one is a claim about a paper and is kept).
   A refusal later in the text is just an uncited sentence and is dropped. An abstention
   never carries citations.
4. Surviving citations are renumbered 1..m in order of first appearance and written as
   ``[1][2]``; ``order`` maps the new numbers back to evidence numbers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from retrieval.results import DroppedSentence, ValidationReport

NO_ANSWER_SENTINEL = "NO_ANSWER"

_GROUP = re.compile(r"\[\s*(\d{1,4}(?:\s*(?:[,;]|[-–—])\s*\d{1,4})*)\s*\]")
_MAX_RANGE = 10
_LIST_MARKER = re.compile(r"^(\s*(?:[-*•]|\d{1,2}[.)])\s+)")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
# Sentence ends: ., ! or ? (optionally followed by closing quotes/brackets and citation groups),
# then whitespace, then something that starts a sentence (not a lowercase word: "et al. show").
_SENTENCE_END = re.compile(
    r"[.!?]+[\"'”’)]*(?:\s*" + _GROUP.pattern + r")*(?=\s+(?:[A-Z0-9\"'“‘(\[]|$))"
)
_ABBREVIATIONS = frozenset(
    ["al", "e.g", "i.e", "cf", "vs", "etc", "fig", "figs", "eq", "eqs", "ref", "refs", "no", "approx", "dr", "mr", "ms", "prof", "st", "sec", "ch", "vol", "pp", "resp"]
)
_LETTERS = re.compile(r"[^\W\d_]{2,}")
_STRONG_REFUSAL = re.compile(
    r"\b(?:i|we)\s+(?:cannot|can\s*not|can't|am\s+unable\s+to|are\s+unable\s+to|am\s+not\s+able\s+to|"
    r"are\s+not\s+able\s+to)\s+(?:answer|determine|tell|say|find|identify|provide|help)\b"
    r"|\b(?:i|we)\s+(?:do\s+not|don't)\s+know\b"
    r"|\bunable\s+to\s+answer|\bnot\s+possible\s+to\s+answer",
    re.IGNORECASE,
)
_WEAK_REFUSAL = re.compile(
    r"\b(?:do|does|did)\s+not\s+(?:contain|provide|include|address|answer|mention|discuss|cover)"
    r"|\b(?:don't|doesn't)\s+(?:contain|provide|include|address|answer|mention|discuss|cover)"
    r"|\bno\s+(?:relevant\s+|such\s+)?(?:information|evidence|records?|papers?|mention)\b"
    r"|\b(?:insufficient|not\s+enough)\s+(?:information|evidence)",
    re.IGNORECASE,
)


class Attribution(Protocol):
    """Says which record a cited sentence is really about (``retrieval.answers.attribution``)."""

    def misattributed(self, sentence: str, cited: Sequence[int]) -> int | None: ...

    def says_something(self, sentence: str, cited: Sequence[int]) -> bool: ...

    def unsupported(self, sentence: str, cited: Sequence[int]) -> str | None: ...


def visible_text(text: str) -> str:
    """``text`` without reasoning blocks (``<think>...</think>``) that some local models emit."""
    return _THINK.sub("", text or "").strip()


def parse_group(body: str) -> list[int]:
    """Numbers inside one ``[...]`` group: ``"1, 3"`` -> [1, 3]; ``"2-4"`` -> [2, 3, 4]."""
    numbers: list[int] = []
    for part in re.split(r"\s*[,;]\s*", body.strip()):
        bounds = re.split(r"\s*[-–—]\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            lo, hi = int(bounds[0]), int(bounds[1])
            numbers.extend(range(lo, hi + 1) if 0 <= hi - lo < _MAX_RANGE else (lo, hi))
        elif part.isdigit():
            numbers.append(int(part))
    return numbers


def cited_numbers(text: str) -> list[int]:
    """Every citation number in ``text`` in order of appearance (duplicates kept)."""
    return [n for match in _GROUP.finditer(text) for n in parse_group(match.group(1))]


def period_ends_sentence(word: str) -> bool:
    """Whether a period right after ``word`` ends a sentence: not after an abbreviation ("vs",
    "e.g", "et al"), an initial ("J" in "J. Smith") or letters with periods ("U.S")."""
    word = word.lower().rstrip(".")
    if word in _ABBREVIATIONS:
        return False
    last = word.rsplit(".", 1)[-1]
    return not (len(last) == 1 and last.isalpha())


def split_sentences(text: str) -> list[str]:
    """Sentences of one line of prose; citation groups stay with the sentence before them."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        before = text[start : match.start()].rstrip()
        last_word = before.rsplit(None, 1)[-1] if before.split() else ""
        if match.group(0).startswith(".") and not period_ends_sentence(last_word):
            continue
        pieces.append(text[start : match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        pieces.append(tail)
    # A piece that is only citations belongs to the sentence before it.
    merged: list[str] = []
    for piece in pieces:
        if merged and not _LETTERS.search(_GROUP.sub("", piece)):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return merged


def _is_claim(sentence: str) -> bool:
    stripped = _GROUP.sub("", sentence).strip().strip("*_#` ").strip()
    if not _LETTERS.search(stripped):
        return False
    if stripped.endswith(":"):
        return False  # a lead-in: "Two papers address this:"
    return not sentence.lstrip().startswith("#")


_SHINGLE = 8  # a sentence sharing this many consecutive words with a protected text leaks it
_MIN_QUOTE = 5  # ...and so does a whole sentence of at least this many words found inside one


def _leaks(sentence: str, forbidden: Sequence[str], protected: Sequence[str],
           shingles: frozenset[tuple[str, ...]]) -> bool:
    if any(item and item in sentence for item in forbidden):
        return True
    if not protected:
        return False
    words = _norm_words(_GROUP.sub(" ", sentence))
    if any(tuple(words[i : i + _SHINGLE]) in shingles for i in range(len(words) - _SHINGLE + 1)):
        return True
    return len(words) >= _MIN_QUOTE and any(f" {' '.join(words)} " in text for text in protected)


def _norm_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _shingles(texts: Sequence[str]) -> frozenset[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for text in texts:
        words = _norm_words(text)
        out.update(tuple(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1))
    return frozenset(out)


@dataclass
class _Work:
    invalid: list[int] = field(default_factory=list)
    dropped: list[DroppedSentence] = field(default_factory=list)
    raw: int = 0
    claims: int = 0


def _clean_groups(sentence: str, evidence_count: int, work: _Work) -> tuple[str, list[int]]:
    """Remove invalid numbers from the citation groups; return the text and valid numbers."""
    valid: list[int] = []

    def replace(match: re.Match[str]) -> str:
        numbers = parse_group(match.group(1))
        work.raw += len(numbers)
        good = []
        for n in numbers:
            if 1 <= n <= evidence_count:
                if n not in good:
                    good.append(n)
            else:
                work.invalid.append(n)
        valid.extend(good)
        return "".join(f"[{n}]" for n in good)

    text = _GROUP.sub(replace, sentence)
    text = re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", text)).strip()
    return text, valid


def validate_answer(
    text: str,
    evidence_count: int,
    *,
    forbidden: Sequence[str] = (),
    protected: Sequence[str] = (),
    attribution: Attribution | None = None,
) -> ValidationReport:
    """Apply the module's rules to a model answer over ``evidence_count`` records.

    ``forbidden``: strings whose verbatim appearance drops a sentence (the boundary token).
    ``protected``: longer texts (the system prompt) that a sentence may not quote: sharing 8
    consecutive words with one, or being a 5+ word run of one, drops it as a prompt leak.
    ``attribution``: when given, a claim whose citations point at records it is not about
    (it names another record's title, say) is dropped as a "wrong citation".
    """
    work = _Work()
    cleaned = visible_text(text)
    if not cleaned:
        return ValidationReport(text="", order=(), abstained=True, reason="empty")
    shingles = _shingles(protected)
    protected_words = [f" {' '.join(_norm_words(text))} " for text in protected]

    kept_lines: list[str] = []
    first_sentence: str | None = None
    for line in cleaned.splitlines():
        marker_match = _LIST_MARKER.match(line)
        marker = marker_match.group(1) if marker_match else ""
        body = line[len(marker) :]
        kept: list[str] = []
        for sentence in split_sentences(body):
            if first_sentence is None and _LETTERS.search(sentence):
                first_sentence = sentence
            if _leaks(sentence, forbidden, protected_words, shingles):
                work.dropped.append(DroppedSentence(sentence, "prompt leak"))
                continue
            rewritten, valid = _clean_groups(sentence, evidence_count, work)
            if not _is_claim(sentence):
                if _LETTERS.search(rewritten) or valid:
                    kept.append(rewritten)
                continue
            if not valid:
                reason = "invalid citation only" if cited_numbers(sentence) else "uncited"
                work.dropped.append(DroppedSentence(sentence, reason))
                continue
            if attribution is not None and attribution.misattributed(sentence, valid) is not None:
                work.dropped.append(DroppedSentence(sentence, "wrong citation"))
                continue
            if attribution is not None and (why := attribution.unsupported(sentence, valid)) is not None:
                work.dropped.append(DroppedSentence(sentence, why))
                continue
            work.claims += 1
            kept.append(rewritten)
        if kept:
            kept_lines.append(marker.lstrip() + " ".join(kept) if marker else " ".join(kept))
        elif not body.strip() and kept_lines and kept_lines[-1] != "":
            kept_lines.append("")  # keep paragraph breaks

    refused = NO_ANSWER_SENTINEL in cleaned
    if not refused and first_sentence is not None:
        refused = bool(_STRONG_REFUSAL.search(first_sentence)) or (
            bool(_WEAK_REFUSAL.search(first_sentence)) and not cited_numbers(first_sentence)
        )
    dropped, invalid = tuple(work.dropped), tuple(work.invalid)
    if refused:
        return ValidationReport(
            text="", order=(), abstained=True, reason="refusal",
            dropped=dropped, invalid_citations=invalid, raw_citations=work.raw,
        )

    body = "\n".join(kept_lines).strip()
    order: list[int] = []
    for n in cited_numbers(body):
        if n not in order:
            order.append(n)
    if not order or work.claims == 0:
        return ValidationReport(
            text="", order=(), abstained=True, reason="no valid citation",
            dropped=dropped, invalid_citations=invalid, raw_citations=work.raw,
        )
    new_number = {old: new for new, old in enumerate(order, start=1)}
    final = _GROUP.sub(lambda m: "".join(f"[{new_number[n]}]" for n in parse_group(m.group(1))), body)
    return ValidationReport(
        text=final, order=tuple(order), abstained=False, kept_sentences=work.claims,
        dropped=dropped, invalid_citations=invalid, raw_citations=work.raw,
    )
