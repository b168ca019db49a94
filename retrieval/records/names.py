"""Person names: parsing, initials-aware comparison, and the id rule for telling people apart.

"Z. Zhang", "Zhang, Zhao" and "Zhao Zhang" all parse to family "zhang" with given names
starting "z"; they are *compatible* (may be the same person). "Tong Zhang" is not compatible
with "Zhao Zhang". Compatibility is only a necessary condition: ids (ORCID, OpenAlex) and
co-author/affiliation evidence decide identity (``same_person`` for two author occurrences,
``retrieval.scholars.people`` for a whole index).

How strongly two written names agree is a ``NameMatch``:

- ``NONE``: cannot be the same person ("Tong Zhang" / "Zhao Zhang").
- ``WEAK``: compatible only through initials, a missing given name or another reading of the
  name ("Z. Zhang" / "Zhao Zhang", "Zhang" / "Zhao Zhang", "Zhang Zhao" / "Zhao Zhang" read
  family-first). Needs evidence (a shared co-author or affiliation) before two occurrences are
  called one person.
- ``STRONG``: the first given name is spelled out on both sides and equal, the rest compatible
  ("Andres M. Bran" / "Andres Bran"). Enough on its own when no id disagrees.

Family-name particles ("van", "de", "Del"...) belong to the family name: "Del Maestro" and
"van der Berg" written alone are family names. A few particles are also common given names
("Di Wang", "Le Chen", "De Cheng", all CVPR 2024 authors), so a capitalised "Di Stefano" is read
both ways: as the person Di Stefano first, and as the family name Di Stefano, which only agrees
(weakly) with names that carry the same particle ("Luigi Di Stefano", never "Wei Stefano").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property, lru_cache

from retrieval.records.paper import Author
from retrieval.text import fold, folded

_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "da", "di", "la", "le", "du", "dos", "das", "ter", "ten", "st"}
# Particles that are also given names in real author lists ("Di Wang", "Le Chen", "Van Nguyen").
_GIVEN_NAME_PARTICLES = {"da", "de", "di", "du", "le", "van"}
_SUFFIXES = {"jr", "sr", "ii", "iii", "iv"}
# Words that make a Crossref-style organisational author ("The ATLAS Collaboration").
_ORGANISATION_WORDS = {
    "collaboration", "consortium", "group", "team", "committee", "project", "network", "initiative",
    "society", "association", "university", "institute", "laboratory", "centre", "center", "council",
    "organization", "organisation", "foundation", "alliance", "working", "investigators", "authors",
}


@dataclass(frozen=True)
class PersonName:
    """A folded name: ``given`` tokens (may be initials) and the ``family`` name.

    ``particles`` are the family name's particles ("del" of "Adrian Del Maestro"); ``family``
    leaves them out, so "Luc Van Gool" and "Gool, Luc" compare by "gool".
    """

    given: tuple[str, ...]
    family: str
    particles: tuple[str, ...] = ()

    @cached_property
    def initials(self) -> str:
        return "".join(token[0] for token in self.given if token)

    @cached_property
    def key(self) -> str:
        """Coarse blocking key: family name + first initial ("zhang z")."""
        return f"{self.family} {self.initials[:1]}".strip()

    @property
    def has_full_given(self) -> bool:
        """True when the first given name is spelled out (not an initial)."""
        return bool(self.given) and len(self.given[0]) > 1


class NameMatch(IntEnum):
    """How strongly two written names agree (see the module docstring)."""

    NONE = 0
    WEAK = 1
    STRONG = 2


def parse_name(name: str) -> PersonName:
    """Parse "Last, First", "First Last", "F. M. Last", "von Last, Jr, First", "Del Maestro".

    The most likely reading; ``name_match`` also weighs the others ("Di Stefano" is read as the
    person Di Stefano and, less likely, as the family name Di Stefano).
    """
    return _readings(name)[0]


@lru_cache(maxsize=131072)
def _readings(name: str) -> tuple[PersonName, tuple[PersonName, ...]]:
    """The most likely reading of a written name and the other possible ones.

    The others: family-first ("Zhang Zhao") and a given-name-like particle read as part of the
    family name ("Di Stefano"). Cached: an index repeats the same few thousand names many times.
    """
    readings = _parse(name)
    swapped = _swapped(readings[0])
    return readings[0], (*readings[1:], *([swapped] if swapped else []))


def _is_east_asian_script(char: str) -> bool:
    """Han ideographs, kana and Hangul: scripts whose names are written family name first."""
    code = ord(char)
    return (
        0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2FA1F  # Han
        or 0x3040 <= code <= 0x30FF  # kana
        or 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF  # Hangul
    )


@lru_cache(maxsize=65536)
def is_east_asian_name(name: str) -> bool:
    """True for a name written in Han, kana or Hangul only ("韩放达")."""
    letters = [char for char in name if char.isalpha()]
    return bool(letters) and all(_is_east_asian_script(char) for char in letters)


def _east_asian(raw: str) -> PersonName | None:
    """"韩放达" -> family "han", given "fangda"; "김민수" -> "gim", "minsu": the first syllable is
    the family name (as these scripts write names), the rest one given name, so the name meets
    its Latin form ("Fangda Han"). None for names that are not written in these scripts."""
    if not is_east_asian_name(raw):
        return None
    letters = [char for char in raw if char.isalpha()]
    syllables = [syllable for char in letters if (syllable := fold(char).replace(" ", ""))]
    if len(syllables) < 2:
        return PersonName(given=(), family="".join(syllables))
    return PersonName(given=("".join(syllables[1:]),), family=syllables[0])


def _parse(name: str) -> tuple[PersonName, ...]:
    """The readings of a written name, most likely first (the family-first one aside)."""
    raw = name.strip()
    east_asian = _east_asian(raw)
    if east_asian is not None:
        return (east_asian,)
    if "," in raw:
        family_part, *rest = (part.strip() for part in raw.split(","))
        given = fold(" ".join(part for part in rest if fold(part) not in _SUFFIXES)).split()
        # "Beethoven, Ludwig van": a particle after the given names belongs to the family name
        cut = len(given)
        while cut > 1 and given[cut - 1] in _PARTICLES:
            cut -= 1
        return (_person(given[:cut], [*given[cut:], family_part]),)
    tokens = [token for token in raw.split() if fold(token) not in _SUFFIXES] or raw.split()
    if len(tokens) <= 1:
        return (PersonName(given=(), family=fold(raw)),)
    # family = last token plus any particles right before it ("Ludwig van Beethoven")
    split_at = len(tokens) - 1
    while split_at > 0 and fold(tokens[split_at - 1]) in _PARTICLES:
        split_at -= 1
    if split_at > 0:
        return (_person(tokens[:split_at], tokens[split_at:]),)
    # nothing but particles before the last word: a family name ("Del Maestro", "van der Berg")
    family_name = _person([], tokens)
    if len(tokens) == 2 and tokens[0][:1].isupper() and fold(tokens[0]) in _GIVEN_NAME_PARTICLES:
        return (_person(tokens[:1], tokens[1:]), family_name)  # "Di Wang" is mostly a Di
    return (family_name,)


def _person(given: list[str], family: list[str]) -> PersonName:
    """Fold the given and family words; particles of the family name are kept apart."""
    words = fold(" ".join(family)).split()
    core = [word for word in words if word not in _PARTICLES]
    return PersonName(
        given=tuple(fold(" ".join(given)).split()),
        family=" ".join(core or words),
        particles=tuple(word for word in words if word in _PARTICLES) if core else (),
    )


def _swapped(name: PersonName) -> PersonName | None:
    """The family-first reading of a name with one spelled-out given name ("Zhang Zhao")."""
    if len(name.given) == 1 and len(name.given[0]) > 1:
        return PersonName(given=(name.family,), family=name.given[0])
    return None


def _given_compatible(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Given names agree where both are known: full names must be equal, an initial matches a name.

    "Zhao-Yang" and "Zhaoyang" are the same given name written two ways.
    """
    if a and b and len(a) != len(b) and "".join(a) == "".join(b):
        return True
    for left, right in zip(a, b, strict=False):  # lengths differ when one side lists fewer given names
        if len(left) == 1 or len(right) == 1:
            if left[0] != right[0]:
                return False
        elif left != right:
            return False
    return True


