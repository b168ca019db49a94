"""The people behind author mentions: who wrote what, without blending namesakes.

A *mention* is one author slot of one paper. ``PeopleDirectory`` groups every mention of a set
of papers into ``Person`` objects with ``retrieval.scholars.clustering`` (blocked by family name;
ids, then shared co-authors and affiliations, then the same full name unless co-authors, topics
or affiliations say two people). The ``evidence`` policy is the default; ``strict`` (what
paperbot did before: join only on ids or shared context) is the benchmark baseline.

Topic evidence reads the vectors the index already stores (``vectors``: ids -> embeddings);
without them the same-name step decides on co-authors and affiliations alone.

Roster scholars claim their mentions (``claims``): every person written exactly as one of a
roster entry's names or aliases, or carrying its ORCID / OpenAlex id, joins that scholar's
person unless their ids conflict or they are a distant community (no co-author in common and a
distant topic).

Every person has a stable id, ``person:<12 hex>``: the smallest of its mentions' own ids (a hash
of paper id and written name). When the index grows, an old id still finds the person who now
holds that mention (``find_person_id``).
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from retrieval.errors import PaperbotError
from retrieval.records.names import (
    id_sets_agree,
    name_specificity,
    names_compatible,
    parse_name,
    possible_families,
)
from retrieval.records.paper import Author, Paper
from retrieval.scholars.clustering import (
    FAR_TOPIC,
    POLICIES,
    Cluster,
    PaperContext,
    Slot,
    TopicSpace,
    Vectors,
    group_block,
)
from retrieval.text import folded

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Mention:
    """One author slot: ``position`` (0-based) among ``n_authors`` of paper ``paper_id``."""

    paper_id: str
    position: int
    n_authors: int
    author: Author
    published: str | None
    occurrence: int = 0  # how many earlier slots of the paper carry the same written name

    @property
    def is_first(self) -> bool:
        return self.position == 0

    @property
    def is_last(self) -> bool:
        return self.n_authors > 1 and self.position == self.n_authors - 1

    @property
    def mention_id(self) -> str:
        """This mention's own stable id: paper id and written name (not the position, which a
        merged record may change)."""
        return mention_id(self.paper_id, self.author.name, self.occurrence)


def mention_id(paper_id: str, written_name: str, occurrence: int = 0) -> str:
    basis = f"{paper_id}|{folded(written_name)}" + (f"|{occurrence}" if occurrence else "")
    return "person:" + hashlib.sha1(basis.encode("utf-8")).hexdigest()[:12]


@dataclass
class Person:
    """One person as the index knows them: their mentions, newest first, and the names written in
    them. Both are fixed once the person is made (``PeopleDirectory`` makes people): ``name``,
    ``paper_ids`` and ``mention_in`` are worked out on first use and kept."""

    key: str
    mentions: list[Mention]
    names: Counter[str] = field(default_factory=Counter)
    ids: dict[str, str] = field(default_factory=dict)  # "orcid"/"openalex" -> the one most written
    claimed_by: str | None = None  # the roster scholar's name when a roster entry claimed them

    @cached_property
    def name(self) -> str:
        """The most informative written form: full given names over initials, then frequency,
        then capitalised over all lowercase ("Colby Banbury" over "colby banbury")."""
        return max(self.names, key=lambda n: (name_specificity(n), self.names[n], n != n.lower(), len(n), n))

    @property
    def paper_ids(self) -> list[str]:
        """The ids of the person's papers, newest first, each once."""
        return list(self._first_mentions)

    @property
    def paper_count(self) -> int:
        return len(self._first_mentions)

    def mention_in(self, paper_id: str) -> Mention | None:
        """The person's first mention in paper ``paper_id``, or None."""
        return self._first_mentions.get(paper_id)

    @cached_property
    def _first_mentions(self) -> dict[str, Mention]:
        """Paper id -> the person's first mention in it, in the order of ``mentions`` (rankings
        ask this for every author of every hit)."""
        first: dict[str, Mention] = {}
        for mention in self.mentions:
            first.setdefault(mention.paper_id, mention)
        return first

    def affiliations(self) -> Iterator[tuple[str | None, str]]:
        """(published, affiliation) pairs, newest paper first."""
        for mention in self.mentions:
            for affiliation in mention.author.affiliations:
                yield mention.published, affiliation


@dataclass(frozen=True)
class Claim:
    """A roster scholar's statement of who they are: their names and ids."""

    name: str
    names: tuple[str, ...]
    orcid: str | None = None
    openalex_id: str | None = None


@dataclass(frozen=True)
class Group:
    """One person as clustering found them: their author slots ``(paper id, position)``, the
    family-name block they were grouped in, the roster scholar who claimed them, their ids."""

    family: str
    slots: tuple[tuple[str, int], ...]
    claimed_by: str | None = None
    ids: tuple[tuple[str, str], ...] = ()


