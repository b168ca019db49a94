"""Does a cited sentence talk about the record it cites, or about another one?

A valid citation number is not yet a correct one. Small models number their output as a list
and then cite by list position, or shift every ``[k]`` by one: "1. *Title of record 3* [1]".
Each such sentence has a valid citation and would be kept, while it credits one record with
another's work. ``EvidenceAttribution.misattributed`` catches the clear cases by comparing the
sentence's content terms (``text.content_terms``: stemmed, without stopwords and numbers, so
citation marks never count) with the evidence records:

* the sentence **names an uncited record**: it holds at least half (``TITLE_COVER``), and at
  least ``MIN_OWN_TERMS``, of the terms of that record's title that the cited records' titles
  lack, while it holds less than half as large a share of what the cited titles have and the
  named one lacks, and the named record's text accounts for more of the sentence's terms than
  the cited records' texts do (a sentence taken from the cited abstract is never flagged).
  Comparing titles after taking out what they share keeps the question's
  topic, which is in every title, from deciding. Or:
* it shares **nothing** with any record it cites (title, abstract, authors, venue), but
  ``MIN_ORPHAN_TERMS`` or more terms with one it does not cite.

A sentence that shares nothing with any record ("This line of work matters [2].") is left
alone: the check is about credit given to the wrong record, not about vagueness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.records.paper import Paper
from retrieval.text import content_terms

#: Share of an uncited record's own title terms a sentence must hold to be taken as naming it.
TITLE_COVER = 0.5
#: ...and at least this many of them.
MIN_OWN_TERMS = 2
#: Terms shared with one uncited record when the sentence shares none with its cited ones.
MIN_ORPHAN_TERMS = 3

@dataclass(frozen=True)
class _RecordTerms:
    title: frozenset[str]
    text: frozenset[str]  # title, abstract, authors, venue


class EvidenceAttribution:
    """The evidence records' terms, numbered 1..n like the citations."""

    def __init__(self, records: Sequence[tuple[str, str]]) -> None:
        """``records``: (title, full text) per evidence record, in citation order."""
        self._records = [
            _RecordTerms(frozenset(content_terms(title)), frozenset(content_terms(f"{title} {text}")))
            for title, text in records
        ]

    @classmethod
    def from_papers(cls, papers: Sequence[Paper]) -> EvidenceAttribution:
        """The attribution over evidence ``papers``, in citation order."""
        return cls([(p.title, " ".join([p.abstract or "", p.venue or "", *(a.name for a in p.authors)]))
                    for p in papers])

    def __len__(self) -> int:
        return len(self._records)

    def says_something(self, sentence: str, cited: Sequence[int]) -> bool:
        """True when the sentence shares a content term with a record it cites ("The answer to
        the question is [2]." shares none: it cites without saying anything)."""
        terms = content_terms(sentence)
        return any(terms & self._records[n - 1].text for n in cited if 1 <= n <= len(self._records))

    def misattributed(self, sentence: str, cited: Sequence[int]) -> int | None:
        """The record (1-based) the sentence is about instead of those it ``cited``, or None."""
        numbers = [n for n in dict.fromkeys(cited) if 1 <= n <= len(self._records)]
        if not numbers:
            return None
        terms = content_terms(sentence)
        if not terms:
            return None
        cited_records = [self._records[n - 1] for n in numbers]
        cited_text = frozenset().union(*(record.text for record in cited_records))
        orphan = not terms & cited_text
        best: tuple[float, int] | None = None  # (share of its own title terms named, record number)
        for number, record in enumerate(self._records, start=1):
            if number in numbers:
                continue
            named = _named_share(terms, record, cited_records)
            if named is not None and len(terms & record.text) <= len(terms & cited_text):
                named = None  # the cited records account for the sentence at least as well
            if named is None and orphan and len(terms & record.text) >= MIN_ORPHAN_TERMS:
                named = 0.0
            if named is not None and (best is None or named > best[0]):
                best = (named, number)
        return best[1] if best else None


def _named_share(terms: set[str], record: _RecordTerms, cited: Sequence[_RecordTerms]) -> float | None:
    """The share of ``record``'s own title terms (those no cited title has) that ``terms``
    hold, when that makes the sentence name ``record`` rather than a cited record; else None."""
    own = record.title - frozenset().union(*(c.title for c in cited))
    hit = len(terms & own)
    if hit < MIN_OWN_TERMS or hit / len(own) < TITLE_COVER:
        return None
    share = hit / len(own)
    for other in cited:
        theirs = other.title - record.title
        if theirs and len(terms & theirs) / len(theirs) >= share / 2:
            return None  # the sentence names a cited record as well: a comparison, not a slip
    return share
