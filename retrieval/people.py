"""The people behind author mentions: who wrote what, without blending namesakes.

A *mention* is one author slot of one paper. ``PeopleDirectory`` groups every mention of a set
of papers into ``Person`` objects. Two groups of mentions are only ever joined when all their
written names are mutually compatible (``names_compatible``: "Z. Zhang" ~ "Zhao Zhang", never
"Tong Zhang") and their ids do not conflict (two different ORCIDs or OpenAlex author ids are
two people, whatever the names say). Within those limits, evidence decides, strongest first:

1. **ids**: the same ORCID or OpenAlex author id is the same person (``names.id_sets_agree``:
   ORCIDs decide when both sides have one, so an ORCID joins two OpenAlex profiles of one person);
2. **shared context**: a co-author in common or an affiliation in common. Links between
   mentions of an identical written name are made first; a mention whose name is compatible
   with several people (an initial) joins only when all the people it has evidence with could
   be one person, so "Z. Zhang" never glues "Zhao Zhang" to "Zhen Zhang";
3. **an unambiguous family name**: when every name carrying a family name is compatible with
   every other ("Adrian Del Maestro", "A. Del Maestro") and no id or shared paper proves two
   people, the index holds one such person.

Whatever is left apart stays apart: two "Lei Zhang" with no id, no co-author and no affiliation
in common are reported as two candidates rather than merged into one profile.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from retrieval.names import (
    PersonName,
    affiliation_keys,
    folded,
    id_sets_agree,
    name_specificity,
    names_compatible,
    parse_name,
    possible_families,
)
from retrieval.records import Author, Paper

# Co-authorship on very large collaborations says little about identity.
MAX_AUTHORS_FOR_COAUTHOR_EVIDENCE = 25


@dataclass(frozen=True)
class Mention:
    """One author slot: ``position`` (0-based) among ``n_authors`` of paper ``paper_id``."""

    paper_id: str
    position: int
    n_authors: int
    author: Author
    published: str | None

    @property
    def is_first(self) -> bool:
        return self.position == 0

    @property
    def is_last(self) -> bool:
        return self.n_authors > 1 and self.position == self.n_authors - 1


@dataclass
class Person:
    """One person as the index knows them: their mentions, newest first."""

    key: str
    mentions: list[Mention]
    names: Counter[str] = field(default_factory=Counter)
    ids: dict[str, str] = field(default_factory=dict)  # "orcid"/"openalex" -> the one most written

    @property
    def name(self) -> str:
        """The most informative written form: full given names over initials, then frequency,
        then capitalised over all lowercase ("Colby Banbury" over "colby banbury")."""
        return max(self.names, key=lambda n: (name_specificity(n), self.names[n], n != n.lower(), len(n), n))

    @property
    def paper_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for mention in self.mentions:
            seen.setdefault(mention.paper_id, None)
        return list(seen)

    def mention_in(self, paper_id: str) -> Mention | None:
        return next((m for m in self.mentions if m.paper_id == paper_id), None)

    def affiliations(self) -> Iterator[tuple[str | None, str]]:
        """(published, affiliation) pairs, newest paper first."""
        for mention in self.mentions:
            for affiliation in mention.author.affiliations:
                yield mention.published, affiliation


class _Context:
    """The co-authors of one paper as evidence keys, counted (two namesakes may share a paper).

    A spelled-out co-author gives a *strong* key (``PersonName.key``, first given name):
    ("li s", "shuai") for "Shuai Li"; an initial-only one a *weak* key, its ``PersonName.key``
    ("li s" for "S. Li").
    """

    def __init__(self, authors: list[PersonName], n_authors: int) -> None:
        self.own: list[tuple[tuple[str, str] | None, str | None]] = []
        self.strong: Counter[tuple[str, str]] = Counter()
        self.weak: Counter[str] = Counter()
        for name in authors if n_authors <= MAX_AUTHORS_FOR_COAUTHOR_EVIDENCE else ():
            strong = (name.key, name.given[0]) if name.family and name.has_full_given else None
            weak = name.key if name.family and name.given and not strong else None
            self.own.append((strong, weak))
            if strong:
                self.strong[strong] += 1
            if weak:
                self.weak[weak] += 1

    def coauthors_of(self, position: int) -> tuple[set[tuple[str, str]], set[str]]:
        """(strong, weak) keys of everyone on the paper but the author at ``position``."""
        if not self.own:
            return set(), set()
        strong, weak = set(self.strong), set(self.weak)
        mine_strong, mine_weak = self.own[position]
        if mine_strong and self.strong[mine_strong] == 1:
            strong.discard(mine_strong)
        if mine_weak and self.weak[mine_weak] == 1:
            weak.discard(mine_weak)
        return strong, weak


class _Cluster:
    """Working state of the grouping: mentions plus the evidence they carry."""

    __slots__ = ("mentions", "papers", "names", "folded", "orcid", "openalex", "strong", "weak", "affils")

    def __init__(self, mention: Mention, context: _Context) -> None:
        self.mentions = [mention]
        self.papers = {mention.paper_id}
        self.names = {mention.author.name}
        self.folded = {folded(mention.author.name)}
        self.orcid = {mention.author.orcid} - {None}
        self.openalex = {mention.author.openalex_id} - {None}
        self.strong, self.weak = context.coauthors_of(mention.position)
        self.affils = affiliation_keys(mention.author.affiliations)

    def absorb(self, other: "_Cluster") -> None:
        self.mentions += other.mentions
        self.papers |= other.papers
        self.names |= other.names
        self.folded |= other.folded
        self.orcid |= other.orcid
        self.openalex |= other.openalex
        self.strong |= other.strong
        self.weak |= other.weak
        self.affils |= other.affils


def _mergeable(a: _Cluster, b: _Cluster) -> bool:
    """Same person possible: no id proves two people, every name pair compatible, and never two
    authors of one paper."""
    if id_sets_agree(a.orcid, a.openalex, b.orcid, b.openalex) is False or a.papers & b.papers:
        return False
    return all(names_compatible(x, y) for x in a.names for y in b.names)


class _Grouping:
    """Union of clusters inside one family-name block."""

    def __init__(self, clusters: list[_Cluster]) -> None:
        self.clusters = clusters
        self.parent = list(range(len(clusters)))
        self.members: dict[int, list[int]] = {i: [i] for i in range(len(clusters))}

    def root(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def roots(self) -> list[int]:
        return sorted(self.members)

    def union(self, i: int, j: int) -> bool:
        a, b = self.root(i), self.root(j)
        if a == b or not _mergeable(self.clusters[a], self.clusters[b]):
            return False
        keep, drop = min(a, b), max(a, b)
        self.clusters[keep].absorb(self.clusters[drop])
        self.parent[drop] = keep
        self.members[keep] += self.members.pop(drop)
        return True

    def merge_by_ids(self) -> None:
        for attribute in ("orcid", "openalex"):
            first: dict[str, int] = {}
            for i in range(len(self.clusters)):
                for value in getattr(self.clusters[i], attribute):
                    if value in first:
                        self.union(first[value], i)
                    else:
                        first[value] = i

    def evidence_links(self) -> dict[int, set[int]]:
        """Root -> roots sharing a co-author or an affiliation with it."""
        buckets: dict[tuple[str, tuple[str, str] | str], set[int]] = defaultdict(set)
        probes: dict[str, set[int]] = defaultdict(set)
        probe_sources: dict[str, set[str]] = defaultdict(set)
        for r in self.roots():
            cluster = self.clusters[r]
            for strong in cluster.strong:
                buckets[("s", strong)].add(r)
                probes[strong[0]].add(r)  # ("li s", "shuai") probes "li s"
                probe_sources[strong[0]].add(strong[1])
            for key in cluster.weak:
                buckets[("w", key)].add(r)
            for key in cluster.affils:
                buckets[("a", key)].add(r)
        # An initial-only co-author ("S. Li") links to a full one ("Shuai Li") only when a single
        # full name in this block could be meant.
        for key, members in probes.items():
            if ("w", key) in buckets and len(probe_sources[key]) <= 1:
                buckets[("w", key)] |= members
        links: dict[int, set[int]] = defaultdict(set)
        for members in buckets.values():
            if len(members) < 2:
                continue
            for r in members:
                links[r] |= members - {r}
        return links

    def merge_by_evidence(self) -> None:
        changed = True
        while changed:
            changed = False
            links = self.evidence_links()
            # identical written names first (in a fixed order: the result must not depend on hashing)
            for r in sorted(links):
                for o in sorted(links[r]):
                    a, b = self.root(r), self.root(o)
                    if a != b and self.clusters[a].folded & self.clusters[b].folded:
                        changed |= self.union(a, b)
            if changed:
                continue
            # then compatible names, only when the evidence on both sides points to one person
            for r in sorted(links):
                a = self.root(r)
                for t in self._targets(a, links):
                    group = {a, t} | set(self._targets(a, links)) | set(self._targets(t, links))
                    members = sorted(group)
                    if all(_mergeable(self.clusters[x], self.clusters[y]) for x in members for y in members if x < y):
                        for m in members[1:]:
                            changed |= self.union(members[0], m)
                        break
                if changed:
                    break

    def _targets(self, root: int, links: dict[int, set[int]]) -> list[int]:
        """Current roots with evidence in common with ``root`` that could be the same person."""
        linked = {self.root(o) for m in self.members[root] for o in links.get(m, ())} - {root}
        return sorted(t for t in linked if _mergeable(self.clusters[root], self.clusters[t]))

    def merge_unambiguous_family(self) -> None:
        """One person for the whole block, unless a name, an id or a shared paper says two."""
        roots = self.roots()
        names = {n for r in roots for n in self.clusters[r].names}
        if not all(names_compatible(x, y) for x in names for y in names):
            return
        clusters = [self.clusters[r] for r in roots]
        if all(_mergeable(a, b) for i, a in enumerate(clusters) for b in clusters[i + 1 :]):
            for r in roots[1:]:
                self.union(roots[0], r)


def _person_key(mentions: list[Mention]) -> str:
    basis = "|".join(sorted(f"{m.paper_id}#{m.position}" for m in mentions))
    return "person:" + hashlib.sha1(basis.encode("utf-8")).hexdigest()[:16]


def _newest_first(mention: Mention) -> tuple[str, str, int]:
    return (mention.published or "", mention.paper_id, -mention.position)


class PeopleDirectory:
    """Every person behind the authors of ``papers``, with lookups by paper and by name."""

    def __init__(self, papers: Iterable[Paper]) -> None:
        self.papers: dict[str, Paper] = {}
        for paper in papers:
            self.papers.setdefault(paper.id, paper)
        self.people: list[Person] = []
        self._by_key: dict[str, Person] = {}
        self._by_slot: dict[tuple[str, int], Person] = {}
        self._by_family: dict[str, list[Person]] = defaultdict(list)
        self._by_id: dict[tuple[str, str], list[Person]] = {}
        self._group()

    # --- construction -------------------------------------------------------------------------

    def _group(self) -> None:
        blocks: dict[str, list[_Cluster]] = defaultdict(list)
        for paper_id, paper in self.papers.items():
            parsed = [parse_name(a.name) for a in paper.authors]
            context = _Context(parsed, len(paper.authors))
            for position, author in enumerate(paper.authors):
                mention = Mention(paper_id, position, len(paper.authors), author, paper.published)
                blocks[parsed[position].family].append(_Cluster(mention, context))
        for family in sorted(blocks):
            grouping = _Grouping(blocks[family])
            if len(grouping.clusters) > 1:
                grouping.merge_by_ids()
                grouping.merge_by_evidence()
                grouping.merge_unambiguous_family()
            for r in grouping.roots():
                self._add(family, grouping.clusters[r])
        self.people.sort(key=lambda p: (-len(p.paper_ids), p.name))
        for person in self.people:
            for mention in person.mentions:
                for key in (("orcid", mention.author.orcid), ("openalex", mention.author.openalex_id)):
                    if key[1] and person not in (holders := self._by_id.setdefault(key, [])):
                        holders.append(person)

    def _add(self, family: str, cluster: _Cluster) -> None:
        mentions = sorted(cluster.mentions, key=_newest_first, reverse=True)
        person = Person(key=_person_key(mentions), mentions=mentions)
        person.names.update(m.author.name for m in mentions)
        written = Counter(i for m in mentions for i in (m.author.orcid, m.author.openalex_id) if i)
        for kind, values in (("orcid", cluster.orcid), ("openalex", cluster.openalex)):
            if values:  # the most used one: an ORCID may have joined several OpenAlex profiles
                person.ids[kind] = max(sorted(values), key=lambda value: written[value])
        self.people.append(person)
        self._by_key[person.key] = person
        self._by_family[family].append(person)
        for mention in mentions:
            self._by_slot[(mention.paper_id, mention.position)] = person

    # --- lookups ------------------------------------------------------------------------------

    def get(self, key: str) -> Person:
        return self._by_key[key]

    def person_at(self, paper_id: str, position: int) -> Person | None:
        return self._by_slot.get((paper_id, position))

    def authors_of(self, paper_id: str) -> list[Person]:
        paper = self.papers.get(paper_id)
        if paper is None:
            return []
        found = (self._by_slot.get((paper_id, i)) for i in range(len(paper.authors)))
        return [p for p in found if p is not None]

    def papers_of(self, person: Person) -> list[Paper]:
        """The person's papers, newest first."""
        return [self.papers[pid] for pid in person.paper_ids if pid in self.papers]

    def coauthors_of(self, person: Person) -> Counter[str]:
        """Co-author person key -> number of shared papers."""
        shared: Counter[str] = Counter()
        for paper_id in person.paper_ids:
            others = {p.key for p in self.authors_of(paper_id)} - {person.key}
            shared.update(others)
        return shared

    def with_id(self, kind: str, value: str) -> list[Person]:
        """People carrying an ORCID (``kind="orcid"``) or OpenAlex author id (``"openalex"``)."""
        return list(self._by_id.get((kind, value), []))

    def compatible_with(self, name: str) -> list[Person]:
        """People any of whose written names could be ``name``."""
        found: list[Person] = []
        for family in possible_families(name):
            for person in self._by_family.get(family, []):
                if any(names_compatible(name, written) for written in person.names):
                    found.append(person)
        return found

    def written_names(self) -> list[str]:
        """Every distinct written author name (for "did you mean" suggestions)."""
        return sorted({n for p in self.people for n in p.names})


# --- one directory per index state ------------------------------------------------------------

_CACHE_SIZE = 2
_cache: "OrderedDict[tuple[str, int], PeopleDirectory]" = OrderedDict()
_cache_lock = threading.Lock()


def _generation(index: Any) -> tuple[str, int] | None:
    """(which store, its write counter) when the index exposes one, else None."""
    source: Any = index
    counter: Callable[[], int] | None = getattr(index, "generation", None)
    if not callable(counter):
        source = getattr(index, "store", None)
        counter = getattr(source, "generation", None)
    if not callable(counter):
        return None
    return str(getattr(source, "path", id(source))), int(counter())


def directory_for(index: Any) -> PeopleDirectory:
    """The people of everything ``index.iter_papers()`` yields, rebuilt only after a write.

    Grouping a large index takes seconds, so the directory is kept per store generation (the
    record store bumps it on every write). Indexes without a generation are grouped afresh.
    """
    key = _generation(index)
    if key is None:
        return PeopleDirectory(index.iter_papers())
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None:
            cached = PeopleDirectory(index.iter_papers())
            _cache[key] = cached
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
        _cache.move_to_end(key)
        return cached