def _agreement(left: PersonName, right: PersonName) -> NameMatch:
    if left.family != right.family or not _given_compatible(left.given, right.given):
        return NameMatch.NONE
    return NameMatch.STRONG if left.has_full_given and right.has_full_given else NameMatch.WEAK


def _particles_confirm(reading: PersonName, other: PersonName) -> bool:
    """A bare family name with particles ("Di Stefano") is only that family when ``other`` has them too."""
    return bool(reading.given) or not reading.particles or reading.particles == other.particles


@lru_cache(maxsize=65536)
def name_match(a: str, b: str) -> NameMatch:
    """How strongly two written names agree: NONE, WEAK (initials, another reading) or STRONG.

    Cached: grouping an index compares the same few names of a family again and again.
    """
    east_asian = is_east_asian_name(a), is_east_asian_name(b)
    if all(east_asian):  # 张伟 and 章伟 read alike but are different names
        return NameMatch.STRONG if "".join(a.split()) == "".join(b.split()) else NameMatch.NONE
    (left, left_others), (right, right_others) = _readings(a), _readings(b)
    if not left.family or not right.family:
        # names that fold to nothing: only the identical string matches
        return NameMatch.STRONG if a.strip().casefold() == b.strip().casefold() else NameMatch.NONE
    found = _match_readings(left, left_others, right, right_others)
    # 韩放达 / "Fangda Han": the romanisation is one of many homophones, so at most WEAK
    return min(found, NameMatch.WEAK) if any(east_asian) else found


