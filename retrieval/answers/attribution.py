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
alone by ``misattributed``: that check is about credit given to the wrong record. Whether the
cited records support the sentence at all is ``unsupported``'s (validation drops what it names):

* **says nothing**: no content term once the words that frame a claim about a paper are
  gone (``CLAIM_FRAMING``: "The cited work proves this [1]."), or (when the abstracts are
  known) none of the cited titles' and abstracts' terms, only their venue's or bylines'
  ("International Conference on Learning Representations [3].", a reference list copied);
* **unsupported**: fewer than ``MIN_SUPPORT`` of its content terms are in the cited records'
  text, counting a term as there when it or a word sharing its first ``PREFIX`` letters is
  ("analysed" and "analysis", "theory" and "theoretical"): "The cited work proves that P
  equals NP [1]" shares no term with a record on light scattering;
* **wrong author**: it names an author ("Lops et al. report ...", "Lops and Gemmis show ...") who
  wrote none of the records it cites, but one of the others (or, with "et al.", no evidence
  record at all).

These are word checks: a sentence that passes shares the cited record's key terms and names
only its authors; whether it says what the record says is not checked (the mode line says so).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.records.paper import Author, Paper
from retrieval.text import content_terms, content_words, fold, stem_words

#: Share of an uncited record's own title terms a sentence must hold to be taken as naming it.
TITLE_COVER = 0.5
#: ...and at least this many of them.
MIN_OWN_TERMS = 2
#: Terms shared with one uncited record when the sentence shares none with its cited ones.
MIN_ORPHAN_TERMS = 3
#: Share of a claim's content terms the cited records' text must hold (at least one term).
MIN_SUPPORT = 1 / 3
#: Letters two stems must share to count as one term ("analys"/"analysi", "theori"/"theoret").
PREFIX = 5
#: Words that frame a claim about a paper instead of saying what it is about (content words
#: otherwise: ``text.EVIDENCE_STOPWORDS`` already holds "paper", "propose", "show"...).
CLAIM_FRAMING = frozenset([
    "cite", "cited", "cites", "citing", "prove", "proves", "proved", "proven", "demonstrate", "demonstrates",
    "demonstrated", "suggest", "suggests", "suggested", "claim", "claims", "claimed", "argue", "argues", "argued",
    "conclude", "concludes", "concluded", "provide", "provides", "provided", "focus", "focuses", "focused",
    "highlight", "highlights", "highlighted", "explain", "explains", "explained", "include", "includes",
    "included", "offer", "offers", "offered", "aim", "aims", "aimed", "consider", "considers", "considered",
    "relevant", "relevance", "first", "second", "third", "together", "overall", "various", "several", "many",
    "see", "given", "well", "way", "ways", "make", "makes", "made", "aspect", "aspects", "detail", "details",
    "et", "al",
])
# Slack control sequences and markup tags a reply may still hold (<!channel>): never content
_MARKUP = re.compile(r"<[^<>\n]{0,200}>")
_ET_AL = re.compile(r"\b([A-Z][\w'’-]+)\s+et\s+al\b")
_CAPITALISED = re.compile(r"(?<![\w'’-])([A-Z][\w'’-]+)")

@dataclass(frozen=True)
class _RecordTerms:
    title: frozenset[str]
    text: frozenset[str]  # title, abstract, authors, venue
    families: frozenset[str] = frozenset()  # its authors' family names, folded
    about: frozenset[str] = frozenset()  # title and abstract: what the paper is about (empty: unknown)

    @property
    def prefixes(self) -> frozenset[str]:
        return frozenset(term[:PREFIX] for term in self.text if len(term) >= PREFIX)


