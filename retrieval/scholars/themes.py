"""Grouping a scholar's papers into themes, with extractive labels and sentences.

How papers are grouped (no model needed, deterministic):

* Each paper becomes a TF-IDF vector over its *terms*: stemmed content words and two-word
  phrases of the title (counted twice) and abstract, plus its categories/topics as tokens.
  Inverse document frequencies come from a *background* (the whole index, see
  ``TermStats.from_papers``), so words every paper of the field uses ("learning", "model")
  weigh little and distinctive ones ("Luttinger liquid") a lot.
* When the caller has sentence embeddings of the papers (``vectors``), their cosine similarity
  replaces the TF-IDF one (it groups "VideoBooth" with "Vlogger" although the titles share no
  word), with its own thresholds (``DENSE_*``).
* Papers are merged by average-linkage agglomerative clustering on cosine similarity
  (``retrieval.scholars.linkage``) while the best pair of groups is at least
  ``MIN_THEME_SIMILARITY`` alike. When that leaves more than ``max_themes`` groups, the
  largest groups of two papers or more keep their own theme (at most ``max_themes - 1``) and
  everything else becomes one "Other topics" group.
* A theme's label is its two best phrases taken from its titles (one for a single paper),
  scored by the share of the theme's papers containing them times their background IDF
  (phrases favoured over words).
* Older papers are placed into the recent themes (for the timeline picture) when they are at
  least ``MIN_ASSIGN_SIMILARITY`` alike to a theme's papers on average, else into
  "Other topics".
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from retrieval.answers.evidence import neutralise
from retrieval.records.paper import Paper
from retrieval.scholars.linkage import Linkage, average_linkage
from retrieval.text import content_words, fold, stem_words

MIN_THEME_SIMILARITY = 0.12
MIN_ASSIGN_SIMILARITY = 0.08
# With sentence embeddings (all-MiniLM-L6-v2 cosine) instead of TF-IDF:
DENSE_MIN_THEME_SIMILARITY = 0.4
DENSE_MIN_ASSIGN_SIMILARITY = 0.3
OTHER_LABEL = "Other topics"
TITLE_WEIGHT = 2.0
MAX_TITLES_IN_SENTENCE = 4
MAX_QUOTE_CHARS = 260

_TOKEN = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_SEGMENT = re.compile(r"[:;,.!?()\[\]{}“”\"]|\s[-–—]\s")
# Words that qualify rather than name a subject: never part of a label or a phrase.
_FILLER_WORDS = (
    "toward towards comprehensive generic general simple simpler fast faster efficient effective "
    "robust improving improved rethinking revisiting beyond better unified universal practical "
    "scalable strong stronger via based large-scale"
)
# Phrase length -> weight: a longer phrase seen as often as its parts names the subject better.
_LENGTH_BONUS = {1: 1.0, 2: 1.5, 3: 1.8}
# A second phrase joins a label only when it scores at least this share of the first.
SECOND_PHRASE_SHARE = 0.5
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@lru_cache(maxsize=1)
def _filler() -> frozenset[str]:
    return frozenset(key for word in _FILLER_WORDS.split() if (key := _token_key(word)))


@lru_cache(maxsize=50_000)
def _token_key(surface: str) -> str | None:
    """Stemmed key of one surface token, or None for stopwords and numbers."""
    words = content_words(surface)
    if not words:
        return None
    return " ".join(stem_words(words))


def _display(surface: str) -> str:
    """Lowercase ordinary words, keep acronyms and mixed case ("NeRF", "3D", "LLaMA-Excitor")."""
    for part in re.split(r"[-'’]", surface):
        if any(ch.isupper() for ch in part[1:]) or any(ch.isdigit() for ch in part):
            return surface
    return surface.lower()


@dataclass
class _Terms:
    """Terms of one text: key -> weight, and key -> written forms seen (with weights).

    Weights are floats (titles count ``TITLE_WEIGHT``, title forms 0.25), hence no ``Counter``.
    """

    counts: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    surfaces: defaultdict[str, defaultdict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))


def _extract(text: str, weight: float, into: _Terms, *, title: bool) -> None:
    """Add words and 2-3 word phrases of ``text``; phrases never cross punctuation or a stopword.

    Title Case hides proper nouns ("Monte Carlo" vs "Learning"), so written forms seen in
    titles are lowercased and count less than the forms an abstract uses.
    """
    form_weight = 0.25 if title else 1.0
    for segment in _SEGMENT.split(text or ""):
        run: list[tuple[str, str]] = []
        for match in _TOKEN.finditer(segment):
            surface = match.group(0)
            key = _token_key(surface)
            if key is None or key in _filler():
                run = []
                continue
            run.append((key, _display(surface) if title else surface))
            for size in (1, 2, 3):
                if len(run) < size:
                    break
                window = run[-size:]
                if size > 1 and len({k for k, _ in window}) < size:
                    continue
                phrase = " ".join(k for k, _ in window)
                into.counts[phrase] += weight
                # a possessive ends no term ("learning’s" names "learning"), inside one it stays
                # ("Alzheimer’s disease")
                shown = " ".join(s for _, s in window[:-1]) + (" " if size > 1 else "") + _POSSESSIVE.sub("", window[-1][1])
                into.surfaces[phrase][shown] += form_weight


def paper_terms(paper: Paper) -> _Terms:
    """Weighted terms of a paper: title (x2), abstract, categories as ``cat:`` tokens."""
    terms = _Terms()
    _extract(paper.title, TITLE_WEIGHT, terms, title=True)
    _extract(paper.abstract or "", 1.0, terms, title=False)
    for category in paper.categories:
        terms.counts[f"cat:{fold(category)}"] += TITLE_WEIGHT
    return terms


def title_keys(paper: Paper) -> set[str]:
    terms = _Terms()
    _extract(paper.title, 1.0, terms, title=True)
    return set(terms.counts)


@dataclass(frozen=True)
class TermStats:
    """Document frequencies of terms over a background collection (usually the whole index)."""

    df: Mapping[str, int]
    n: int

    @classmethod
    def from_papers(cls, papers: Iterable[Paper]) -> TermStats:
        df: Counter[str] = Counter()
        n = 0
        for paper in papers:
            n += 1
            df.update(paper_terms(paper).counts.keys())
        return cls(df=dict(df), n=n)

    def idf(self, key: str) -> float:
        return math.log((self.n + 1) / (self.df.get(key, 0) + 1)) + 1.0


@dataclass
class ThemeGroup:
    """Papers of one theme, newest first, with the label that names it."""

    label: str  # capitalised, for headings and legends
    papers: list[Paper]
    central: Paper  # the paper most like the others: its abstract speaks for the theme
    terms: list[str] = field(default_factory=list)  # stemmed keys behind the label
    phrase: str = ""  # the label as written inside a sentence ("" for the "Other topics" group)
    highlights: list[str] = field(default_factory=list)  # "Other topics": a few salient phrases

    @property
    def years(self) -> str:
        years = sorted({p.year for p in self.papers if p.year is not None})
        if not years:
            return "undated"
        return str(years[0]) if years[0] == years[-1] else f"{years[0]}–{years[-1]}"


class _Space:
    """TF-IDF vectors of some papers in one shared vocabulary."""

    def __init__(self, papers: Sequence[Paper], background: TermStats) -> None:
        self.papers = list(papers)
        self.background = background
        self.terms = [paper_terms(p) for p in self.papers]
        vocabulary = sorted({k for t in self.terms for k in t.counts})
        self.column = {k: i for i, k in enumerate(vocabulary)}
        self.matrix = np.zeros((len(self.papers), len(vocabulary)), dtype=np.float64)
        for row, terms in enumerate(self.terms):
            for key, count in terms.counts.items():
                self.matrix[row, self.column[key]] = (1.0 + math.log(count)) * background.idf(key)
        norms = np.linalg.norm(self.matrix, axis=1, keepdims=True)
        self.matrix /= np.where(norms == 0, 1.0, norms)

    def similarity(self) -> np.ndarray:
        return self.matrix @ self.matrix.T

    def vector(self, paper: Paper) -> np.ndarray:
        """``paper`` in this space, normalised over *all* its terms (also those outside the
        vocabulary), so that a paper sharing one word with the pool is not mistaken for a
        close one."""
        terms = paper_terms(paper)
        vec = np.zeros(self.matrix.shape[1], dtype=np.float64)
        norm_sq = 0.0
        for key, count in terms.counts.items():
            weight = (1.0 + math.log(count)) * self.background.idf(key)
            norm_sq += weight * weight
            if key in self.column:
                vec[self.column[key]] = weight
        return vec / math.sqrt(norm_sq) if norm_sq else vec


def phrase_bonus(key: str) -> float:
    """A term's weight by its length in words (``_LENGTH_BONUS``); 0 for a ``cat:`` token."""
    return _LENGTH_BONUS.get(len(key.split()), 1.0) if not key.startswith("cat:") else 0.0


