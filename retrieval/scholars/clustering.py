"""Clustering author mentions into people, one family-name block at a time.

The decision half of ``retrieval.scholars.people`` (which builds the directory around it):
mentions are blocked by family name, and inside a block clusters of mentions are joined step by
step, strongest evidence first: 1. the same ORCID or OpenAlex author id; 2. a shared co-author
or affiliation; 3. the same spelled-out full name unless disjoint co-authors together with
distant topics or incompatible affiliations say two people (``consolidate_full_names``, the
``evidence`` policy only); 4. a family name every written name of which is compatible with every
other. Incompatible names, conflicting ids or two author slots of one paper are never joined.
The ``strict`` policy (steps 1, 2 and 4) is the baseline of ``bench/people.py``.

The rules in full, and the measurements the thresholds come from: ``docs/scholars.md``.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from retrieval.records.names import (
    NameMatch,
    PersonName,
    affiliation_keys,
    affiliations_overlap,
    id_sets_agree,
    is_east_asian_name,
    name_match,
    names_compatible,
    parse_name,
)
from retrieval.records.paper import Author
from retrieval.text import folded

# Co-authorship on very large collaborations says little about identity.
MAX_AUTHORS_FOR_COAUTHOR_EVIDENCE = 25
# Centroid cosine under which two sets of papers are "distant topics", and over which they are
# "close" (docs/scholars.md says where the numbers come from).
FAR_TOPIC = 0.25
NEAR_TOPIC = 0.5
# A cluster that fits two incompatible people about as well (within this much affinity) joins neither.
AMBIGUITY_MARGIN = 0.1
# A given name this short in a family block with this many distinct given names is common.
COMMON_GIVEN_MAX_LETTERS = 3
COMMON_BLOCK_GIVEN_NAMES = 5

Vectors = Callable[[list[str]], Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Slot:
    """One author slot to cluster: ``position`` of ``author`` on paper ``paper_id``."""

    paper_id: str
    position: int
    author: Author
    venue: str | None


class PaperContext:
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


_UNINFORMATIVE_VENUE_WORDS = {"arxiv", "corr", "preprint", "biorxiv", "medrxiv", "ssrn", "submitted", "review"}


def venue_key(venue: str | None) -> str | None:
    """The folded venue, or None for venues everybody shares (preprint servers)."""
    key = folded(venue or "")
    if not key or _UNINFORMATIVE_VENUE_WORDS & set(key.split()):
        return None
    return key


class Cluster:
    """Working state: slots plus the evidence they carry."""

    __slots__ = ("affils", "folded", "names", "openalex", "orcid", "papers", "slots", "strong", "venues", "weak")

    def __init__(self, slot: Slot, context: PaperContext) -> None:
        self.slots = [slot]
        self.papers = {slot.paper_id}
        self.names = {slot.author.name}
        self.folded = {folded(slot.author.name)}
        self.orcid: set[str] = {slot.author.orcid} if slot.author.orcid is not None else set()
        self.openalex: set[str] = {slot.author.openalex_id} if slot.author.openalex_id is not None else set()
        self.strong, self.weak = context.coauthors_of(slot.position)
        self.affils = affiliation_keys(slot.author.affiliations)
        self.venues = {key} if (key := venue_key(slot.venue)) else set()

    def absorb(self, other: Cluster) -> None:
        self.slots += other.slots
        self.papers |= other.papers
        self.names |= other.names
        self.folded |= other.folded
        self.orcid |= other.orcid
        self.openalex |= other.openalex
        self.strong |= other.strong
        self.weak |= other.weak
        self.affils |= other.affils
        self.venues |= other.venues

    @property
    def has_coauthors(self) -> bool:
        return bool(self.strong or self.weak)

    def shares_coauthor(self, other: Cluster) -> bool:
        return bool(self.strong & other.strong or self.weak & other.weak)

    def shares_context(self, other: Cluster) -> bool:
        """A co-author or an institution in common: evidence for one person."""
        return self.shares_coauthor(other) or bool(
            self.affils and other.affils and affiliations_overlap(self.affiliations, other.affiliations)
        )

    @property
    def affiliations(self) -> list[str]:
        return sorted(self.affils)


def mergeable(a: Cluster, b: Cluster) -> bool:
    """Same person possible: no id proves two people, every name pair compatible, and never two
    authors of one paper."""
    if id_sets_agree(a.orcid, a.openalex, b.orcid, b.openalex) is False or a.papers & b.papers:
        return False
    return all(names_compatible(x, y) for x in a.names for y in b.names)


class TopicSpace:
    """Unit-length paper vectors, fetched lazily, and the centroids of clusters of them."""

    def __init__(self, vectors: Vectors | None) -> None:
        self._fetch = vectors
        self._unit: dict[str, np.ndarray | None] = {}

    def prefetch(self, paper_ids: Iterable[str]) -> None:
        missing = [p for p in dict.fromkeys(paper_ids) if p not in self._unit]
        if not missing or self._fetch is None:
            self._unit.update((p, None) for p in missing)
            return
        found = self._fetch(missing)
        for paper_id in missing:
            vector = found.get(paper_id)
            norm = float(np.linalg.norm(vector)) if vector is not None else 0.0
            self._unit[paper_id] = np.asarray(vector, dtype=np.float64) / norm if norm > 0 else None

    def centroid(self, papers: Iterable[str]) -> np.ndarray | None:
        self.prefetch(papers)
        known = [v for p in papers if (v := self._unit.get(p)) is not None]
        if not known:
            return None
        mean = np.mean(known, axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm > 0 else None

    def similarity(self, a: Cluster, b: Cluster) -> float | None:
        """Cosine of the two clusters' topic centroids (None when either has no vector)."""
        left, right = self.centroid(sorted(a.papers)), self.centroid(sorted(b.papers))
        if left is None or right is None:
            return None
        return float(left @ right)


