"""Text keys: folding, tokenising, stopwords and the one stemmer, for every part that compares words.

Each function has one purpose; they differ on purpose, and merging any two would change what
users get (``hash:`` ids, BM25 tokens, evidence decisions, theme labels, follow matches):

Folds
  * ``fold``: ASCII alphanumeric words for title keys (hence ``hash:`` ids), author, venue and
    name comparisons. Accents go; other scripts than Latin are transliterated (``anyascii``).
    ``folded`` is the same, cached, for the short strings that repeat (names, affiliations).
  * ``strip_accents``: BM25's fold: lowercase without accents, other scripts kept as they are
    (CJK text is indexed as character bigrams, which transliteration would destroy).

Tokenisers and their stopword lists
  * ``bm25_tokens``: the lexical index and its queries; ``BM25_STOPWORDS`` is bm25s' English
    list, pinned here so a bm25s upgrade cannot change the tokens of a built index. Any change
    to this tokeniser must bump ``retrieval.index.lexical.TOKENIZER_VERSION``.
  * ``content_words`` / ``content_terms`` / ``content_phrases``: what a question, a record, a
    cited sentence or a theme label is about; ``EVIDENCE_STOPWORDS`` also drops the framing
    of questions ("which papers propose"). Numbers and one-letter words never count.
  * ``follow_terms``: what a topic follow must find in a paper; ``FOLLOW_STOPWORDS`` is short
    and keeps numbers and one-letter words ("topic 5G", "topic C").

``stem_words`` is the one stemmer (Snowball English, PyStemmer) behind a lock with a cache:
PyStemmer objects, and the cache, are not thread-safe, and the Slack bot calls all of this
on worker threads. Stemming a word does not depend on the words around it, so one shared
stemmer and cache give every caller what its own stemmer gave. ``bm25_tokens`` keeps a second
cache under the same lock, each word it finds -> its token (or none), to spare a BM25 build
the per-word filter and the two passes of ``stem_words``.

This module sits at the bottom: it imports nothing of ``retrieval``.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import Concatenate, Generic, ParamSpec, TypeVar

import Stemmer
from anyascii import anyascii

_P = ParamSpec("_P")
_R = TypeVar("_R")

# Folding -----------------------------------------------------------------------------------

# Letters that Unicode decomposition leaves alone ("Martı́n", "Łukasz", "Søren").
LATIN_LETTERS = str.maketrans({
    "ı": "i", "ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ß": "ss",
    "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "þ": "th", "Þ": "Th", "ð": "d", "Ð": "D",
})


_NOT_ALNUM = re.compile(r"[^a-z0-9]+")
_LETTER_OR_DIGIT = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd"})
_LATIN_NAMES = ("LATIN ", "MODIFIER LETTER ", "FEMININE ORDINAL", "MASCULINE ORDINAL")
_IDEOGRAPH_NAMES = ("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH")


@cache
def _latin_fold(char: str) -> str:
    """The fold of one non-ASCII character before transliteration existed: its ASCII letters
    after decomposition (accents dropped), or a separator."""
    parts = (part.lower() for part in unicodedata.normalize("NFKD", char) if not unicodedata.combining(part))
    return "".join(part if part.isascii() else " " for part in parts)


@cache
def _foreign(char: str) -> str | None:
    """Transliteration of a letter or digit of a non-Latin script that decomposition cannot
    fold ("ж" -> "zh", "深" -> " shen ": ideographs are words of their own); None for others.

    Modifier letters (the ʻokina, ʼ) count as Latin: they sit in Latin names.
    """
    if unicodedata.category(char) not in _LETTER_OR_DIGIT or _NOT_ALNUM.sub("", _latin_fold(char)):
        return None
    name = unicodedata.name(char, "")
    if name.startswith(_LATIN_NAMES):
        return None
    text = _NOT_ALNUM.sub("", anyascii(char).lower())
    return f" {text} " if text and name.startswith(_IDEOGRAPH_NAMES) else text


def is_non_latin_letter(char: str) -> bool:
    """True for a letter or digit of another script than Latin that only transliteration folds
    ("ж", "深", "α", "٣"); False for "é", "ł", "ℓ", "ʻ", symbols and ASCII."""
    return not char.isascii() and _foreign(char) is not None


def has_non_latin_letters(value: str) -> bool:
    """True when ``value`` holds a letter or digit that only transliteration folds."""
    return not value.isascii() and any(is_non_latin_letter(char) for char in value.translate(LATIN_LETTERS))


def fold(value: str) -> str:
    """Lowercase ASCII-folded alphanumerics, for comparing names and titles.

    Latin text loses its accents (``LATIN_LETTERS`` covers the letters decomposition leaves
    alone) and folds exactly as it did before other scripts were transliterated, so Latin
    titles keep their ``hash:`` ids. Letters of other scripts are transliterated (``anyascii``,
    ``_foreign``): two different Chinese or Cyrillic titles no longer fold to the same empty
    key. A combining mark after such a letter is transliterated with it (Devanagari vowel
    signs); after a Latin letter it is an accent and vanishes. ASCII text, the common case
    on a hot path, skips all of it. The result holds only ``a-z``, ``0-9`` and single spaces.
    """
    if value.isascii():
        return _NOT_ALNUM.sub(" ", value.lower()).strip()
    parts: list[str] = []
    after_foreign = False
    for char in value.translate(LATIN_LETTERS):
        if char.isascii():
            parts.append(char)
            after_foreign = False
            continue
        foreign = _foreign(char)
        if foreign is not None:
            parts.append(foreign)
            after_foreign = True
        elif after_foreign and unicodedata.category(char)[0] == "M":
            parts.append(_NOT_ALNUM.sub("", anyascii(char).lower()))
        else:
            parts.append(_latin_fold(char))
            after_foreign = False
    return _NOT_ALNUM.sub(" ", "".join(parts).lower()).strip()


@lru_cache(maxsize=131072)
def folded(text: str) -> str:
    """``fold``, cached: written names and affiliations repeat across an index."""
    return fold(text)


class ShortTextCache(Generic[_P, _R]):
    """A pure function of a text (its first argument), cached for texts up to ``max_length``.

    Names, venues and titles repeat across a publication list, so caching them pays; an
    abstract, or a hostile field of megabytes, is computed each time and never kept, so the
    cache holds at most ``maxsize`` short texts. Thread-safe (``functools.lru_cache``).
    ``cache_clear`` empties it (tests that patch what the function reads).
    """

    def __init__(self, function: Callable[Concatenate[str, _P], _R], *, max_length: int, maxsize: int) -> None:
        self._function = function
        self._cached = lru_cache(maxsize=maxsize)(function)
        self._max_length = max_length
        functools.update_wrapper(self, function)

    def __call__(self, text: str, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if len(text) <= self._max_length:
            cached: Callable[..., _R] = self._cached  # its arguments must be hashable, as they are here
            return cached(text, *args, **kwargs)
        return self._function(text, *args, **kwargs)

    def cache_clear(self) -> None:
        self._cached.cache_clear()


def short_text_cache(*, max_length: int, maxsize: int
                     ) -> Callable[[Callable[Concatenate[str, _P], _R]], ShortTextCache[_P, _R]]:
    """Decorator form of ``ShortTextCache``."""
    def decorate(function: Callable[Concatenate[str, _P], _R]) -> ShortTextCache[_P, _R]:
        return ShortTextCache(function, max_length=max_length, maxsize=maxsize)

    return decorate


# Combining marks (Latin/Greek/Cyrillic accents, Hebrew and Arabic vowel signs...). Hangul is
# safe: NFKD splits its syllables into conjoining jamo, which are letters, and NFC rejoins them.
_COMBINING = re.compile(
    "[\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
    "\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
)


def strip_accents(text: str) -> str:
    """Lowercase and strip accents (``Café`` -> ``cafe``), keeping every script; ASCII text
    takes a fast path. BM25's fold (``bm25_tokens``)."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return unicodedata.normalize("NFC", _COMBINING.sub("", decomposed))