def best_surface(key: str, terms: Sequence[_Terms]) -> str:
    """How ``key`` is written most often in ``terms`` (ties: the form with capitals)."""
    seen: defaultdict[str, float] = defaultdict(float)
    for t in terms:
        for form, weight in t.surfaces.get(key, {}).items():
            seen[form] += weight
    if not seen:
        return key
    # prefer the form most used; ties to the one with capitals kept (acronyms, proper nouns)
    return max(seen, key=lambda s: (seen[s], s != s.lower(), s))


def label_for(papers: Sequence[Paper], background: TermStats, *, limit: int = 2) -> tuple[str, list[str]]:
    """(phrase, keys): the best ``limit`` phrases of the papers' titles, non-overlapping;
    ("", []) when the titles have no content word at all."""
    terms = [paper_terms(p) for p in papers]
    in_titles = set().union(*(title_keys(p) for p in papers)) if papers else set()
    share: Counter[str] = Counter()
    for t in terms:
        share.update(k for k in t.counts if k in in_titles)
    needed = 2 if len(papers) >= 2 else 1
    scored: list[tuple[float, str]] = []
    for key, count in share.items():
        if count < needed:
            continue
        scored.append((count / len(papers) * background.idf(key) * phrase_bonus(key), key))
    if not scored and needed > 1:  # nothing shared: fall back to the most central title's words
        return label_for(papers[:1], background, limit=limit)
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen: list[str] = []
    used: set[str] = set()
    for score, key in scored:
        stems = set(key.split())
        if stems & used:
            continue
        if chosen and score < SECOND_PHRASE_SHARE * scored[0][0]:
            break
        chosen.append(key)
        used |= stems
        if len(chosen) == limit:
            break
    if not chosen:
        return "", []
    return ", ".join(best_surface(k, terms) for k in chosen), chosen