class BlockGrouping:
    """Union of clusters inside one family-name block."""

    def __init__(self, family: str, clusters: list[Cluster]) -> None:
        self.family = family
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
        if a == b or not mergeable(self.clusters[a], self.clusters[b]):
            return False
        keep, drop = min(a, b), max(a, b)
        self.clusters[keep].absorb(self.clusters[drop])
        self.parent[drop] = keep
        self.members[keep] += self.members.pop(drop)
        return True

    # --- step 1: ids ---------------------------------------------------------------------------

    def merge_by_ids(self) -> None:
        for attribute in ("orcid", "openalex"):
            first: dict[str, int] = {}
            for i in range(len(self.clusters)):
                for value in getattr(self.clusters[i], attribute):
                    if value in first:
                        self.union(first[value], i)
                    else:
                        first[value] = i

    # --- step 2: shared co-authors and affiliations -------------------------------------------

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
                    if all(mergeable(self.clusters[x], self.clusters[y]) for x in members for y in members if x < y):
                        for m in members[1:]:
                            changed |= self.union(members[0], m)
                        break
                if changed:
                    break

    def _targets(self, root: int, links: dict[int, set[int]]) -> list[int]:
        """Current roots with evidence in common with ``root`` that could be the same person."""
        linked = {self.root(o) for m in self.members[root] for o in links.get(m, ())} - {root}
        return sorted(t for t in linked if mergeable(self.clusters[root], self.clusters[t]))

    # --- step 3: the same full name ------------------------------------------------------------

    def consolidate_full_names(self, topics: TopicSpace) -> None:
        """Join clusters spelling out the same first given name unless evidence says two people.

        Candidates are joined most similar first (a heap of pair affinities, re-scored against
        the grown cluster after every join); the rule in full: ``docs/scholars.md``.
        """
        by_first: dict[str, list[int]] = defaultdict(list)
        given_letters: dict[str, int] = {}
        for r in self.roots():
            spelled = _spelled_given_name(self.clusters[r])
            if spelled:
                first, letters = spelled
                by_first[first].append(r)
                given_letters[first] = max(given_letters.get(first, 0), letters)
        common_block = len(by_first) >= COMMON_BLOCK_GIVEN_NAMES
        for first, roots in sorted(by_first.items()):
            if len(roots) < 2:
                continue
            # "Wei" is common, "Yi-Chao" (six letters, though its first part is "yi") is not
            common = common_block and given_letters[first] <= COMMON_GIVEN_MAX_LETTERS
            topics.prefetch(p for r in roots for p in self.clusters[r].papers)
            self._agglomerate(roots, topics, common)

    def _agglomerate(self, roots: list[int], topics: TopicSpace, common: bool) -> None:
        alive = set(roots)
        heap: list[tuple[float, int, int]] = []

        def push(a: int, b: int) -> None:
            affinity = self._same_name_affinity(self.clusters[a], self.clusters[b], topics, common)
            if affinity is not None:
                heapq.heappush(heap, (-affinity, min(a, b), max(a, b)))

        ordered = sorted(alive)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                push(a, b)
        while heap:
            _, a, b = heapq.heappop(heap)
            if a not in alive or b not in alive:
                continue  # a stale pair: one side was joined since it was scored
            # re-check against the clusters as they are now (they may have grown)
            affinity = self._same_name_affinity(self.clusters[a], self.clusters[b], topics, common)
            if affinity is None or self._ambiguous(a, b, affinity, alive, topics, common):
                continue
            if not self.union(a, b):
                continue
            keep, drop = min(a, b), max(a, b)  # ``union`` keeps the smaller root
            alive.discard(drop)
            for other in sorted(alive - {keep}):
                push(keep, other)

    def _ambiguous(self, a: int, b: int, affinity: float, alive: set[int], topics: TopicSpace, common: bool) -> bool:
        """True when one side could as well join a third cluster that is provably not the other
        side's person (ids or a shared paper): an id-less "Jason Priem" beside two Jason Priems
        with different ORCIDs stays apart rather than being given to either at random."""
        for side, other in ((a, b), (b, a)):
            for third in alive - {a, b}:
                if mergeable(self.clusters[other], self.clusters[third]):
                    continue
                rival = self._same_name_affinity(self.clusters[side], self.clusters[third], topics, common)
                if rival is not None and rival >= affinity - AMBIGUITY_MARGIN:
                    return True
        return False

    @staticmethod
    def _same_name_affinity(a: Cluster, b: Cluster, topics: TopicSpace, common: bool) -> float | None:
        """How alike two same-name clusters are, or None when the evidence says two people."""
        if not mergeable(a, b) or not all(
            name_match(x, y) is NameMatch.STRONG for x in _spelled(a.names) for y in _spelled(b.names)
        ):
            return None
        similarity = topics.similarity(a, b)
        if a.shares_context(b):
            return 2.0 + (similarity or 0.0)
        disjoint = a.has_coauthors and b.has_coauthors
        far = similarity is not None and similarity < FAR_TOPIC
        near = similarity is not None and similarity >= NEAR_TOPIC
        clash = bool(a.affils and b.affils)  # both known, none in common (checked above)
        if disjoint and (far or clash):
            return None
        if common and disjoint and not near:
            return None
        bonus = 0.1 if a.venues & b.venues else 0.0
        return (similarity if similarity is not None else 0.0) + bonus

    # --- step 4: one family, one person --------------------------------------------------------

    def merge_unambiguous_family(self, *, respect_splits: bool = False) -> None:
        """One person for the whole block, unless a name, an id or a shared paper says two.

        ``respect_splits``: when the same-name step left two spelled-out clusters apart on
        evidence, the block is not one person either.
        """
        roots = self.roots()
        names = {n for r in roots for n in self.clusters[r].names}
        if not all(names_compatible(x, y) for x in names for y in names):
            return
        if respect_splits and sum(1 for r in roots if _spelled(self.clusters[r].names)) > 1:
            return
        clusters = [self.clusters[r] for r in roots]
        if all(mergeable(a, b) for i, a in enumerate(clusters) for b in clusters[i + 1 :]):
            for r in roots[1:]:
                self.union(roots[0], r)