# Stemming ----------------------------------------------------------------------------------

_STEMMER = Stemmer.Stemmer("english")
# PyStemmer's own cache (10,000 words) only repeats _STEMS and _BM25_WORDS, and keeping it costs
# twice the stemming of a word; off, every stem is the same.
_STEMMER.maxCacheSize = 0
_STEMMER_LOCK = threading.Lock()  # guards _STEMMER, _STEMS and _BM25_WORDS: none is thread-safe
_STEMS: dict[str, str] = {}
_STEM_CACHE_LIMIT = 500_000  # distinct words; the cache starts over when it would exceed this


def stem_words(words: Sequence[str]) -> list[str]:
    """The English Snowball stems of ``words``, in order; safe to call from any thread.

    Through a cache: a corpus repeats few distinct words many times. When the cache starts
    over, all of this call's words are stemmed again (the ones it had are gone with it).
    """
    with _STEMMER_LOCK:
        new = list({word for word in words if word not in _STEMS})
        if new:
            if len(_STEMS) + len(new) > _STEM_CACHE_LIMIT:
                _STEMS.clear()
                new = list(set(words))
            _STEMS.update(zip(new, _STEMMER.stemWords(new), strict=True))
        return [_STEMS[word] for word in words]


# BM25 tokens -------------------------------------------------------------------------------

