"""The evidence judgement: do the retrieved records answer the question? Decided by meaning.

A question is answered when its best records stand clearly above what this index returns for
questions it was not built for, and the two rankings and the question's concepts back them.
The signals (``Signals``), each meaningful across paraphrase:

* ``best_cosine``: the best dense cosine among the retrieved records;
* ``lift`` / ``above_high``: that cosine against the index's background (the median and the
  90th percentile of the best cosine the index gives its background questions,
  ``retrieval.index.background``): calibrated per index, not one global threshold;
* ``gap``: how far the best record stands above the pack (the median cosine of the top ten);
  a near miss meets a flat field of similar records;
* ``fused``: the hybrid score of the top hit;
* ``agreement``: how the lexical ranking rates the record the dense ranking puts first;
* ``concept_share``: the share of the question's specific phrases that the top records hold
  (an acronym the retrieved records define counts as its long form, and the other way round);
* ``unknown_share``: the share of the question's words no record has: a term the index has
  never seen counts against an answer, it is never skipped;
* ``title_only``: the best record has no abstract (its cosines run lower);
* ``rarest_held``: the question's rarest word the index knows (highest IDF) is in a top record.

They are combined by a logistic model whose weights ``bench/fit_judgement.py`` fits on the
*tuning* halves of the development sets only (``bench.common.split_half``); the held-out halves
measure it (``docs/performance.md``). ``ANSWER_PROBABILITY`` is the cut. Pure: no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from retrieval.index.acronyms import agreed, defined_in
from retrieval.index.background import Background
from retrieval.results import SearchHit
from retrieval.text import content_phrases, content_terms, phrase_runs

# stemmed word -> IDF in the index (``PaperIndex.term_rarity``; math.inf: no record has it)
Rarity = Callable[[str], float]

SIGNAL_NAMES = ("best_cosine", "lift", "above_high", "gap", "fused", "agreement", "concept_share",
                "unknown_share", "title_only", "rarest_held")

# Fitted by bench/fit_judgement.py on the tuning halves (docs/performance.md, "Evidence judgement").
WEIGHTS: dict[str, float] = {
    "best_cosine": 3.7816, "lift": 3.6015, "above_high": 3.418, "gap": 0.3397, "fused": 1.7017,
    "agreement": -0.2181, "concept_share": 0.4232, "unknown_share": -2.1419, "title_only": -2.5712,
    "rarest_held": 0.7827,
}
BIAS = -2.6628
ANSWER_PROBABILITY = 0.5
TOP_RECORDS = 3  # records whose words count for concept coverage
PACK = 10  # at most this many records (the k retrieved, 8 by default) whose median cosine is the pack the best record must stand above
COVER_SHARE = 0.75  # share of a phrase's words a record must hold to cover it

#: A background for callers that cannot measure one (a bare retriever): the 40 real publication
#: lists' index (1,625 records) measured 2026-12-03 (docs/performance.md).
TYPICAL_BACKGROUND = Background(median=0.2748, high=0.4034, records=1625, encoder="typical", questions=118)


@dataclass(frozen=True)
class Signals:
    """What the judgement reads (module docstring); ``values`` in ``SIGNAL_NAMES`` order."""

    best_cosine: float
    lift: float
    above_high: float
    gap: float
    fused: float
    agreement: float
    concept_share: float
    unknown_share: float
    title_only: float
    rarest_held: float

    def values(self) -> tuple[float, ...]:
        return tuple(float(getattr(self, name)) for name in SIGNAL_NAMES)


@dataclass(frozen=True)
class Verdict:
    """Answer or abstain, how sure, and what to say about it.

    ``closest``: the titles of the best records (what the index does hold); ``missing``: the
    question's phrases none of the top records holds in words (empty when all are there).
    """

    answer: bool
    probability: float
    signals: Signals | None
    closest: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()


def _stem_plain(term: str) -> str:
    return term[:-1] if len(term) > 3 and term.endswith("s") else term  # "llms" ~ "llm"


def covers(terms: set[str], phrase: tuple[str, ...]) -> bool:
    """True when ``terms`` (a record's stemmed content terms) hold ``COVER_SHARE`` of the phrase's words."""
    words = {_stem_plain(word) for word in phrase}
    plain = {_stem_plain(term) for term in terms}
    return sum(1 for word in words if word in plain) >= math.ceil(COVER_SHARE * len(words))


def _phrase_text(question: str) -> dict[tuple[str, ...], str]:
    """Each stemmed phrase of ``question`` -> its words as written (folded), for messages."""
    out: dict[tuple[str, ...], str] = {}
    for stems, words in phrase_runs(question):
        out.setdefault(stems, words)
    return out


def _top_terms(hits: Sequence[SearchHit]) -> list[set[str]]:
    """The content terms of the top records, whose words the concept signals read; a record
    writing an acronym holds its long form's terms too, and one writing the long form the
    acronym, as the retrieved records define them (``with_acronyms``)."""
    meanings = agreed(defined_in(part for hit in hits for part in (hit.paper.title, hit.paper.abstract)))
    return [with_acronyms(content_terms(hit.paper.embedding_text), meanings) for hit in hits[:TOP_RECORDS]]


def with_acronyms(terms: set[str], meanings: Mapping[str, tuple[str, ...]]) -> set[str]:
    """``terms`` (a record's stemmed content terms) with each defined concept in both writings:
    an acronym's long form added where the record holds the acronym ("llms" gives "larg",
    "languag", "model"), the acronym where it holds every word of the long form."""
    if not meanings:
        return terms
    plain = {_stem_plain(term) for term in terms}
    added = set(terms)
    for acronym, long_form in meanings.items():
        if acronym in plain:
            added.update(long_form)
        elif all(_stem_plain(word) in plain for word in long_form):
            added.add(acronym)
    return added


def measure_signals(question: str, hits: Sequence[SearchHit], background: Background,
                    rarity: Rarity | None = None) -> Signals | None:
    """The signals of ``hits`` (retriever order) for ``question``; None without any dense score
    (a lexical-only retriever: the judgement has nothing to read meaning from)."""
    return _signals(question, hits, background, rarity, _top_terms(hits))


def _signals(question: str, hits: Sequence[SearchHit], background: Background, rarity: Rarity | None,
             top_terms: list[set[str]]) -> Signals | None:
    dense = [hit for hit in hits if hit.dense_score is not None]
    if not dense:
        return None
    best_hit = max(dense, key=lambda hit: hit.dense_score or 0.0)
    best = float(best_hit.dense_score or 0.0)
    pack = sorted((float(hit.dense_score or 0.0) for hit in dense), reverse=True)[:PACK]
    phrases = [phrase for phrase in content_phrases(question) if len(set(phrase)) > 1] or content_phrases(question)
    covered = [phrase for phrase in phrases if any(covers(terms, phrase) for terms in top_terms)]
    terms = sorted(content_terms(question))
    idf = {term: rarity(term) for term in terms} if rarity is not None else {}
    unknown = [term for term in terms if idf.get(term) == math.inf]
    known = [(value, term) for term, value in idf.items() if 0 < value < math.inf]
    rarest = max(known)[1] if known else None
    held = rarest is None or any(covers(record, (rarest,)) for record in top_terms)
    return Signals(
        best_cosine=best,
        lift=best - background.median,
        above_high=best - background.high,
        gap=best - statistics.median(pack),
        fused=float(hits[0].score) if hits else 0.0,
        agreement=float(best_hit.lexical_score or 0.0),
        concept_share=len(covered) / len(phrases) if phrases else 1.0,
        unknown_share=len(unknown) / len(terms) if terms else 0.0,
        title_only=0.0 if (best_hit.paper.abstract or "").strip() else 1.0,
        rarest_held=1.0 if held else 0.0,
    )


def probability(signals: Signals, weights: dict[str, float] | None = None, bias: float | None = None) -> float:
    """The logistic model's probability that the records answer the question."""
    chosen = WEIGHTS if weights is None else weights
    z = (BIAS if bias is None else bias) + sum(chosen[name] * value
                                              for name, value in zip(SIGNAL_NAMES, signals.values(), strict=True))
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def judge(question: str, hits: Sequence[SearchHit], background: Background, rarity: Rarity | None = None) -> Verdict:
    """Answer or abstain for ``question`` over ``hits`` (module docstring)."""
    top_terms = _top_terms(hits)
    signals = _signals(question, hits, background, rarity, top_terms)
    closest = tuple(hit.paper.title for hit in hits[:2])
    if signals is None:
        return Verdict(answer=False, probability=0.0, signals=None, closest=closest)
    p = probability(signals)
    words = _phrase_text(question)
    missing = tuple(words.get(phrase, " ".join(phrase)) for phrase in content_phrases(question)
                    if not any(covers(terms, phrase) for terms in top_terms))
    return Verdict(answer=p >= ANSWER_PROBABILITY, probability=round(p, 4), signals=signals,
                   closest=closest, missing=missing)


def why_not(verdict: Verdict) -> str:
    """One sentence for an abstention: the question's phrases no top record holds, and what the
    closest records are about ("No indexed record mentions 'surface codes'; the closest: ...")."""
    closest = "; ".join(f"'{title}'" for title in verdict.closest)
    if verdict.missing:
        lead = f"No indexed record mentions {_named(verdict.missing)}"
    else:
        lead = "The closest records do not stand out from what this index returns for unrelated questions"
    return f"{lead}; the closest: {closest}." if closest else f"{lead}."


def matched_by_meaning(verdict: Verdict) -> str | None:
    """For an answer none of whose top records holds any of the question's phrases: say that the
    match is by meaning ("Matched by meaning: no cited record uses the words 'light instead of
    electronics'; ..."), so the reader checks it. None when some phrase is there in words."""
    if verdict.signals is None or verdict.signals.concept_share > 0 or not verdict.missing:
        return None
    return f"Matched by meaning: the top records do not use the question's words {_named(verdict.missing)}."


def _named(phrases: Sequence[str]) -> str:
    """The first three phrases, quoted, for a notice."""
    return ", ".join(f"'{phrase}'" for phrase in phrases[:3])
