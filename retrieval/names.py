"""Person names: parsing and initials-aware comparison.

"Z. Zhang", "Zhang, Zhao" and "Zhao Zhang" all parse to family "zhang" with given names
starting "z"; they are *compatible* (may be the same person). "Tong Zhang" is not compatible
with "Zhao Zhang". Compatibility is only a necessary condition: ids (ORCID, OpenAlex) and
co-author/affiliation evidence decide identity elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.records import fold

_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "da", "di", "la", "le", "du", "dos", "das", "ter", "ten", "st"}
_SUFFIXES = {"jr", "sr", "ii", "iii", "iv"}


@dataclass(frozen=True)
class PersonName:
    """A folded name: ``given`` tokens (may be initials) and the ``family`` name."""

    given: tuple[str, ...]
    family: str

    @property
    def initials(self) -> str:
        return "".join(token[0] for token in self.given if token)

    @property
    def key(self) -> str:
        """Coarse blocking key: family name + first initial ("zhang z")."""
        return f"{self.family} {self.initials[:1]}".strip()

    @property
    def display(self) -> str:
        return " ".join([*self.given, self.family]).strip()


def parse_name(name: str) -> PersonName:
    """Parse "Last, First", "First Last", "F. M. Last", "von Last, Jr, First" into a PersonName."""
    raw = name.strip()
    if "," in raw:
        parts = [part.strip() for part in raw.split(",")]
        family_raw = parts[0]
        rest = [p for p in parts[1:] if fold(p) not in _SUFFIXES]
        given_raw = " ".join(rest)
    else:
        tokens = raw.split()
        tokens = [t for t in tokens if fold(t) not in _SUFFIXES] or tokens
        if len(tokens) <= 1:
            return PersonName(given=(), family=fold(raw))
        # family = last token plus any lowercase particles right before it ("Ludwig van Beethoven")
        split_at = len(tokens) - 1
        while split_at > 1 and fold(tokens[split_at - 1]) in _PARTICLES:
            split_at -= 1
        given_raw = " ".join(tokens[:split_at])
        family_raw = " ".join(tokens[split_at:])
    given = tuple(token for token in re.split(r"[\s.\-]+", fold(given_raw.replace("-", " "))) if token)
    family = " ".join(token for token in fold(family_raw).split() if token not in _PARTICLES) or fold(family_raw)
    return PersonName(given=given, family=family)


def _given_compatible(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Given names agree where both are known: full names must be equal, an initial matches a name."""
    for left, right in zip(a, b):
        if len(left) == 1 or len(right) == 1:
            if left[0] != right[0]:
                return False
        elif left != right:
            return False
    return True


def names_compatible(a: str, b: str) -> bool:
    """True when the two written names could denote the same person."""
    left, right = parse_name(a), parse_name(b)
    if not left.family or left.family != right.family:
        # "Zhang Zhao" written family-first without a comma: allow the swapped reading
        swapped = PersonName(given=(right.family,), family=right.given[0]) if len(right.given) == 1 else None
        return bool(swapped and left.family == swapped.family and _given_compatible(left.given, swapped.given))
    if not left.given or not right.given:
        return True
    return _given_compatible(left.given, right.given)


def name_specificity(name: str) -> int:
    """How much a written name says: full given names count more than initials."""
    parsed = parse_name(name)
    return sum(2 if len(token) > 1 else 1 for token in parsed.given)
