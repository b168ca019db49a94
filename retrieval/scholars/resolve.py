"""Resolution: a name, alias, ORCID, OpenAlex author id or ``person:`` id -> one person.

The index's author mentions are grouped into people first (``retrieval.scholars.people``: ids, then
co-author/affiliation evidence; namesakes stay apart). A query is then matched:

1. an ORCID or OpenAlex author id selects the people carrying it;
2. a roster entry (name, alias, arXiv name or id) selects the people carrying its ids, else
   its names are matched like a typed name, and id-less groups written exactly as one of the
   roster's names are taken as that person (the roster is the group's own statement);
3. a name matches every person with a compatible written name. People whose written name is
   the query itself (case and accents aside) win over merely compatible ones ("Zhao Zhang"
   over "Z. Zhang"), and people with a given name win over family-name-only mentions.

One person left: chosen. Several: the candidates, unless one dominates (``_dominant``). None:
``UnknownScholarError`` with close written names as suggestions.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from retrieval.errors import UnknownScholarError
from retrieval.records.names import parse_name
from retrieval.records.paper import normalize_openalex_id, normalize_orcid
from retrieval.scholars.people import Claim, PeopleDirectory, Person, claims_of, same_written_name
from retrieval.text import fold


class RosterEntry(Protocol):
    name: str
    orcid: str | None
    openalex_id: str | None

    @property
    def names(self) -> list[str]: ...


class RosterLike(Protocol):
    def find(self, query: str) -> RosterEntry | None: ...


def roster_claims(roster: RosterLike | None) -> tuple[Claim, ...]:
    """The claims of every roster scholar (none for a roster that cannot list its entries)."""
    entries = getattr(roster, "list", None)
    return claims_of(entries()) if callable(entries) else ()


# One candidate dominates when it has at least this many papers and this many times the next one's.
DOMINANT_MIN_PAPERS = 3
DOMINANT_RATIO = 2.0


def _match_tier(person: Person, queries: Sequence[str]) -> int:
    """3: a written name is the query (either order, case and accents aside); 2: compatible with
    a given name; 1: family name only."""
    if any(same_written_name(n, q) for n in person.names for q in queries):
        return 3
    if any(parse_name(n).given for n in person.names):
        return 2
    return 1


def _by_ids(directory: PeopleDirectory, orcid: str | None, openalex: str | None) -> list[Person]:
    found: list[Person] = []
    for kind, value in (("orcid", orcid), ("openalex", openalex)):
        if value:
            found += [p for p in directory.with_id(kind, value) if p not in found]
    return found


def suggestions(directory: PeopleDirectory, name: str, limit: int = 5) -> list[str]:
    """Written names close to ``name`` (difflib over folded names), most similar first."""
    by_fold: dict[str, str] = {}
    for written in directory.written_names():
        by_fold.setdefault(fold(written), written)
    close = difflib.get_close_matches(fold(name), list(by_fold), n=limit, cutoff=0.6)
    return [by_fold[c] for c in close]


@dataclass(frozen=True)
class Resolution:
    """What a query names: ``person`` when one is chosen, else ``candidates`` to pick from.

    ``others``: the other people written with the same name, when one was chosen over them.
    """

    person: Person | None
    candidates: list[Person]
    others: list[Person]


def _dominant(matches: Sequence[Person]) -> Person | None:
    """The roster's scholar, or a candidate with clearly more papers than the next."""
    claimed = [p for p in matches if p.claimed_by]
    if len(claimed) == 1:
        return claimed[0]
    ranked = sorted(matches, key=lambda p: -len(p.paper_ids))
    top, second = len(ranked[0].paper_ids), len(ranked[1].paper_ids)
    if top >= DOMINANT_MIN_PAPERS and top >= DOMINANT_RATIO * second:
        return ranked[0]
    return None


def resolve(directory: PeopleDirectory, name: str, roster: RosterLike | None = None, *, choose: bool = True) -> Resolution:
    """The person ``name`` denotes (a name, alias, ORCID, OpenAlex author id or ``person:`` id).

    With ``choose`` (the default), a dominant candidate (``_dominant``) is chosen over comparable
    namesakes, who are returned as ``others``; without it any second candidate makes the answer
    a list (the baseline policy). Raises ``UnknownScholarError`` (with suggestions) when nobody
    matches.
    """
    query = " ".join(name.split())
    if query.lower().startswith("person:"):
        person = directory.find_person_id(query)
        if person is None:
            raise UnknownScholarError(query, [])
        return Resolution(person, [person], [])
    orcid = normalize_orcid(query)
    openalex = normalize_openalex_id(query)
    if openalex and not openalex.startswith("A"):
        openalex = None
    names = [query]
    entry = roster.find(query) if roster is not None else None
    if entry is not None:
        claimed = [p for p in directory.people if p.claimed_by == entry.name]
        if claimed:
            others = [p for p in _named(directory, [query, *entry.names]) if p is not claimed[0] and _match_tier(p, names) == 3]
            return Resolution(claimed[0], claimed, others)
        orcid, openalex = entry.orcid or orcid, entry.openalex_id or openalex
        names = list(dict.fromkeys([*entry.names, query]))
    if orcid or openalex:
        found = _by_ids(directory, orcid, openalex)
        if len(found) == 1 or (found and not choose):
            return Resolution(found[0] if len(found) == 1 else None, found, [])
        if found:  # several people carry the id (an ORCID over two OpenAlex profiles): the largest
            found.sort(key=lambda p: -len(p.paper_ids))
            return Resolution(found[0], found, found[1:])
        if entry is None:
            raise UnknownScholarError(query, [])
    matches = _named(directory, names)
    if not matches and "," not in query:  # a family name with a particle: "Del Maestro", "van Gool"
        matches = directory.compatible_with(query + ",")
    if not matches:
        raise UnknownScholarError(query, suggestions(directory, query))
    best = max(_match_tier(p, names) for p in matches)
    matches = sorted((p for p in matches if _match_tier(p, names) == best), key=lambda p: (-len(p.paper_ids), p.name))
    if len(matches) == 1:
        return Resolution(matches[0], matches, [])
    # only a spelled-out name chooses: "Z. Zhang" may be any of them
    spelled = best == 3 or any(parse_name(written).has_full_given for written in names)
    chosen = _dominant(matches) if choose and best >= 2 and spelled else None
    if chosen is None:
        return Resolution(None, matches, [])
    return Resolution(chosen, matches, [p for p in matches if p is not chosen])


def _named(directory: PeopleDirectory, names: Sequence[str]) -> list[Person]:
    """Everyone compatible with one of ``names``."""
    matches: list[Person] = []
    for written in names:
        matches += [p for p in directory.compatible_with(written) if p not in matches]
    return matches


def resolve_person(
    directory: PeopleDirectory, name: str, roster: RosterLike | None = None, *, choose: bool = True
) -> Person | list[Person]:
    """The one person ``name`` denotes, or every candidate when several are comparable (best
    first). Raises ``UnknownScholarError`` (with suggestions) when nobody matches."""
    found = resolve(directory, name, roster, choose=choose)
    return found.person if found.person is not None else found.candidates