def claims_of(entries: Iterable[Any]) -> tuple[Claim, ...]:
    """Claims from roster entries (anything with ``name``, ``names``, ``orcid``, ``openalex_id``)."""
    return tuple(
        Claim(entry.name, tuple(entry.names), getattr(entry, "orcid", None), getattr(entry, "openalex_id", None))
        for entry in entries
    )


def _papers_needing_topics(blocks: dict[str, list[Cluster]]) -> list[str]:
    """Papers of mentions whose spelled-out name (family + first given name) occurs on more
    than one paper: the only ones the same-name step compares by topic."""
    by_name: dict[tuple[str, str], set[str]] = defaultdict(set)
    for family, clusters in blocks.items():
        for cluster in clusters:
            parsed = parse_name(cluster.slots[0].author.name)
            if parsed.has_full_given:
                by_name[(family, parsed.given[0])].add(cluster.slots[0].paper_id)
    return sorted({paper for papers in by_name.values() if len(papers) > 1 for paper in papers})


def _newest_first(mention: Mention) -> tuple[str, str, int]:
    return (mention.published or "", mention.paper_id, -mention.position)


def same_written_name(a: str, b: str) -> bool:
    """The same name written two ways ("Zhang, Yichi" / "Yichi Zhang"), initials aside."""
    left, right = parse_name(a), parse_name(b)
    return bool(left.family) and left.family == right.family and "".join(left.given) == "".join(right.given)


