"""Person names: parsing, initials-aware comparison, and telling people apart.

"Z. Zhang", "Zhang, Zhao" and "Zhao Zhang" all parse to family "zhang" with given names
starting "z"; they are *compatible* (may be the same person). "Tong Zhang" is not compatible
with "Zhao Zhang". Compatibility is only a necessary condition: ids (ORCID, OpenAlex) and
co-author/affiliation evidence decide identity (``same_person`` for two author occurrences,
``group_people`` for a whole index).

How strongly two written names agree is a ``NameMatch``:

- ``NONE``: cannot be the same person ("Tong Zhang" / "Zhao Zhang").
- ``WEAK``: compatible only through initials, a missing given name or a family-first reading
  ("Z. Zhang" / "Zhao Zhang", "Zhang" / "Zhao Zhang", "Zhang Zhao" / "Zhao Zhang"). Needs
  evidence (a shared co-author or affiliation) before two occurrences are called one person.
- ``STRONG``: the first given name is spelled out on both sides and equal, the rest compatible
  ("Andres M. Bran" / "Andres Bran"). Enough on its own when no id disagrees.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property, lru_cache

from retrieval.records import Author, Paper, fold, normalize_openalex_id, normalize_orcid

_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "da", "di", "la", "le", "du", "dos", "das", "ter", "ten", "st"}
_SUFFIXES = {"jr", "sr", "ii", "iii", "iv"}
# Words that make a Crossref-style organisational author ("The ATLAS Collaboration").
_ORGANISATION_WORDS = {
    "collaboration", "consortium", "group", "team", "committee", "project", "network", "initiative",
    "society", "association", "university", "institute", "laboratory", "centre", "center", "council",
    "organization", "organisation", "foundation", "alliance", "working", "investigators", "authors",
}


# Latin letters that Unicode decomposition leaves alone, so ``fold`` would drop them
# ("Martı́n" with a dotless i would become "mart n").


@dataclass(frozen=True)
class PersonName:
    """A folded name: ``given`` tokens (may be initials) and the ``family`` name."""

    given: tuple[str, ...]
    family: str

    @cached_property
    def initials(self) -> str:
        return "".join(token[0] for token in self.given if token)

    @cached_property
    def key(self) -> str:
        """Coarse blocking key: family name + first initial ("zhang z")."""
        return f"{self.family} {self.initials[:1]}".strip()

    @property
    def display(self) -> str:
        return " ".join([*self.given, self.family]).strip()

    @property
    def has_full_given(self) -> bool:
        """True when the first given name is spelled out (not an initial)."""
        return bool(self.given) and len(self.given[0]) > 1


class NameMatch(IntEnum):
    """How strongly two written names agree (see the module docstring)."""

    NONE = 0
    WEAK = 1
    STRONG = 2


@lru_cache(maxsize=131072)
def parse_name(name: str) -> PersonName:
    """Parse "Last, First", "First Last", "F. M. Last", "von Last, Jr, First" into a PersonName.

    Cached: an index repeats the same few thousand names many times.
    """
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
    """Given names agree where both are known: full names must be equal, an initial matches a name.

    "Zhao-Yang" and "Zhaoyang" are the same given name written two ways.
    """
    if a and b and len(a) != len(b) and "".join(a) == "".join(b):
        return True
    for left, right in zip(a, b):
        if len(left) == 1 or len(right) == 1:
            if left[0] != right[0]:
                return False
        elif left != right:
            return False
    return True


def _swapped(name: PersonName) -> PersonName | None:
    """The family-first reading of a two-token name without a comma ("Zhang Zhao")."""
    if len(name.given) == 1 and len(name.given[0]) > 1:
        return PersonName(given=(name.family,), family=name.given[0])
    return None


def name_match(a: str, b: str) -> NameMatch:
    """How strongly two written names agree: NONE, WEAK (initials, swapped order) or STRONG."""
    left, right = parse_name(a), parse_name(b)
    if not left.family or not right.family:
        # names that fold to nothing (non-Latin scripts): only the identical string matches
        return NameMatch.STRONG if a.strip().casefold() == b.strip().casefold() else NameMatch.NONE
    if left.family == right.family:
        if not _given_compatible(left.given, right.given):
            return NameMatch.NONE
        if left.has_full_given and right.has_full_given:
            return NameMatch.STRONG
        return NameMatch.WEAK
    swapped = _swapped(right)
    if swapped and left.family == swapped.family and _given_compatible(left.given, swapped.given):
        return NameMatch.WEAK
    return NameMatch.NONE


def names_compatible(a: str, b: str) -> bool:
    """True when the two written names could denote the same person."""
    return name_match(a, b) is not NameMatch.NONE


@lru_cache(maxsize=131072)
def name_specificity(name: str) -> int:
    """How much a written name says: full given names count more than initials."""
    parsed = parse_name(name)
    return sum(2 if len(token) > 1 else 1 for token in parsed.given)


@lru_cache(maxsize=131072)
def is_organisation(name: str) -> bool:
    """Heuristic: an organisational author ("The ATLAS Collaboration"), not a person."""
    words = fold(name).split()
    return len(words) > 5 or any(word in _ORGANISATION_WORDS for word in words)


def affiliations_overlap(a: list[str], b: list[str]) -> bool:
    """True when the two affiliation lists share an institution (folded, substring-tolerant)."""
    left = {fold(item) for item in a if fold(item)}
    right = {fold(item) for item in b if fold(item)}
    if left & right:
        return True
    return any(x in y or y in x for x in left for y in right if min(len(x), len(y)) >= 8)


def ids_agree(a: Author, b: Author) -> bool | None:
    """True when an id proves the two are one person, False when ids prove they are not, else None.

    ORCID is the stronger id: equal ORCIDs win even over different OpenAlex ids (OpenAlex
    sometimes splits one person into several author records).
    """
    if a.orcid and b.orcid:
        return a.orcid == b.orcid
    if a.openalex_id and b.openalex_id:
        return a.openalex_id == b.openalex_id
    return None


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


# Grouping author occurrences into people ------------------------------------------------------


@dataclass
class PersonCluster:
    """One person as the index knows them: every occurrence judged to be them.

    ``name`` is the most specific variant ("Zhao Zhang" over "Z. Zhang"); ``variants`` are the
    distinct written forms, most frequent first; ``occurrences`` are (paper id, author position)
    pairs; ``affiliations_by_year`` maps a publication year to the affiliations printed on that
    year's papers.
    """

    name: str
    variants: list[str]
    orcids: list[str]
    openalex_ids: list[str]
    paper_ids: list[str]
    occurrences: list[tuple[str, int]]
    affiliations_by_year: dict[int, list[str]]
    is_organisation: bool = False

    @property
    def key(self) -> str:
        """A stable handle: ``orcid:...``, else ``openalex:...``, else ``name:<folded name>``."""
        if self.orcids:
            return f"orcid:{self.orcids[0]}"
        if self.openalex_ids:
            return f"openalex:{self.openalex_ids[0]}"
        return f"name:{fold(self.name)}"

    @property
    def affiliations(self) -> list[str]:
        """Every affiliation, most recent year first (undated ones are not in the by-year map)."""
        seen: list[str] = []
        for year in sorted(self.affiliations_by_year, reverse=True):
            for item in self.affiliations_by_year[year]:
                if item not in seen:
                    seen.append(item)
        return seen

    def name_match(self, query: str) -> NameMatch:
        """The best agreement between ``query`` and any written variant of this person."""
        return max((name_match(query, variant) for variant in self.variants), default=NameMatch.NONE)


@dataclass(slots=True)
class _Root:
    """Union-find payload of one tentative person (kept at the root only, built on first use)."""

    members: list[int]
    orcids: set[str]
    openalex_ids: set[str]
    papers: set[int]
    coauthors: set[str]
    affiliations: set[str]
    best_name: str


class People:
    """Every person of a set of papers, with lookups by occurrence, id and name.

    Build with ``People.from_papers(papers)`` (or ``group_people`` for just the clusters).
    Grouping rules, in order, each refusing a merge that would put two different ORCIDs (or,
    without ORCIDs, two different OpenAlex ids) in one person, or two authors of the same paper:

    1. occurrences sharing an ORCID, then an OpenAlex id, are one person;
    2. within a block of compatible names (family name + first initial), id-carrying people whose
       ids are of different kinds merge when the names agree and co-authors/affiliations agree;
    3. an occurrence without ids joins the one person its evidence (shared co-authors, shared
       affiliation) points to, or, with no evidence, the only person whose name STRONGly matches;
    4. leftover occurrences with the same spelled-out name are one person; initials-only leftovers
       join someone only with evidence, and otherwise stay apart (a "Z. Zhang" of unknown identity).
    """

    def __init__(self, clusters: list[PersonCluster]) -> None:
        self.clusters = clusters
        self._by_occurrence: dict[tuple[str, int], int] = {}
        self._by_id: dict[str, int] = {}
        self._papers_of: dict[str, list[int]] = {}
        self._number = {id(cluster): number for number, cluster in enumerate(clusters)}
        for number, cluster in enumerate(clusters):
            for occurrence in cluster.occurrences:
                self._by_occurrence[occurrence] = number
            for paper_id in cluster.paper_ids:
                self._papers_of.setdefault(paper_id, []).append(number)
            for orcid in cluster.orcids:
                self._by_id[orcid] = number
            for openalex_id in cluster.openalex_ids:
                self._by_id.setdefault(openalex_id, number)

    @classmethod
    def from_papers(cls, papers: Iterable[Paper]) -> "People":
        return cls(_Grouper(list(papers)).run())

    def cluster_of(self, paper_id: str, position: int) -> PersonCluster | None:
        """The person who is author number ``position`` (0-based) of paper ``paper_id``."""
        number = self._by_occurrence.get((paper_id, position))
        return None if number is None else self.clusters[number]

    def by_id(self, orcid_or_openalex: str) -> PersonCluster | None:
        """The person carrying this ORCID or OpenAlex author id (bare or URL form)."""
        key = normalize_orcid(orcid_or_openalex) or normalize_openalex_id(orcid_or_openalex)
        number = self._by_id.get(key) if key else None
        return None if number is None else self.clusters[number]

    def find(self, query: str) -> list[PersonCluster]:
        """People matching an ORCID, an OpenAlex id or a name: STRONG matches first, then by papers."""
        person = self.by_id(query)
        if person is not None:
            return [person]
        scored = [(cluster.name_match(query), cluster) for cluster in self.clusters if not cluster.is_organisation]
        matches = [(strength, cluster) for strength, cluster in scored if strength is not NameMatch.NONE]
        matches.sort(key=lambda item: (-item[0], -len(item[1].paper_ids), item[1].name))
        return [cluster for _, cluster in matches]

    def coauthors(self, person: PersonCluster) -> list[tuple[PersonCluster, int]]:
        """Co-authors of ``person`` with the number of papers shared, most frequent first."""
        me = self._number[id(person)]
        counts: dict[int, int] = {}
        for paper_id in person.paper_ids:
            for other in set(self._papers_of.get(paper_id, [])):
                if other != me:
                    counts[other] = counts.get(other, 0) + 1
        ranked = sorted(counts.items(), key=lambda item: (-item[1], self.clusters[item[0]].name))
        return [(self.clusters[number], shared) for number, shared in ranked]


def group_people(papers: Iterable[Paper]) -> list[PersonCluster]:
    """Group every author occurrence of ``papers`` into people, most prolific first (see ``People``)."""
    return People.from_papers(papers).clusters


class _Grouper:
    """The union-find behind ``People.from_papers``; one instance per grouping run.

    Occurrences live in flat lists; the per-person payload (``_Root``) is only built for the
    occurrences that take part in a union or an evidence check, which keeps the common case
    (a name seen once, or in a block of one) cheap.
    """

    def __init__(self, papers: list[Paper]) -> None:
        self.papers = papers
        self.paper_ids = [paper.id for paper in papers]
        self.authors: list[Author] = []
        self.paper_of: list[int] = []
        self.position: list[int] = []
        self.parsed: list[PersonName] = []
        self.first_of_paper: list[int] = []  # index of each paper's first occurrence
        for paper_number, paper in enumerate(papers):
            self.first_of_paper.append(len(self.authors))
            for position, author in enumerate(paper.authors):
                self.authors.append(author)
                self.paper_of.append(paper_number)
                self.position.append(position)
                self.parsed.append(parse_name(author.name))
        self.parent = list(range(len(self.authors)))
        self.roots: dict[int, _Root] = {}
        self._keys_cache: dict[int, list[str]] = {}

    # --- union-find ----------------------------------------------------------------------------

    def find(self, occ: int) -> int:
        root = occ
        parent = self.parent
        while parent[root] != root:
            root = parent[root]
        while parent[occ] != root:  # path compression
            parent[occ], occ = root, parent[occ]
        return root

    def payload(self, occ: int) -> _Root:
        """The payload of ``occ``'s person (``occ`` must be a root), built on first use."""
        root = self.roots.get(occ)
        if root is None:
            author = self.authors[occ]
            paper_number = self.paper_of[occ]
            keys = self._paper_keys(paper_number)
            position = self.position[occ]
            coauthors = set(keys[:position])
            coauthors.update(keys[position + 1 :])
            root = _Root(
                members=[occ],
                orcids={author.orcid} if author.orcid else set(),
                openalex_ids={author.openalex_id} if author.openalex_id else set(),
                papers={paper_number},
                coauthors=coauthors,
                affiliations={folded for folded in map(fold, author.affiliations) if folded} if author.affiliations else set(),
                best_name=author.name,
            )
            self.roots[occ] = root
        return root

    def _paper_keys(self, paper_number: int) -> list[str]:
        keys = self._keys_cache.get(paper_number)
        if keys is None:
            first = self.first_of_paper[paper_number]
            count = len(self.papers[paper_number].authors)
            keys = [self.parsed[i].key for i in range(first, first + count)]
            self._keys_cache[paper_number] = keys
        return keys

    def conflict(self, a: _Root, b: _Root) -> bool:
        """True when a and b cannot be one person: different ORCIDs/OpenAlex ids, or one paper."""
        if a.orcids and b.orcids:
            if not a.orcids & b.orcids:
                return True
        elif a.openalex_ids and b.openalex_ids and not a.openalex_ids & b.openalex_ids:
            return True
        smaller, larger = (a.papers, b.papers) if len(a.papers) < len(b.papers) else (b.papers, a.papers)
        return any(paper in larger for paper in smaller)

    def union(self, x: int, y: int) -> bool:
        rx, ry = self.find(x), self.find(y)
        if rx == ry:
            return True
        a, b = self.payload(rx), self.payload(ry)
        if self.conflict(a, b):
            return False
        if len(a.members) < len(b.members):
            rx, ry, a, b = ry, rx, b, a
        self.parent[ry] = rx
        a.members.extend(b.members)
        a.orcids |= b.orcids
        a.openalex_ids |= b.openalex_ids
        a.papers |= b.papers
        a.coauthors |= b.coauthors
        a.affiliations |= b.affiliations
        if name_specificity(b.best_name) > name_specificity(a.best_name):
            a.best_name = b.best_name
        del self.roots[ry]
        return True

    # --- evidence ------------------------------------------------------------------------------

    def evidence(self, x: int, y: int) -> int:
        """Shared co-author keys, plus one for a shared affiliation."""
        a, b = self.payload(self.find(x)), self.payload(self.find(y))
        score = len(a.coauthors & b.coauthors)
        if a.affiliations and b.affiliations and a.affiliations & b.affiliations:
            score += 1
        return score

    def pick(self, occ: int, candidates: list[int]) -> int | None:
        """The one candidate the evidence (or, failing that, a unique STRONG name match) points to."""
        me = self.payload(self.find(occ))
        scored: list[tuple[int, NameMatch, int]] = []
        for candidate in candidates:
            if self.find(candidate) == self.find(occ):
                continue
            other = self.payload(self.find(candidate))
            strength = name_match(me.best_name, other.best_name)
            if strength is NameMatch.NONE or self.conflict(me, other):
                continue
            scored.append((self.evidence(occ, candidate), strength, candidate))
        with_evidence = sorted((s for s in scored if s[0] > 0), key=lambda s: -s[0])
        if with_evidence:
            if len(with_evidence) == 1 or with_evidence[0][0] > with_evidence[1][0]:
                return with_evidence[0][2]
            return None
        strong = [s for s in scored if s[1] is NameMatch.STRONG]
        return strong[0][2] if len(strong) == 1 else None

    # --- the run ------------------------------------------------------------------------------

    def run(self) -> list[PersonCluster]:
        self._link_ids()
        blocks: dict[tuple[str, str], list[int]] = {}
        exact: dict[tuple[str, str], list[int]] = {}
        for occ, author in enumerate(self.authors):
            parsed = self.parsed[occ]
            if is_organisation(author.name):
                exact.setdefault(("org", fold(author.name)), []).append(occ)
            elif not parsed.family:
                exact.setdefault(("raw", author.name.strip().casefold()), []).append(occ)
            else:
                blocks.setdefault(("person", parsed.key), []).append(occ)
        for members in exact.values():
            for occ in members[1:]:
                self.union(members[0], occ)
        for members in blocks.values():
            if len(members) > 1:
                self._resolve_block(members)
        return self._clusters()

    def _link_ids(self) -> None:
        first_by_orcid: dict[str, int] = {}
        first_by_openalex: dict[str, int] = {}
        for occ, author in enumerate(self.authors):
            if author.orcid:
                self.union(first_by_orcid.setdefault(author.orcid, occ), occ)
        for occ, author in enumerate(self.authors):
            if author.openalex_id:
                self.union(first_by_openalex.setdefault(author.openalex_id, occ), occ)

    def _has_ids(self, occ: int) -> bool:
        root = self.find(occ)
        if root in self.roots:
            payload = self.roots[root]
            return bool(payload.orcids or payload.openalex_ids)
        author = self.authors[occ]
        return bool(author.orcid or author.openalex_id)

    def _resolve_block(self, members: list[int]) -> None:
        anchors = self._distinct_roots([occ for occ in members if self._has_ids(occ)])
        # 2. id-carrying people whose ids cannot be compared (ORCID-only vs OpenAlex-only)
        for i, left in enumerate(anchors):
            for right in anchors[i + 1 :]:
                if self.find(left) == self.find(right):
                    continue
                a, b = self.payload(self.find(left)), self.payload(self.find(right))
                strength = name_match(a.best_name, b.best_name)
                needed = 1 if strength is NameMatch.STRONG else 2
                if strength is not NameMatch.NONE and not self.conflict(a, b) and self.evidence(left, right) >= needed:
                    self.union(left, right)
        anchors = self._distinct_roots(anchors)
        loose = [occ for occ in members if not self._has_ids(occ)]
        # 3. each occurrence without ids -> the one id-carrying person it points to
        leftovers: list[int] = []
        for occ in loose:
            chosen = self.pick(occ, anchors) if anchors else None
            if chosen is None or not self.union(chosen, occ):
                leftovers.append(occ)
        # 4. same spelled-out name -> one person; then attach what the evidence allows
        by_form: dict[tuple[str, tuple[str, ...]], int] = {}
        for occ in leftovers:
            parsed = self.parsed[occ]
            if parsed.has_full_given:
                self.union(by_form.setdefault((parsed.family, parsed.given), occ), occ)
        pending = self._distinct_roots([occ for occ in leftovers if not self._has_ids(occ)])
        pending.sort(key=lambda occ: name_specificity(self.payload(self.find(occ)).best_name))
        for occ in pending:
            others = [root for root in self._distinct_roots(members) if root != self.find(occ)]
            chosen = self.pick(occ, others)
            if chosen is not None:
                self.union(chosen, occ)

    def _distinct_roots(self, occurrences: list[int]) -> list[int]:
        seen: dict[int, None] = {}
        for occ in occurrences:
            seen.setdefault(self.find(occ), None)
        return list(seen)

    def _clusters(self) -> list[PersonCluster]:
        by_root: dict[int, list[int]] = {}
        for occ in range(len(self.authors)):
            by_root.setdefault(self.find(occ), []).append(occ)
        clusters: list[PersonCluster] = []
        for members in by_root.values():
            counts: dict[str, int] = {}
            orcid_counts: dict[str, int] = {}
            openalex_counts: dict[str, int] = {}
            paper_ids: dict[str, None] = {}
            by_year: dict[int, list[str]] = {}
            for occ in members:
                author = self.authors[occ]
                counts[author.name] = counts.get(author.name, 0) + 1
                if author.orcid:
                    orcid_counts[author.orcid] = orcid_counts.get(author.orcid, 0) + 1
                if author.openalex_id:
                    openalex_counts[author.openalex_id] = openalex_counts.get(author.openalex_id, 0) + 1
                paper = self.papers[self.paper_of[occ]]
                paper_ids.setdefault(self.paper_ids[self.paper_of[occ]], None)
                if paper.year is not None and author.affiliations:
                    year_list = by_year.setdefault(paper.year, [])
                    year_list.extend(a for a in author.affiliations if a not in year_list)
            first_seen = {name: i for i, name in reversed(list(enumerate(self.authors[o].name for o in members)))}
            variants = sorted(counts, key=lambda name: (-counts[name], first_seen[name]))
            display = max(variants, key=lambda name: (name_specificity(name), counts[name], -first_seen[name]))
            clusters.append(
                PersonCluster(
                    name=display,
                    variants=variants,
                    orcids=sorted(orcid_counts, key=lambda key: -orcid_counts[key]),
                    openalex_ids=sorted(openalex_counts, key=lambda key: -openalex_counts[key]),
                    paper_ids=list(paper_ids),
                    occurrences=[(self.paper_ids[self.paper_of[occ]], self.position[occ]) for occ in members],
                    affiliations_by_year=dict(sorted(by_year.items())),
                    is_organisation=is_organisation(display),
                )
            )
        clusters.sort(key=lambda cluster: (-len(cluster.paper_ids), cluster.name))
        return clusters