#: bm25s' ``STOPWORDS_EN`` (bm25s 0.3.16), pinned: see the module docstring.
BM25_STOPWORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
])

_UNICODE_WORD = re.compile(r"[^\W_]+")
# ASCII text's words are its runs of letters and digits (``_UNICODE_WORD``): every other ASCII
# character made a space, then ``split``, is twice as fast as ``findall`` (str.translate has an
# ASCII fast path).
_ASCII_SEPARATORS = str.maketrans({chr(code): " " for code in range(128) if not chr(code).isalnum()})
# CJK ideographs, kana and hangul: scripts written without spaces, indexed as character bigrams.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def _cjk_grams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def bm25_tokens(text: str) -> list[str]:
    """Lowercased, accent-folded, stopword-free, stemmed tokens; CJK runs become bigrams.

    Never raises on any script: Arabic, Cyrillic... words pass through the English stemmer
    unchanged, CJK text is split into overlapping character pairs.
    """
    text = strip_accents(text)
    if text.isascii():
        return _word_tokens(text.translate(_ASCII_SEPARATORS).split())
    if not _CJK.search(text):
        return _word_tokens(_UNICODE_WORD.findall(text))
    words: list[str] = []
    grams: list[str] = []
    for word in _UNICODE_WORD.findall(text):
        if not _CJK.search(word):
            if len(word) >= 2 and word not in BM25_STOPWORDS:
                words.append(word)
            continue
        position = 0
        for run in _CJK.finditer(word):
            rest = word[position : run.start()]
            if len(rest) >= 2:
                words.append(rest)
            grams.extend(_cjk_grams(run.group()))
            position = run.end()
        if len(word) - position >= 2:
            words.append(word[position:])
    return stem_words(words) + grams


# Each word ``bm25_tokens`` found (before the length and stopword filter) -> its token, None for
# a dropped word; guarded by _STEMMER_LOCK, started over like _STEMS.
_BM25_WORDS: dict[str, str | None] = {}


def _word_tokens(found: list[str]) -> list[str]:
    """``stem_words`` of the ``found`` words of two letters or more that are not
    ``BM25_STOPWORDS``, in order; one cache lookup a word once every word is cached."""
    with _STEMMER_LOCK:
        try:
            return [token for word in found if (token := _BM25_WORDS[word]) is not None]
        except KeyError:
            pass
        new = set(found).difference(_BM25_WORDS)
        if len(_BM25_WORDS) + len(new) > _STEM_CACHE_LIMIT:
            _BM25_WORDS.clear()
            new = set(found)
        kept = [word for word in new if len(word) >= 2 and word not in BM25_STOPWORDS]
        _BM25_WORDS.update(dict.fromkeys(new))
        _BM25_WORDS.update(zip(kept, _STEMMER.stemWords(kept), strict=True))
        return [token for word in found if (token := _BM25_WORDS[word]) is not None]


# Content words (evidence, attribution, extractive answers, themes) -------------------------