def _match_readings(
    left: PersonName, left_others: tuple[PersonName, ...], right: PersonName, right_others: tuple[PersonName, ...]
) -> NameMatch:
    direct = _agreement(left, right)
    if direct is not NameMatch.NONE:
        return direct
    pairs = [(left, other) for other in right_others] + [(other, right) for other in left_others]
    for x, y in pairs:
        if _agreement(x, y) is not NameMatch.NONE and _particles_confirm(x, y) and _particles_confirm(y, x):
            return NameMatch.WEAK
    return NameMatch.NONE


def names_compatible(a: str, b: str) -> bool:
    """True when the two written names could denote the same person."""
    return name_match(a, b) is not NameMatch.NONE


def possible_families(name: str) -> set[str]:
    """The family names a person called ``name`` may be filed under.

    The parsed family name, and for a name of one given part also that part ("Zhang Zhao" or
    "Zhang Z" written family-first).
    """
    parsed = parse_name(name)
    return {parsed.family, *parsed.given[:1]} if len(parsed.given) == 1 else {parsed.family}


def filing_families(name: str) -> frozenset[str]:
    """Every family name under which ``name`` can meet a compatible name: one per reading.

    Two names are compatible only through a pair of readings with the same family
    (``name_match``), so filing each written name under these families and looking a query
    up under its own finds every compatible name: "Zhang Zhao" -> {"zhao", "zhang"},
    "Di Wang" -> {"wang", "di"}, "Barry Smith Jr." -> {"smith", "barry"}.
    """
    primary, others = _readings(name)
    return frozenset(reading.family for reading in (primary, *others) if reading.family)


