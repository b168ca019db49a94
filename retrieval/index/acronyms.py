"""Acronyms and what they stand for, read from the records a search found.

A publication list writes one concept two ways: "large language models (LLMs)" in an abstract,
"... with LLMs" in a title, and most records of a real list have a title only. BM25 sees two
unrelated terms, so a question worded one way misses the records worded the other. The
definitions are in the records themselves: an abstract that introduces an acronym writes the
long form and the acronym in parentheses, one after the other (or the other way round).

``definitions`` finds them in a text (after Schwartz & Hearst, 2003, "A simple algorithm for
identifying abbreviation definitions in biomedical text", with a stricter match): the acronym has
two capitals at least and no digit, and its letters are the initials of the words just before
(hyphenated parts count as words; "of", "and", "from" and a few other short words may be passed
over). "large language models (LLMs)", "Internet of Things (IoT)", "mixture-of-experts
(MoE)" and "Bidirectional Encoder Representations from Transformers (BERT)" are found;
"deoxyribonucleic acid (DNA)" is not (a letter from inside a word), nor "(ours)" or "(e.g.)".

``term_groups`` turns a query's tokens and the definitions found into BM25 term groups: a long
form the query writes gets its acronym, in either number (``forms``), as another way to match,
and an acronym the query writes gets the long form (``lexical.LexicalSnapshot.score_groups``). Only a definition the records agree
on is used: an acronym's most frequent long form among them, seen at least twice as often as
any other ("DL": deep learning or decentralized learning, by the records found).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from retrieval.text import bm25_tokens

MAX_ACRONYM = 10  # characters; longer parentheses are not acronyms
_PARENTHESIS = re.compile(r"\(([^()]{2,120})\)")
_ACRONYM = re.compile(r"[A-Za-z][A-Za-z-]*")
_HYPHENATED_WORD = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
# words a long form may hold without an initial in its acronym ("Internet of Things": IoT takes
# the "of"; "Bidirectional Encoder Representations from Transformers": BERT passes "from" over)
_PASSED_OVER = frozenset({"a", "an", "and", "by", "for", "from", "in", "of", "on", "the", "to", "with"})


@dataclass(frozen=True)
class Definition:
    """An acronym's BM25 token and its long form's tokens, as a text defined it (and, not
    compared, both as the text wrote them)."""

    acronym: str  # bm25 token of the acronym, singular ("llm"; ``forms`` gives "llms" too)
    long_form: tuple[str, ...]  # bm25 tokens of the long form (("larg", "languag", "model"))
    written_acronym: str = field(default="", compare=False)  # "LLMs"
    written_long_form: str = field(default="", compare=False)  # "large language models"


@dataclass(frozen=True)
class TermGroup:
    """One concept of a query: the tokens the query wrote, and other ways of writing it."""

    own: tuple[str, ...]
    others: tuple[tuple[str, ...], ...] = ()


def singular(acronym: str) -> str:
    """A written acronym without its plural "s" ("LLMs" -> "LLM", "GPUs" -> "GPU"); as it was otherwise."""
    if acronym.endswith("s") and len(acronym) > 2 and acronym[-2].isupper():
        return acronym[:-1]
    return acronym


def forms(acronym: str) -> tuple[str, ...]:
    """The BM25 tokens an acronym's token may take, singular and plural: the stemmer keeps the
    "s" of "llms" (no vowel to end a stem on) and of "gpus" (after "u"), and drops that of "apis"."""
    return tuple(dict.fromkeys([acronym, *bm25_tokens(acronym + "s")]))


def _letters(acronym: str) -> str | None:
    """The letters to match of a written acronym ("LLMs" -> "llm"), None when it is none."""
    if not _ACRONYM.fullmatch(acronym) or len(acronym) > MAX_ACRONYM:
        return None
    acronym = singular(acronym)
    if sum(c.isupper() for c in acronym) < 2:
        return None
    letters = acronym.replace("-", "").lower()
    return letters if len(letters) >= 2 else None


def _long_form(letters: str, words: Sequence[str], *, whole: bool = False) -> list[str] | None:
    """The shortest run of ``words`` ending at the last one whose initials spell ``letters``
    (``_PASSED_OVER`` words between them may have none), or None; with ``whole``, only all of
    ``words``."""
    pieces = [piece for word in words for piece in word.split("-") if piece]
    wanted = len(letters) - 1
    taken: list[str] = []
    for piece in reversed(pieces[-(2 * len(letters) + 2) :]):
        if wanted < 0:
            break
        if piece[0].lower() == letters[wanted]:
            taken.append(piece)
            wanted -= 1
        elif piece.lower() in _PASSED_OVER and taken:
            taken.append(piece)
        else:
            return None
    if wanted >= 0 or (whole and len(taken) != len(pieces)):
        return None
    return list(reversed(taken))


def _defined(acronym: str, words: Sequence[str], *, whole: bool = False) -> Definition | None:
    letters = _letters(acronym)
    if letters is None or not words:
        return None
    long_form = _long_form(letters, words, whole=whole)
    if long_form is None:
        return None
    acronym_tokens = bm25_tokens(singular(acronym))
    long_tokens = tuple(bm25_tokens(" ".join(long_form)))
    if len(acronym_tokens) != 1 or len(long_tokens) < 2:
        return None
    return Definition(acronym_tokens[0], long_tokens, acronym, " ".join(long_form))


def definitions(text: str) -> list[Definition]:
    """Every acronym ``text`` defines, in either order: "long form (ACRONYM)", or "ACRONYM (long
    form)" with nothing else in the parentheses."""
    found: list[Definition] = []
    for match in _PARENTHESIS.finditer(text):
        inside = match.group(1).strip()
        preceding = _words(text[max(0, match.start() - 200) : match.start()])
        if " " not in inside:
            definition = _defined(inside, preceding)
        elif preceding:
            definition = _defined(preceding[-1], _words(inside), whole=True)
        else:
            definition = None
        if definition is not None:
            found.append(definition)
    return found