def capitalise(phrase: str) -> str:
    return phrase[:1].upper() + phrase[1:]


def _newest_first(papers: Iterable[Paper]) -> list[Paper]:
    return sorted(papers, key=lambda p: (p.published or "", p.title), reverse=True)


Vectors = Mapping[str, np.ndarray]  # paper id -> L2-normalised sentence embedding


def _dense(papers: Sequence[Paper], vectors: Vectors | None) -> np.ndarray | None:
    if not vectors or not papers or any(p.id not in vectors for p in papers):
        return None
    return np.vstack([np.asarray(vectors[p.id], dtype=np.float64) for p in papers])


def group_into_themes(
    papers: Sequence[Paper],
    background: TermStats,
    *,
    vectors: Vectors | None = None,
    max_themes: int = 5,
    linkage: Linkage = average_linkage,
) -> list[ThemeGroup]:
    """Themes of ``papers`` (see the module docstring), largest first, then most recent.

    ``linkage`` computes the groups (``naive_average_linkage`` gives the same ones, slowly: the
    baseline of ``bench/summarize_speed.py``)."""
    if not papers:
        return []
    dense = _dense(papers, vectors)
    if dense is not None:
        similarity, threshold = dense @ dense.T, DENSE_MIN_THEME_SIMILARITY
    else:
        similarity, threshold = _Space(papers, background).similarity(), MIN_THEME_SIMILARITY
    clusters = linkage(similarity, threshold)
    clusters.sort(key=lambda members: (-len(members), -max(_date_rank(papers[i]) for i in members)))
    other_index = -1
    if len(clusters) > max_themes:
        # too many groups: name the largest ones that hold two papers or more, the rest is "other"
        named = [c for c in clusters[: max_themes - 1] if len(c) >= 2]
        rest = [i for members in clusters[len(named):] for i in members]
        clusters = [*named, rest]
        other_index = len(clusters) - 1
    themes: list[ThemeGroup] = []
    for index, members in enumerate(clusters):
        block = similarity[np.ix_(members, members)]
        central = papers[members[int(np.argmax(block.sum(axis=1)))]]
        group_papers = [papers[i] for i in members]
        phrase = ""
        keys: list[str] = []
        if index != other_index:
            ordered = [central] + [p for p in group_papers if p is not central]
            phrase, keys = label_for(ordered, background, limit=2 if len(ordered) > 1 else 1)
        themes.append(
            ThemeGroup(
                label=capitalise(phrase) if phrase else OTHER_LABEL,
                papers=_newest_first(group_papers),
                central=central,
                terms=keys,
                phrase=phrase,
                highlights=[] if phrase else salient_terms(group_papers, background, limit=3, phrases_only=True),
            )
        )
    _disambiguate_labels(themes)
    return themes