class PeopleDirectory:
    """Every person behind the authors of ``papers``, with lookups by paper and by name.

    ``clustering``: "evidence" (default) or "strict" (the baseline, see the module docstring);
    ``vectors``: the index's stored embeddings by paper id, for topic evidence; ``claims``: roster
    scholars whose names and ids claim mentions. ``groups``: the ``groups`` of a directory built
    earlier over the same papers (``retrieval.scholars.cache``), placed as they are: nothing is
    clustered, and ``vectors`` and ``claims`` are not read.
    """

    def __init__(
        self,
        papers: Iterable[Paper],
        *,
        clustering: str = "evidence",
        vectors: Vectors | None = None,
        claims: Sequence[Claim] = (),
        groups: Sequence[Group] | None = None,
    ) -> None:
        if clustering not in POLICIES:
            raise ValueError(f"clustering must be one of {POLICIES}, not {clustering!r}")
        self.clustering = clustering
        self.papers: dict[str, Paper] = {}
        for paper in papers:
            self.papers.setdefault(paper.id, paper)
        self.people: list[Person] = []
        self._by_key: dict[str, Person] = {}
        self._by_mention: dict[str, Person] = {}
        self._by_slot: dict[tuple[str, int], Person] = {}
        self._by_family: dict[str, list[Person]] = defaultdict(list)
        self._by_id: dict[tuple[str, str], list[Person]] = {}
        self._topics = TopicSpace(vectors)
        self.groups: list[Group] = []  # every person as placed, in order: what a cache keeps
        self._place(self._group(claims) if groups is None else groups)

    # --- construction -------------------------------------------------------------------------

    def _group(self, claims: Sequence[Claim]) -> list[Group]:
        """Cluster every author slot into people: one ``Group`` each, in placing order."""
        blocks: dict[str, list[Cluster]] = defaultdict(list)
        for paper_id, paper in self.papers.items():
            parsed = [parse_name(a.name) for a in paper.authors]
            context = PaperContext(parsed, len(paper.authors))
            for position, author in enumerate(paper.authors):
                slot = Slot(paper_id, position, author, paper.venue)
                blocks[parsed[position].family].append(Cluster(slot, context))
        if self.clustering == "evidence":
            self._topics.prefetch(_papers_needing_topics(blocks))  # one batched read of the vectors
        clusters: list[tuple[str, Cluster]] = []
        for family in sorted(blocks):
            clusters.extend(
                (family, cluster)
                for cluster in group_block(family, blocks[family], policy=self.clustering, topics=self._topics)
            )
        owner: dict[int, str] = {}
        if claims and self.clustering == "evidence":
            clusters, owner = self._apply_claims(clusters, claims)
        return [self._group_of(family, cluster, owner.get(id(cluster))) for family, cluster in clusters]

    def _place(self, groups: Sequence[Group]) -> None:
        for group in groups:
            self._add(group)
        self.people.sort(key=lambda p: (-len(p.paper_ids), p.name))
        for person in self.people:
            for mention in person.mentions:
                for kind, value in (("orcid", mention.author.orcid), ("openalex", mention.author.openalex_id)):
                    if value and person not in (holders := self._by_id.setdefault((kind, value), [])):
                        holders.append(person)

    def _apply_claims(
        self, clusters: list[tuple[str, Cluster]], claims: Sequence[Claim]
    ) -> tuple[list[tuple[str, Cluster]], dict[int, str]]:
        """Join each roster scholar's clusters into one (see the module docstring)."""
        owner: dict[int, str] = {}
        dropped: set[int] = set()
        for claim in claims:
            ids: tuple[set[str], set[str]] = (
                {claim.orcid} if claim.orcid is not None else set(),
                {claim.openalex_id} if claim.openalex_id is not None else set(),
            )
            named = [
                (family, c) for family, c in clusters
                if id(c) not in dropped and (
                    (ids[0] & c.orcid) or (ids[1] & c.openalex)
                    or any(same_written_name(n, wanted) for n in c.names for wanted in claim.names)
                )
            ]
            # the clusters that do not contradict the roster's ids, largest (or id-bearing) first
            named = [(f, c) for f, c in named if id_sets_agree(ids[0], ids[1], c.orcid, c.openalex) is not False]
            if not named:
                continue
            named.sort(key=lambda item: (not (ids[0] & item[1].orcid or ids[1] & item[1].openalex), -len(item[1].papers)))
            _, anchor = named[0]
            for _, other in named[1:]:
                if id(other) in owner or not self._fits(anchor, other):
                    continue
                anchor.absorb(other)
                dropped.add(id(other))
            owner[id(anchor)] = claim.name
        return [(f, c) for f, c in clusters if id(c) not in dropped], owner

    def _fits(self, anchor: Cluster, other: Cluster) -> bool:
        """Whether a roster-named cluster fits the scholar's profile so far."""
        if anchor.papers & other.papers or id_sets_agree(anchor.orcid, anchor.openalex, other.orcid, other.openalex) is False:
            return False
        if anchor.shares_context(other):
            return True
        similarity = self._topics.similarity(anchor, other)
        return not (anchor.has_coauthors and other.has_coauthors and similarity is not None and similarity < FAR_TOPIC)

    def _mention(self, paper_id: str, position: int) -> Mention:
        paper = self.papers[paper_id]
        author = paper.authors[position]
        written = folded(author.name)
        occurrence = sum(1 for a in paper.authors[:position] if folded(a.name) == written)
        return Mention(paper_id, position, len(paper.authors), author, paper.published, occurrence)

    @staticmethod
    def _group_of(family: str, cluster: Cluster, claimed_by: str | None) -> Group:
        written = Counter(i for slot in cluster.slots for i in (slot.author.orcid, slot.author.openalex_id) if i)
        ids: list[tuple[str, str]] = []
        for kind, values in (("orcid", cluster.orcid), ("openalex", cluster.openalex)):
            if values:  # the most used one: an ORCID may have joined several OpenAlex profiles
                ids.append((kind, max(sorted(values), key=lambda value: written[value])))
        slots = tuple((slot.paper_id, slot.position) for slot in cluster.slots)
        return Group(family, slots, claimed_by, tuple(ids))

    def _add(self, group: Group) -> None:
        mentions = sorted((self._mention(*slot) for slot in group.slots), key=_newest_first, reverse=True)
        person = Person(key=min(m.mention_id for m in mentions), mentions=mentions,
                        names=Counter(m.author.name for m in mentions), claimed_by=group.claimed_by)
        person.ids.update(group.ids)
        self.groups.append(group)
        self.people.append(person)
        self._by_key[person.key] = person
        families = {group.family} | {parse_name(n).family for n in person.names}
        for name_family in sorted(families):
            self._by_family[name_family].append(person)
        for mention in mentions:
            self._by_slot[(mention.paper_id, mention.position)] = person
            self._by_mention.setdefault(mention.mention_id, person)

    # --- lookups ------------------------------------------------------------------------------

    def find_person_id(self, person_id: str) -> Person | None:
        """The person a ``person:…`` id names: its current holder, or the person who now holds
        the mention it was made from (ids survive the index growing)."""
        key = person_id.strip().lower()
        return self._by_key.get(key) or self._by_mention.get(key)

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
        """Co-author person key -> number of shared papers (never the person themself)."""
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
        found: dict[str, Person] = {}
        for family in sorted(possible_families(name)):
            for person in self._by_family.get(family, []):
                if person.key not in found and any(names_compatible(name, written) for written in person.names):
                    found[person.key] = person
        return list(found.values())

    def written_names(self) -> list[str]:
        """Every distinct written author name (for "did you mean" suggestions)."""
        return sorted({n for p in self.people for n in p.names})


# --- the index's stored vectors --------------------------------------------------------------


@runtime_checkable
class StoredVectors(Protocol):
    """An index that gives the embeddings it holds by paper id (``PaperIndex.vectors``)."""

    def vectors(self, ids: Sequence[str]) -> Mapping[str, np.ndarray]: ...


def stored_vectors_of(index: object) -> Vectors | None:
    """The index's lookup of stored embeddings by paper id (nothing is encoded), when it is a
    ``StoredVectors`` (a list of papers without an index is not: grouping then goes without).

    A vector store that is down gives no topic evidence rather than an error: grouping people
    still works on names, ids and co-authors.
    """
    if not isinstance(index, StoredVectors):
        return None
    source = index

    def lookup(ids: list[str]) -> dict[str, Any]:
        try:
            found = source.vectors(ids)
        except PaperbotError:
            return {}
        return dict(found) if found else {}

    return lookup