def defined_in(texts: Iterable[str | None]) -> list[Definition]:
    """``definitions`` of each of ``texts`` (titles, abstracts; None and empty ones skipped), in order."""
    return [definition for text in texts if text for definition in definitions(text)]


def _words(text: str) -> list[str]:
    """The words of ``text``, hyphenated ones kept whole ("mixture-of-experts")."""
    return _HYPHENATED_WORD.findall(text)


def agreed(found: Iterable[Definition]) -> dict[str, tuple[str, ...]]:
    """acronym token -> the long form the texts agree on: its most frequent, seen at least
    twice as often as the next one."""
    by_acronym: dict[str, Counter[tuple[str, ...]]] = {}
    for definition in found:
        by_acronym.setdefault(definition.acronym, Counter())[definition.long_form] += 1
    chosen: dict[str, tuple[str, ...]] = {}
    for acronym, long_forms in by_acronym.items():
        ranked = long_forms.most_common(2)
        if len(ranked) == 1 or ranked[0][1] >= 2 * ranked[1][1]:
            chosen[acronym] = ranked[0][0]
    return chosen


def term_groups(query_tokens: Sequence[str], meanings: dict[str, tuple[str, ...]]) -> list[TermGroup] | None:
    """The query's tokens as groups, each long form or acronym the query writes joined with its
    other writings (``meanings``: ``agreed``; an acronym in either number, ``forms``); None when
    no definition applies to the query (the plain query is then searched as it is)."""
    by_form = {form: acronym for acronym in meanings for form in forms(acronym)}
    groups: list[TermGroup] = []
    bridged = False
    position = 0
    tokens = list(query_tokens)
    written = set(tokens)
    while position < len(tokens):
        token = tokens[position]
        long_here = next((acronym for acronym, long_form in meanings.items()
                          if tuple(tokens[position : position + len(long_form)]) == long_form), None)
        if long_here is not None and written.isdisjoint(forms(long_here)):
            long_form = meanings[long_here]
            groups.append(TermGroup(long_form, tuple((form,) for form in forms(long_here))))
            position += len(long_form)
            bridged = True
            continue
        acronym = by_form.get(token)
        if acronym is not None and not contains_run(tokens, meanings[acronym]):
            others = [(form,) for form in forms(acronym) if form != token]
            groups.append(TermGroup((token,), (meanings[acronym], *others)))
            bridged = True
        else:
            groups.append(TermGroup((token,)))
        position += 1
    return groups if bridged else None


def contains_run(tokens: Sequence[str], run: Sequence[str]) -> bool:
    """Whether ``run`` occurs in ``tokens`` as consecutive tokens (a long form written whole)."""
    return any(tuple(tokens[i : i + len(run)]) == tuple(run) for i in range(len(tokens) - len(run) + 1))