def _date_rank(paper: Paper) -> int:
    digits = re.sub(r"\D", "", paper.published or "")
    return int((digits + "0000")[:8]) if digits else 0


def _disambiguate_labels(themes: list[ThemeGroup]) -> None:
    seen: Counter[str] = Counter()
    for theme in themes:
        seen[theme.label] += 1
        if seen[theme.label] > 1:
            theme.label = f"{theme.label} ({seen[theme.label]})"


def assign_to_themes(
    papers: Sequence[Paper],
    themes: Sequence[ThemeGroup],
    background: TermStats,
    *,
    vectors: Vectors | None = None,
) -> dict[str, str]:
    """Paper id -> theme label for any papers (older ones included): the most similar theme
    on average, or ``OTHER_LABEL`` below ``MIN_ASSIGN_SIMILARITY``."""
    member_of = {p.id: t.label for t in themes for p in t.papers}
    pool = [p for t in themes for p in t.papers]
    if not pool:
        return {p.id: OTHER_LABEL for p in papers}
    outside = [p for p in papers if p.id not in member_of]
    if not outside:  # e.g. a whole-career window: no paper to compare
        return {p.id: member_of[p.id] for p in papers}
    dense = _dense([*pool, *outside], vectors)
    space = None if dense is not None else _Space(pool, background)
    threshold = DENSE_MIN_ASSIGN_SIMILARITY if dense is not None else MIN_ASSIGN_SIMILARITY
    owner = [t.label for t in themes for _ in t.papers]
    placed: dict[str, str] = {}
    for row, paper in enumerate(outside):
        if dense is not None:
            sims = dense[: len(pool)] @ dense[len(pool) + row]
        else:
            assert space is not None
            sims = space.matrix @ space.vector(paper)
        by_theme: dict[str, list[float]] = defaultdict(list)
        for label, value in zip(owner, sims, strict=True):
            by_theme[label].append(float(value))
        candidates = {label: sum(v) / len(v) for label, v in by_theme.items() if label != OTHER_LABEL}
        best = max(candidates.items(), key=lambda item: item[1], default=(OTHER_LABEL, 0.0))
        placed[paper.id] = best[0] if best[1] >= threshold else OTHER_LABEL
    return {p.id: member_of.get(p.id) or placed[p.id] for p in papers}


def keyness(count: int, key: str, papers: int, background: TermStats) -> float:
    """How much using ``key`` in ``count`` of ``papers`` papers sets them apart from ``background``:
    ``count x log(count / expected)``, where ``expected = papers x df / N`` is how many of them would
    use it if they used it as the background does, times the phrase-length bonus. A word that every
    paper of the field uses ("model", "systems") is expected nearly as often as it is seen and scores
    little, however often it is used; a rare word used by many of the papers scores most. Positive
    for a term used more than expected, 0 or less otherwise (such a term is no topic).

    When the background holds fewer other papers than ``papers`` (an index of one scholar's list),
    there is too little to compare with, and the score is ``count x idf`` (how rare the term is in
    the background) times the bonus instead."""
    if background.n - papers < papers:
        return count * background.idf(key) * phrase_bonus(key)
    expected = papers * max(background.df.get(key, 0), count) / background.n
    return count * math.log(count / expected) * phrase_bonus(key)