def _spelled(names: Iterable[str]) -> list[str]:
    """The names that spell out a given name in Latin letters (an initial, or a name in an East
    Asian script, is held by a cluster on evidence, not by spelling)."""
    return [name for name in names if parse_name(name).has_full_given and not is_east_asian_name(name)]


def _spelled_given_name(cluster: Cluster) -> tuple[str, int] | None:
    """(first given name, letters of the longest spelled-out given name) when the cluster's
    spelled-out names agree on the first given name; None when they do not or there is none."""
    firsts = set()
    letters = 0
    for name in cluster.names:
        parsed = parse_name(name)
        if not parsed.has_full_given or is_east_asian_name(name):
            continue  # an initial (or 韩放达) the cluster already holds on evidence ("J. Priem")
        firsts.add(parsed.given[0])
        letters = max(letters, len("".join(token for token in parsed.given if len(token) > 1)))
    if not firsts:  # written only in characters: the same characters are the same name
        written = {"".join(name.split()) for name in cluster.names if is_east_asian_name(name)}
        if len(written) == 1 and len(cluster.names) == 1:
            name = written.pop()
            # a one-character given name (张伟) is the common kind
            one_character = len([c for c in name if c.isalpha()]) <= 2
            return "=" + name, COMMON_GIVEN_MAX_LETTERS + (0 if one_character else 1)
    return (firsts.pop(), letters) if len(firsts) == 1 else None


POLICIES = ("evidence", "strict")


def group_block(family: str, clusters: list[Cluster], *, policy: str, topics: TopicSpace) -> list[Cluster]:
    """The people of one family-name block under ``policy`` ("evidence" or "strict")."""
    grouping = BlockGrouping(family, clusters)
    if len(clusters) > 1:
        grouping.merge_by_ids()
        grouping.merge_by_evidence()
        if policy == "evidence":
            grouping.consolidate_full_names(topics)
            grouping.merge_by_evidence()  # grown clusters may now share context with an initial
        grouping.merge_unambiguous_family(respect_splits=policy == "evidence")
    return [grouping.clusters[r] for r in grouping.roots()]