#: English function words, plus the framing people wrap questions in ("which papers propose").
EVIDENCE_STOPWORDS = frozenset([
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are", "aren",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "cannot", "could", "did", "didn", "do", "does", "doesn", "doing", "don", "down", "during", "each", "else",
    "ever", "few", "for", "from", "further", "get", "gets", "got", "had", "hadn", "has", "hasn", "have", "haven",
    "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is",
    "isn", "it", "its", "itself", "just", "let", "lets", "like", "me", "might", "more", "most", "much", "must",
    "mustn", "my", "myself", "no", "nor", "not", "now", "of", "off", "often", "on", "once", "one", "only", "onto",
    "or", "other", "others", "our", "ours", "ourselves", "out", "over", "own", "per", "please", "same", "shall",
    "shan", "she", "should", "shouldn", "since", "so", "some", "such", "than", "that", "the", "their", "theirs",
    "them", "themselves", "then", "there", "these", "they", "this", "those", "though", "through", "thus", "to",
    "too", "under", "until", "up", "upon", "us", "very", "via", "was", "wasn", "we", "were", "weren", "what",
    "whatever", "when", "where", "whether", "which", "while", "who", "whom", "whose", "why", "will", "with",
    "within", "without", "won", "would", "wouldn", "yet", "you", "your", "yours", "yourself", "yourselves", "paper",
    "papers", "article", "articles", "work", "works", "publication", "publications", "study", "studies", "research",
    "researcher", "researchers", "author", "authors", "scholar", "scholars", "record", "records", "indexed",
    "index", "propose", "proposes", "proposed", "proposing", "present", "presents", "presented", "introduce",
    "introduces", "introduced", "describe", "describes", "described", "discuss", "discusses", "discussed",
    "address", "addresses", "addressed", "investigate", "investigates", "investigated", "examine", "examines",
    "examined", "explore", "explores", "explored", "report", "reports", "reported", "show", "shows", "showed",
    "shown", "find", "finds", "found", "use", "uses", "used", "using", "approach", "approaches", "method",
    "methods", "technique", "techniques", "anyone", "someone", "something", "anything", "recent", "recently", "new",
    "novel", "existing", "known", "tell", "give", "list", "name", "mention", "mentions", "regarding", "related",
    "relate", "relates", "relating", "topic", "topics", "question", "questions", "answer", "answers"
])


def _is_content_word(word: str) -> bool:
    return len(word) > 1 and not word.isdigit() and word not in EVIDENCE_STOPWORDS


def content_words(text: str) -> list[str]:
    """Lowercased, ASCII-folded words of ``text`` minus stopwords, numbers and 1-letter tokens."""
    return [word for word in fold(text).split() if _is_content_word(word)]


def content_terms(text: str) -> set[str]:
    """Stemmed content words: what "shares a word with the question" compares."""
    return set(stem_words(content_words(text)))


def content_phrases(text: str) -> list[tuple[str, ...]]:
    """Runs of stemmed content words of ``text``, first occurrences in order.

    A run ends at a stopword, a number or a one-letter word. Not at punctuation: ``fold`` has
    already turned it into spaces ("surface codes, quantum error" is one run).
    """
    return list(dict.fromkeys(stems for stems, _ in phrase_runs(text)))


def phrase_runs(text: str) -> list[tuple[tuple[str, ...], str]]:
    """The runs of ``content_phrases`` with their folded words as written: ``(stems, words)``,
    every occurrence in order (for messages that name a phrase)."""
    runs: list[tuple[tuple[str, ...], str]] = []
    run: list[str] = []
    for word in [*fold(text).split(), ""]:
        if word and _is_content_word(word):
            run.append(word)
        elif run:
            runs.append((tuple(stem_words(run)), " ".join(run)))
            run = []
    return runs


# Follow terms ------------------------------------------------------------------------------

#: What a topic follow ignores: articles, prepositions and the words of "new paper on ...".
FOLLOW_STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of", "on", "or",
     "the", "to", "with", "about", "via", "using", "based", "towards", "toward", "new", "study", "studies", "paper",
     "papers"]
)


def follow_terms(text: str) -> set[str]:
    """The stemmed words of ``text`` but ``FOLLOW_STOPWORDS`` (numbers and one-letter words kept)."""
    return set(stem_words([word for word in fold(text).split() if word not in FOLLOW_STOPWORDS]))