def salient_terms(
    papers: Sequence[Paper], background: TermStats, *, limit: int = 8, phrases_only: bool = False
) -> list[str]:
    """Terms that set ``papers`` apart from the background (a profile's topics, an "Other topics"
    group's highlights), best first; ``phrases_only`` skips single words.

    Candidates are the terms of the papers' titles, counted in the papers that use them anywhere
    (title or abstract) and scored by ``keyness``. With four papers or more, a term must be used by two
    of them, and a single word must be in two of their titles: a verb of one title that abstracts use
    everywhere ("increases") is no topic. A term all of whose stems a better one already shows is
    skipped. (The rule and ``keyness`` were chosen on the tuning half of ``bench/summarize_topics.py``;
    its figures are in docs/performance.md.)"""
    if not papers:
        return []
    terms = [paper_terms(p) for p in papers]
    in_title = [title_keys(p) for p in papers]
    titles = set().union(*in_title)
    share: Counter[str] = Counter()
    for t in terms:
        share.update(k for k in t.counts if k in titles)
    title_share = Counter(k for keys in in_title for k in keys)
    many = len(papers) >= 4
    scored: list[tuple[float, str]] = []
    for key, count in share.items():
        single = " " not in key
        if (many and count < 2) or (single and (phrases_only or (many and title_share[key] < 2))):
            continue
        value = keyness(count, key, len(papers), background)
        if value > 0:
            scored.append((value, key))
    return [best_surface(key, terms) for key in best_terms(scored, limit)]


def best_terms(scored: Sequence[tuple[float, str]], limit: int) -> list[str]:
    """The ``limit`` best keys of ``scored`` ((score, key) pairs; ties by key), skipping a key all
    of whose stems the keys chosen before it already show."""
    chosen: list[str] = []
    used: set[str] = set()
    for _, key in sorted(scored, key=lambda item: (-item[0], item[1])):
        stems = set(key.split())
        if stems <= used:
            continue
        chosen.append(key)
        used |= stems
        if len(chosen) == limit:
            break
    return chosen


# --- extractive sentences ----------------------------------------------------------------------


def _quote(title: str) -> str:
    return f"“{neutralise(title).rstrip('.')}”"


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def best_sentence(paper: Paper, keys: Sequence[str]) -> str | None:
    """The abstract sentence of ``paper`` that carries most of ``keys`` (None without one)."""
    if not paper.abstract:
        return None
    wanted = {part for key in keys for part in key.split()}
    best: tuple[int, int, str] | None = None
    for position, sentence in enumerate(_SENTENCE.split(neutralise(paper.abstract))):
        sentence = sentence.strip()
        if not 40 <= len(sentence) <= MAX_QUOTE_CHARS:
            continue
        present = {_token_key(m.group(0)) for m in _TOKEN.finditer(sentence)}
        score = len(wanted & present)
        if best is None or (score, -position) > (best[0], best[1]):
            best = (score, -position, sentence)
    return best[2] if best else None


def extractive_theme_text(theme: ThemeGroup, numbers: Mapping[str, int]) -> str:
    """One or two sentences for a theme, citing its papers with ``numbers[paper.id]``."""
    count = len(theme.papers)
    noun = "paper" if count == 1 else "papers"
    shown = theme.papers[:MAX_TITLES_IN_SENTENCE]
    items = [f"{_quote(p.title)} [{numbers[p.id]}]" for p in shown]
    rest = theme.papers[MAX_TITLES_IN_SENTENCE:]
    if rest:
        items.append(f"{len(rest)} more " + "".join(f"[{numbers[p.id]}]" for p in rest))
    if theme.phrase:
        text = f"{count} {noun} on {theme.phrase} ({theme.years}): {_join(items)}."
    elif theme.highlights and count > 1:
        text = f"{count} {noun} on various topics ({theme.years}), among them {_join(theme.highlights)}: {_join(items)}."
    else:
        text = f"{count} {noun} ({theme.years}): {_join(items)}."
    quote = best_sentence(theme.central, theme.terms)
    if quote and count > 0:
        text += f" From the abstract of [{numbers[theme.central.id]}]: “{quote.rstrip()}”"
    return text