class EvidenceAttribution:
    """The evidence records' terms, numbered 1..n like the citations."""

    def __init__(self, records: Sequence[tuple[str, str]], families: Sequence[Sequence[str]] = (),
                 abstracts: Sequence[str] | None = None) -> None:
        """``records``: (title, full text) per evidence record, in citation order; ``families``:
        each record's authors' family names (none given: authors are not checked);
        ``abstracts``: each record's abstract (given: a claim must share a term with a cited
        title or abstract, not only with its venue or authors, module docstring)."""
        self._records = [
            _RecordTerms(frozenset(content_terms(title)), frozenset(content_terms(f"{title} {text}")),
                         frozenset(fold(name) for name in (families[n] if n < len(families) else ()) if name),
                         frozenset(content_terms(f"{title} {abstracts[n]}")) if abstracts is not None
                         else frozenset())
            for n, (title, text) in enumerate(records)
        ]
        self._families = frozenset().union(*(record.families for record in self._records))

    @classmethod
    def from_papers(cls, papers: Sequence[Paper]) -> EvidenceAttribution:
        """The attribution over evidence ``papers``, in citation order."""
        return cls([(p.title, " ".join([p.abstract or "", p.venue or "", *(a.name for a in p.authors)]))
                    for p in papers], [[_family(a) for a in p.authors] for p in papers],
                   [p.abstract or "" for p in papers])

    def __len__(self) -> int:
        return len(self._records)

    def says_something(self, sentence: str, cited: Sequence[int]) -> bool:
        """True when the sentence shares a content term with a record it cites ("The answer to
        the question is [2]." shares none: it cites without saying anything)."""
        terms = content_terms(sentence)
        return any(terms & self._records[n - 1].text for n in cited if 1 <= n <= len(self._records))

    def unsupported(self, sentence: str, cited: Sequence[int]) -> str | None:
        """Why the records the sentence ``cited`` do not support it ("says nothing",
        "unsupported", "wrong author"; module docstring), or None when they do."""
        records = [self._records[n - 1] for n in dict.fromkeys(cited) if 1 <= n <= len(self._records)]
        if not records:
            return None
        if self._credits_another_author(sentence, records):
            return "wrong author"
        names = {fold(name) for name in _ET_AL.findall(sentence)} | self._named_families(sentence)
        terms = claim_terms(sentence, exclude=names)
        if not terms:
            return "says nothing"
        about = [record.about for record in records if record.about]
        if about and len(about) == len(records) and not terms & frozenset().union(*about):
            return "says nothing"  # only the venue or the byline: "International Conference on Learning [3]."
        text = frozenset().union(*(record.text for record in records))
        prefixes = frozenset().union(*(record.prefixes for record in records))
        held = sum(term in text or (len(term) >= PREFIX and term[:PREFIX] in prefixes) for term in terms)
        return None if held >= max(1, math.ceil(MIN_SUPPORT * len(terms) - 1e-9)) else "unsupported"

    def _named_families(self, sentence: str) -> set[str]:
        """The evidence authors' family names the sentence names (a capitalised word)."""
        return {fold(word) for word in _CAPITALISED.findall(sentence) if fold(word) in self._families}

    def _credits_another_author(self, sentence: str, cited: Sequence[_RecordTerms]) -> bool:
        """True when the sentence names an author of none of the ``cited`` records: one of the
        other evidence records' authors, or anyone at all before "et al." (its first word only
        with "et al.": "Long-range ..." names nobody)."""
        theirs = frozenset().union(*(record.families for record in cited))
        text = frozenset().union(*(record.text for record in cited))
        et_al = {fold(name) for name in _ET_AL.findall(sentence)}
        if self._families and any(name not in theirs for name in et_al):
            return True
        first = _CAPITALISED.match(sentence.lstrip())
        named = self._named_families(sentence) - ({fold(first.group(1))} if first else set()) | et_al
        # a family name that is also a word of the cited record ("Markov" chains) names nobody
        return any(name not in theirs and not set(stem_words([name])) & text for name in named)

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


def _family(author: Author) -> str:
    """The family name of ``author``: the last word of the family the source gave, else of the
    name ("Lops, Pasquale" and "Pasquale Lops" alike)."""
    if author.family:
        name = author.family
    elif "," in author.name:
        name = author.name.split(",", 1)[0]
    else:
        name = author.name
    words = name.split()
    return words[-1] if words else ""


def claim_terms(sentence: str, *, exclude: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """The stemmed content terms of a claim: ``content_terms`` without ``CLAIM_FRAMING`` words
    and the (folded) names in ``exclude``."""
    words = [word for word in content_words(_MARKUP.sub(" ", re.sub(r"\[[\d,;\s\-–—]+\]", " ", sentence)))
             if word not in CLAIM_FRAMING and word not in exclude]
    return set(stem_words(words))