@lru_cache(maxsize=131072)
def name_specificity(name: str) -> int:
    """How much a written name says: full given names count more than initials."""
    parsed = parse_name(name)
    return sum(2 if len(token) > 1 else 1 for token in parsed.given)


@lru_cache(maxsize=131072)
def is_organisation(name: str) -> bool:
    """Heuristic: an organisational author ("The ATLAS Collaboration"), not a person."""
    words = folded(name).split()
    return len(words) > 5 or any(word in _ORGANISATION_WORDS for word in words)


def affiliation_keys(affiliations: Iterable[str]) -> set[str]:
    """The folded, non-empty affiliations: what "an affiliation in common" compares."""
    return {key for key in map(folded, affiliations) if key}


def affiliations_overlap(a: list[str], b: list[str]) -> bool:
    """True when the two affiliation lists share an institution (folded, substring-tolerant)."""
    left, right = affiliation_keys(a), affiliation_keys(b)
    if left & right:
        return True
    return any(x in y or y in x for x in left for y in right if min(len(x), len(y)) >= 8)


def id_sets_agree(
    orcids_a: AbstractSet[str], openalex_a: AbstractSet[str], orcids_b: AbstractSet[str], openalex_b: AbstractSet[str]
) -> bool | None:
    """The id rule for two people known by sets of ids (one author has at most one of each).

    True when a shared id proves they are one person, False when their ids prove two, None when
    they have no id of a kind in common. ORCID is the stronger id and decides when both sides
    have one, even over different OpenAlex ids (OpenAlex sometimes splits one person into
    several author records).
    """
    if orcids_a and orcids_b:
        return not orcids_a.isdisjoint(orcids_b)
    if openalex_a and openalex_b:
        return not openalex_a.isdisjoint(openalex_b)
    return None


def ids_agree(a: Author, b: Author) -> bool | None:
    """True when an id proves the two are one person, False when ids prove they are not, else None."""
    return id_sets_agree(_ids(a.orcid), _ids(a.openalex_id), _ids(b.orcid), _ids(b.openalex_id))


def _ids(value: str | None) -> frozenset[str]:
    return frozenset((value,)) if value else frozenset()


def same_person(a: Author, b: Author, *, shared_coauthors: int = 0) -> bool:
    """Whether two author occurrences denote the same person.

    Ids decide when both sides carry a comparable one; otherwise the names must agree, and a
    WEAK agreement ("Z. Zhang" / "Zhao Zhang") also needs evidence: ``shared_coauthors`` > 0
    (co-authors the caller found on both sides) or a shared affiliation.
    """
    verdict = ids_agree(a, b)
    if verdict is not None:
        return verdict
    strength = name_match(a.name, b.name)
    if strength is NameMatch.STRONG:
        return True
    if strength is NameMatch.WEAK:
        return shared_coauthors > 0 or affiliations_overlap(a.affiliations, b.affiliations)
    return False


_JOINED = re.compile(r"(?<=\w)[-‐‑'’](?=\w)")  # Abu-Shammala, d'Ambrumenil, Xiao-Lin: one token


@lru_cache(maxsize=65536)
def author_key(name: str) -> str | None:
    """The folded key under which an author name is indexed ("Zhang, Zhao" -> "zhao zhang").

    Cached (a pure function of the string): the papers of a publication list all repeat their
    scholar's name, and an ingest asks for each name's key in the store, Chroma and BM25.

    A key identifies a written name in the filter postings of Chroma and BM25; it is not a
    parse. Which keys an author filter selects is decided on the written names by
    ``names_compatible`` (see ``RecordStore.author_names_filed_under``). Changing what
    this returns changes the stored postings: it needs an index rebuild.
    """
    text = _JOINED.sub("", name)
    if "," in text:
        family_part, given_part = text.split(",", 1)
        if not fold(family_part):
            return author_key(given_part)
        tokens = fold(given_part).split() + fold(family_part).split()
    else:
        tokens = fold(text).split()
    return " ".join(tokens) or None
