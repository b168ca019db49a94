"""From what a person typed to what the retrievers can apply.

Parsing is pure (no I/O):

* ``prepare_query``: reject an empty question, cap a huge one at ``MAX_QUERY_CHARS`` and say so.
* ``extract_filters``: pull "since 2024", "in 2023", "from 2019 to 2021", "before 2010",
  "lately", "by Zhao Zhang", "what has Zhao Zhang worked on", "Zhao Zhang's papers", "in Nature"
  out of a question. Years are parsed from the wording alone;
  authors and venues only when the caller confirms that the name is indexed
  (``known_authors`` / ``known_venue``), so "methods by hand" never becomes an author filter.
  Options given explicitly (``--since``...) win over parsed ones: the caller merges.

Resolution reads the record store: ``FilterResolver`` expands the names in ``SearchFilters`` to
the concrete indexed values (author keys, folded venues) that both retrievers apply as exact
sets, a ``ResolvedFilters``. Which author keys a name selects is decided by
``names.names_compatible`` (initials-aware, both name orders) on the written names the store
files under the name's families; a roster scholar's name, alias or id stands for all their
names through the ``RosterNames`` function the index's opener passes in (the roster lives in
``ingest``, a layer above the index). Author keys themselves are ``names.author_key``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from retrieval.errors import InputError, PaperbotError
from retrieval.records.names import filing_families, names_compatible
from retrieval.records.paper import clean_text
from retrieval.results import SearchFilters
from retrieval.storage.records import RecordStore
from retrieval.text import fold

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
# "lately", "recently", "recent work": the same window as a scholar summary's recent work
# (``scholars.RECENT_MONTHS``; a test keeps the two equal). Filters are whole years, so the
# window starts on January 1st of the year the 24 months reach back into.
RECENT_MONTHS = 24


# Query preparation -------------------------------------------------------------------------


@dataclass(frozen=True)
class PreparedQuery:
    """The query the retrievers will see, and a notice for the user when it was altered."""

    text: str
    notice: str | None = None


def prepare_query(query: str) -> PreparedQuery:
    """Whitespace-normalise the query; raise on empty, cap at ``MAX_QUERY_CHARS`` with a notice."""
    text = clean_text(query or "")
    if not text:
        raise InputError(
            "The question is empty.",
            hint='Type what you are looking for, e.g. paperbot search "graph neural networks".',
        )
    if len(text) <= MAX_QUERY_CHARS:
        return PreparedQuery(text)
    cut = text[:MAX_QUERY_CHARS]
    space = cut.rfind(" ")
    if space > MAX_QUERY_CHARS * 0.8:  # prefer a word boundary when one is near the cap
        cut = cut[:space]
    return PreparedQuery(
        cut,
        notice=f"Query capped at {MAX_QUERY_CHARS:,} characters (it had {len(text):,}); the rest was ignored.",
    )


# What the retrievers apply -------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedFilters:
    """``SearchFilters`` expanded to indexed values; ``None`` means "no restriction".

    ``author_keys`` / ``venue_keys`` are the exact author keys and folded venue strings present
    in the index that the user's names match; an empty set means the filter matches nothing.
    """

    since: int | None = None
    until: int | None = None
    author_keys: frozenset[str] | None = None
    venue_keys: frozenset[str] | None = None

    def is_empty(self) -> bool:
        return self.since is None and self.until is None and self.author_keys is None and self.venue_keys is None

    def matches_nothing(self) -> bool:
        """True when a filter was resolved to no indexed value at all."""
        years_impossible = self.since is not None and self.until is not None and self.since > self.until
        return years_impossible or self.author_keys == frozenset() or self.venue_keys == frozenset()


# Filter extraction from a question ---------------------------------------------------------

_YEAR = r"(1[89]\d\d|20\d\d)"
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10}
# "in 2000 patients" is a count, not a year: a counted noun right after the number vetoes it.
_COUNTED = (r"\s+(?:patients|people|persons|participants|subjects|cases|controls|samples|cells|mice|rats|"
            r"children|adults|men|women|individuals|users|respondents|students|households|images|"
            r"documents|genes|proteins|species|sites|trials|volunteers)\b")
# Order matters: ranges before single bounds, "after/before" before the bare "in YEAR".
_YEAR_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b(?:from|between)\s+{_YEAR}\s*(?:to|and|until|through|-|–)\s*{_YEAR}\b", re.I), "range"),
    (re.compile(rf"\b(?:in|during)\s+{_YEAR}\s*(?:-|–|to)\s*{_YEAR}\b", re.I), "range"),
    (re.compile(r"\b(?:in|over|during|within)\s+the\s+(?:last|past)\s+(\d{1,2}|"
                + "|".join(_NUMBER_WORDS) + r")\s+years?\b", re.I), "last"),
    (re.compile(rf"\bfrom\s+{_YEAR}\s+(?:on|onwards?)\b", re.I), "since"),
    (re.compile(rf"\b(?:since|starting\s+(?:in|from)|as\s+of)\s+{_YEAR}(?:\s+(?:on|onwards?))?\b", re.I), "since"),
    (re.compile(rf"\bafter\s+{_YEAR}\b", re.I), "after"),
    (re.compile(rf"\b(?:before|prior\s+to)\s+{_YEAR}\b", re.I), "before"),
    (re.compile(rf"\b(?:until|till|through|up\s+to)\s+{_YEAR}\b", re.I), "until"),
    (re.compile(rf"\b(?:published\s+)?(?:in|during)\s+(?:the\s+year\s+)?{_YEAR}\b(?!\s*%|[-–]\w|{_COUNTED})", re.I), "in"),
    # "papers from 2022" is that year ("from 2022 on" and "from 2019 to 2021" are read above)
    (re.compile(rf"\bfrom\s+{_YEAR}\b(?!\s*%|[-–]\w|{_COUNTED})", re.I), "in"),
]

# "lately", "recently", "recent papers", "most recent work": no year given, the recent window.
# "recent" alone qualifies only a listing noun, so "recent advances in X" stays a topic.
_RECENT = re.compile(
    r"\b(?:(?:as\s+of\s+)?lately|recently|(?:most\s+)?recent(?=\s+(?:work|works|papers?|publications?|articles?|research|output)\b))\b",
    re.I,
)

_NAME_TOKEN = r"[^\W\d_][\w'’.\-]*"
# A name follows these: "by X", "from X", "what did X publish", "what has X worked on",
# "papers of X", "recent work of X". Every name is still confirmed by ``known_authors``.
_AUTHOR_LEAD = re.compile(
    r"\b(?:(?:authored|written|published)\s+by|by|from|"
    r"what\s+(?:did|does|has|have|had)|"
    r"(?:papers?|publications?|works?|articles?|research|output)\s+of)\s+",
    re.I,
)
# "Zhao Zhang's papers", "Zhang's recent work": the name ends at the possessive.
_POSSESSIVE = re.compile(
    r"((?:[^\W\d_][\w.\-]*\s+){0,3}[^\W\d_][\w.\-]*)['’]s\s+"
    r"(?=(?:(?:recent|latest|new|newest|own)\s+)?(?:papers?|work|works|publications?|articles?|research|output)\b)",
    re.I,
)
_VENUE_LEAD = re.compile(r"\b(?:(?:published|appearing|appeared)\s+(?:in|at)|in|at)\s+", re.I)
_TOKEN = re.compile(rf"{_NAME_TOKEN}|\d+")
_JOINER = re.compile(r"\s*(?:,\s*(?:(?:and|or)\b)?|\band\b|\bor\b|&)\s*", re.I)


def _apply_year_rule(kind: str, groups: tuple[str, ...], current_year: int) -> tuple[int | None, int | None]:
    if kind == "range":
        first, second = sorted((int(groups[0]), int(groups[1])))
        return first, second
    if kind == "last":
        count = _NUMBER_WORDS.get(groups[0].lower()) or int(groups[0])
        return current_year - max(count, 1) + 1, None
    year = int(groups[0])
    return {
        "since": (year, None),
        "after": (year + 1, None),
        "before": (None, year - 1),
        "until": (None, year),
        "in": (year, year),
    }[kind]


_NEXT_TOKEN = re.compile(rf"\s*({_TOKEN.pattern})")
_CONNECTORS = {"of", "on", "and", "for", "the", "in", "de", "&"}


def _trim(token: str) -> str:
    """Drop sentence punctuation glued to a word ("Zhang." -> "Zhang") but keep initials ("Z.")."""
    core = token.rstrip(".'’-")
    if token.endswith(".") and (len(core) <= 2 or "." in core):
        return token  # "Z.", "Jr.", "C.-P."
    return core


def _candidate_spans(text: str, start: int, max_tokens: int) -> list[tuple[int, str]]:
    """(end offset, candidate) for 1..max_tokens consecutive name-like tokens, longest first."""
    spans: list[tuple[int, str]] = []
    position = start
    words: list[str] = []
    for _ in range(max_tokens):
        match = _NEXT_TOKEN.match(text, position)
        if not match:
            break
        token = _trim(match.group(1))
        if not token:
            break
        words.append(token)
        position = match.start(1) + len(token)
        spans.append((position, " ".join(words)))
    return list(reversed(spans))


def _capitalised(candidate: str) -> bool:
    """Every word capitalised (or a number), allowing "of"/"on"... inside: "Journal of Physics"."""
    words = candidate.split()
    if words[0].lower() in _CONNECTORS or words[-1].lower() in _CONNECTORS:
        return False
    return all(w[0].isupper() or w[0].isdigit() or w.lower() in _CONNECTORS for w in words)


def _match_names(
    text: str, lead: re.Pattern[str], known: Callable[[str], bool], max_tokens: int, *, allow_chain: bool
) -> tuple[list[str], list[tuple[int, int]]]:
    """Names after a lead word ("by", "in"...) that ``known`` confirms; with their text spans."""
    names: list[str] = []
    spans: list[tuple[int, int]] = []
    for lead_match in lead.finditer(text):
        if any(s <= lead_match.start() < e for s, e in spans):
            continue
        position = lead_match.end()
        found: list[str] = []
        end = position
        while True:
            accepted = None
            for span_end, candidate in _candidate_spans(text, position, max_tokens):
                single = " " not in candidate
                if single and not _capitalised(candidate):
                    continue  # "by hand", "in practice": one lowercase word is never a name
                if known(candidate):
                    accepted = (span_end, candidate)
                    break
            if accepted is None:
                break
            found.append(accepted[1])
            end = accepted[0]
            joiner = _JOINER.match(text, end) if allow_chain else None
            if not joiner or joiner.end() == end:
                break
            position = joiner.end()
        if found:
            names.extend(found)
            spans.append((lead_match.start(), end))
    return names, spans


def _match_possessive(text: str, known: Callable[[str], bool]) -> tuple[list[str], list[tuple[int, int]]]:
    """Names written as possessives before a listing noun ("Zhao Zhang's papers"), confirmed by ``known``.

    The words before "'s" are tried shortest-first from the right ("Zhang", "Zhao Zhang", ...),
    keeping the longest confirmed capitalised run, so "show me Zhao Zhang's papers" yields
    "Zhao Zhang" and not "me Zhao Zhang".
    """
    names: list[str] = []
    spans: list[tuple[int, int]] = []
    for match in _POSSESSIVE.finditer(text):
        words = list(re.finditer(r"\S+", match.group(1)))
        accepted: tuple[int, str] | None = None
        for first in range(len(words) - 1, -1, -1):
            candidate = " ".join(w.group(0) for w in words[first:])
            if not _capitalised(candidate):
                break
            if known(candidate):
                accepted = (match.start(1) + words[first].start(), candidate)
        if accepted is not None:
            names.append(accepted[1])
            spans.append((accepted[0], match.end()))
    return names, spans


def _recent_since(today: date) -> int:
    """First year of the last ``RECENT_MONTHS`` months before ``today``."""
    months = today.year * 12 + today.month - 1 - RECENT_MONTHS
    return months // 12


def _remove_spans(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    text = re.sub(r"\s+([?.!,;:])", r"\1", re.sub(r"\s+", " ", text)).strip()
    text = re.sub(r"^[,;:]\s*|\s*[,;:]$", "", text)
    return re.sub(r"\(\s*\)", "", text).strip()


def extract_filters(
    question: str,
    known_authors: Callable[[str], bool] | None = None,
    known_venue: Callable[[str], bool] | None = None,
    *,
    current_year: int | None = None,
    today: date | None = None,
) -> tuple[str, SearchFilters]:
    """Split a question into the query text and the filters its wording states.

    ``known_authors(name)`` / ``known_venue(name)`` say whether an indexed author / venue
    matches; without them no author / venue filter is parsed. ``today`` (default: the real
    date) anchors "lately" (the last ``RECENT_MONTHS`` months, as whole years) and, unless
    ``current_year`` is given, "in the last 3 years". "lately" is ignored when the question
    states years itself. When cleaning would leave nothing (the question was only a filter),
    the original question is returned as the query.
    """
    day = today if today is not None else date.today()
    year_now = current_year if current_year is not None else day.year
    text = question
    since: int | None = None
    until: int | None = None
    spans: list[tuple[int, int]] = []
    for pattern, kind in _YEAR_RULES:
        for match in pattern.finditer(text):
            if any(s < match.end() and match.start() < e for s, e in spans):
                continue
            low, high = _apply_year_rule(kind, match.groups(), year_now)
            since = low if since is None or (low is not None and low > since) else since
            until = high if until is None or (high is not None and high < until) else until
            spans.append(match.span())
    recent = [match.span() for match in _RECENT.finditer(text)
              if not any(s < match.end() and match.start() < e for s, e in spans)]
    if recent and since is None and until is None:
        since = _recent_since(day)
    text = _remove_spans(text, spans + recent)

    authors: list[str] = []
    if known_authors is not None:
        authors, author_spans = _match_names(text, _AUTHOR_LEAD, known_authors, 4, allow_chain=True)
        text = _remove_spans(text, author_spans)
        possessive, possessive_spans = _match_possessive(text, known_authors)
        authors += [name for name in possessive if name not in authors]
        text = _remove_spans(text, possessive_spans)
    venue: str | None = None
    if known_venue is not None:
        def capitalised_venue(name: str) -> bool:
            return _capitalised(name) and known_venue(name)

        venues, venue_spans = _match_names(text, _VENUE_LEAD, capitalised_venue, 6, allow_chain=False)
        if venues:
            venue = venues[0].rstrip(".")
            start, end = venue_spans[0]
            if text[end - 1] == ".":  # "... in Physical Review D." : the dot ends the sentence
                end -= 1
            text = _remove_spans(text, [(start, end)])

    filters = SearchFilters(since=since, until=until, authors=authors, venue=venue)
    cleaned = text if re.search(r"\w", text) else clean_text(question)
    return cleaned, filters


def merge_filters(explicit: SearchFilters | None, parsed: SearchFilters) -> SearchFilters:
    """Explicit options win field by field over filters parsed from the question."""
    if explicit is None:
        return parsed
    return SearchFilters(
        since=explicit.since if explicit.since is not None else parsed.since,
        until=explicit.until if explicit.until is not None else parsed.until,
        authors=explicit.authors or parsed.authors,
        venue=explicit.venue or parsed.venue,
    )


# Filters resolved against the record store -------------------------------------------------

RosterNames = Callable[[str], list[str]]
"""Every name the roster knows a scholar by, given any of their names, aliases or ids; ``[name]``
for a name it does not know (``storage.roster.names_of`` bound to the settings). May raise a
``PaperbotError`` when the roster cannot be read."""


def is_venue_acronym(name: str) -> bool:
    """One word with three or more capital letters: "ICDE", "INFOCOM", "NeurIPS", "SIGMOD"."""
    word = name.strip()
    return " " not in word and word.isalnum() and sum(ch.isupper() for ch in word) >= 3


class FilterResolver:
    """Names typed in filters -> the indexed values they select, read from one record store.

    ``roster_names`` widens an author name to every name of the roster scholar it names; without
    it (or while the roster cannot be read) a name stands for itself only.
    """

    def __init__(self, store: RecordStore, roster_names: RosterNames | None = None) -> None:
        self.store = store
        self.roster_names = roster_names
        self._venue_cache: tuple[int, frozenset[str]] | None = None  # (store generation, venue keys)

    def author_keys_for(self, name: str) -> set[str]:
        """Indexed author keys of every written name compatible with ``name`` or a roster alias of it.

        "Z. Zhang" -> {"zhao zhang", "z zhang"}; "Zhao Zhang" also finds "Zhang Zhao" written
        family-first; "Di Wang" finds Di Wang but not Wei Wang (``names.names_compatible``). A
        roster scholar's name, alias or id stands for all their names (``roster_names``).
        """
        if not name.strip():
            return set()
        found: set[str] = set()
        for written_as in self._names_of(name):
            filed = self.store.author_names_filed_under(filing_families(written_as))
            found.update(key for written, key in filed if names_compatible(written_as, written))
        return found

    def _names_of(self, name: str) -> list[str]:
        """``roster_names(name)``; a damaged roster is logged and ignored here: search still works."""
        if self.roster_names is None:
            return [name]
        try:
            return self.roster_names(name)
        except PaperbotError as exc:
            log.warning("%s Author filters ignore the roster until it is fixed.", exc.user_message)
            return [name]

    def knows_author(self, name: str) -> bool:
        return bool(self.author_keys_for(name))

    def venue_keys(self) -> frozenset[str]:
        """Every indexed venue (folded), re-read only after a write to the store."""
        generation = self.store.generation()
        cached = self._venue_cache
        if cached is None or cached[0] != generation:
            cached = (generation, frozenset(self.store.venue_keys()))
            self._venue_cache = cached
        return cached[1]

    def knows_venue(self, name: str) -> bool:
        """True when ``name`` is exactly an indexed venue (after folding), or an acronym written
        as one ("ICDE", "NeurIPS": one word with three or more capitals) that is a whole word of
        an indexed venue ("2023 IEEE 39th International Conference on Data Engineering (ICDE)").
        Conservative on purpose: "in Vision" never becomes a venue filter."""
        key = fold(name)
        if not key:
            return False
        venues = self.venue_keys()
        if key in venues:
            return True
        if not is_venue_acronym(name):
            return False
        return any(key in venue.split() for venue in venues)

    def parse_question(self, question: str) -> tuple[str, SearchFilters]:
        """``extract_filters`` with the indexed authors and venues as the known names."""
        return extract_filters(question, self.knows_author, self.knows_venue)

    def resolve(self, filters: SearchFilters | None) -> ResolvedFilters:
        """Expand author names and the venue substring to the indexed values they match."""
        if filters is None or filters.is_empty():
            return ResolvedFilters()
        author_keys = None
        if filters.authors:
            author_keys = frozenset(key for name in filters.authors for key in self.author_keys_for(name))
        venue_keys = None
        needle = fold(filters.venue or "")
        if needle:
            venue_keys = frozenset(venue for venue in self.venue_keys() if needle in venue)
        return ResolvedFilters(filters.since, filters.until, author_keys, venue_keys)
