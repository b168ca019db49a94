"""One record per paper: recognise the same paper across sources and merge it field by field.

``same_paper`` decides identity: a shared DOI, arXiv id or OpenAlex id (unless the titles have
almost no word in common: ``titles_conflict``), or the same normalised title + year (+-1 between
a preprint and its published version) + a compatible first author. Two *different* DOIs always
mean two papers. The arXiv DOI ``10.48550/arXiv.X`` is another
spelling of arXiv id X: ``normalize_ids`` turns it into ``arxiv_id`` (and drops it as a DOI) so a
preprint gets the same canonical id whichever source described it first.

``merge_papers`` keeps the ``Provenance`` entries of both (``fields`` lists what that source
supplied; one entry per (source, source_id), at most ``MAX_PROVENANCE_ENTRIES``: see
``merge_provenance``) and chooses each field by rule:

- DOI, venue, publisher, type, title, url, pages, volume, issue, editors: the published version
  over a preprint, then by source crossref > openalex > bibtex > other files > arxiv;
- extra_fields (what a file carried beyond the columns): united, key by key by the same rule;
- editor_families: united; those of editors the kept list does not have are dropped;
- abstract: the longest clean one; authors: the list with more authors (then more ids and
  affiliations), enriched with ORCID/OpenAlex ids, affiliations and fuller names from the other
  list, author by author (by position and name, never across disagreeing ids), each keeping
  the family part the sources gave (``Author.family``);
  ``authors_truncated`` follows the kept list (a list cut as long as it, from another source,
  marks it too; only a fuller list clears it);
- published: the published version's date for a preprint + published pair, else the most
  precise date; categories: union; citation_count: max; open_access: any True;
- arxiv_id/arxiv_version and openalex_id: kept from whichever has them (latest version).

A record merged with a copy of itself (a file repeating one entry 4,000 times under 4,000
keys) only gains the copy's provenance: ``merge_papers`` sees the same fields and skips the
field rules, so folding N copies costs N small steps, not N growing ones.

``dedupe`` folds a listing that shows a paper twice into one record, blocking candidates by id
and title keys so it stays linear in practice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

from retrieval.records.names import ids_agree, name_specificity, names_compatible, parse_name
from retrieval.records.paper import Author, Paper, Provenance, normalize_arxiv_id, title_key

#: Provenance entries one record keeps (see ``merge_provenance``): enough for every source of a
#: paper and the files that cite it, not 4,000 copies of one BibTeX entry.
MAX_PROVENANCE_ENTRIES = 50

# Lower is preferred for DOI/venue/publisher/type/title/url.
_SOURCE_RANK = {"crossref": 0, "openalex": 1, "bibtex": 2, "arxiv": 4}
_OTHER_FILE_RANK = 3
_UNKNOWN_RANK = 5
_PRIORITY_FIELDS = ("doi", "venue", "publisher", "type", "title", "url", "pages", "volume", "issue", "editors")
_ATTRIBUTED_FIELDS = (
    "title", "authors", "abstract", "published", "venue", "publisher", "doi", "arxiv_id",
    "arxiv_version", "openalex_id", "url", "type", "categories", "open_access", "citation_count",
    "pages", "volume", "issue", "editors", "extra_fields",
)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_PREPRINT_TYPES = {"preprint", "posted-content", "posted_content", "unpublished", "misc-preprint"}
_MARKUP = re.compile(r"</?[a-zA-Z][a-zA-Z0-9:]*[^>]*>")
_ABSTRACT_LABEL = re.compile(r"^\s*abstract\s*[:.\-]?\s*", re.IGNORECASE)
# Titles too generic to identify a paper without an id.
_GENERIC_TITLES = {
    "introduction", "editorial", "preface", "foreword", "reply", "response", "erratum", "corrigendum",
    "correction", "commentary", "letter to the editor", "book review", "index", "contents", "abstracts",
    "front matter", "back matter", "discussion", "conclusion", "untitled",
}


# Identifiers -----------------------------------------------------------------------------------


def source_rank(source: str) -> int:
    """Preference of a source for bibliographic fields (lower wins)."""
    name = source.lower()
    if name in _SOURCE_RANK:
        return _SOURCE_RANK[name]
    if name.startswith("arxiv"):  # arxiv-oai, arxiv-snapshot: arXiv metadata from files
        return _SOURCE_RANK["arxiv"]
    if name in {"jsonl", "csl", "csl-json", "ris", "file"}:
        return _OTHER_FILE_RANK
    return _UNKNOWN_RANK


def arxiv_id_from_doi(doi: str | None) -> str | None:
    """The arXiv id behind an arXiv DOI (``10.48550/arXiv.2304.05376`` -> ``2304.05376``)."""
    match = _ARXIV_DOI.match(doi or "")
    return normalize_arxiv_id(match.group(1)) if match else None


def normalize_ids(paper: Paper) -> Paper:
    """The paper with an arXiv DOI turned into its arXiv id (the DOI itself is then dropped)."""
    from_doi = arxiv_id_from_doi(paper.doi)
    if from_doi is None:
        return paper
    if paper.arxiv_id and paper.arxiv_id != from_doi:
        return paper  # contradictory record: leave it as the source wrote it
    return paper.model_copy(update={"doi": None, "arxiv_id": from_doi})


def is_preprint(paper: Paper) -> bool:
    """Preprint-like: typed as a preprint, described by arXiv alone, or an arXiv id without a DOI."""
    if (paper.type or "").lower() in _PREPRINT_TYPES:
        return True
    sources = paper.sources
    if sources and all(source.lower().startswith("arxiv") for source in sources):
        return True
    return bool(paper.arxiv_id and not paper.doi)


def _first_family(paper: Paper) -> str:
    return parse_name(paper.authors[0].name).family if paper.authors else ""


def title_variants(title: str) -> list[str]:
    """The title key, plus the part after a "System:" prefix ("ChemCrow: Augmenting ...").

    A preprint and its published version may differ only by that prefix; a store looking for
    the other version of a paper can query both keys.
    """
    key = title_key(title)
    variants = [key]
    if ":" in title:
        rest = title_key(title.split(":", 1)[1])
        if len(rest.split()) >= 4 and rest != key:
            variants.append(rest)
    return variants


def blocking_keys(paper: Paper) -> set[str]:
    """Keys two records of one paper are likely to share (ids, title + first author).

    Useful for any store that must find candidate duplicates without comparing every pair;
    candidates still need ``same_paper``.
    """
    paper = normalize_ids(paper)
    keys: set[str] = set()
    if paper.doi:
        keys.add(f"doi:{paper.doi}")
    if paper.arxiv_id:
        keys.add(f"arxiv:{paper.arxiv_id}")
    if paper.openalex_id:
        keys.add(f"openalex:{paper.openalex_id}")
    family = _first_family(paper)
    if family:
        for variant in title_variants(paper.title):
            if variant and variant not in _GENERIC_TITLES:
                keys.add(f"title:{variant}|{family}")
    return keys


# Identity --------------------------------------------------------------------------------------


def _titles_match(a: Paper, b: Paper, one_preprint: bool) -> bool:
    key_a, key_b = title_key(a.title), title_key(b.title)
    if not key_a or key_a in _GENERIC_TITLES or len(key_a.split()) < 2:
        return False
    if key_a == key_b:
        return True
    # a preprint often carries a "System:" prefix its published version dropped
    return one_preprint and bool(set(title_variants(a.title)) & set(title_variants(b.title)))


def _years_match(a: Paper, b: Paper, one_preprint: bool) -> bool:
    if a.year is None or b.year is None:
        return len(title_key(a.title).split()) >= 6  # a long title alone is distinctive enough
    return a.year == b.year or (one_preprint and abs(a.year - b.year) <= 1)


_TITLE_FILLER = {"a", "an", "the", "of", "for", "and", "in", "on", "to", "with", "by", "from", "via", "at", "is"}
MIN_SHARED_TITLE_WORDS = 0.25


def titles_conflict(a: Paper, b: Paper) -> bool:
    """True when two titles cannot name one paper: each has three words or more that say
    something, and they share under a quarter of them. A shared id then is a copy-paste slip
    (a real file gave two different papers the same ``arxiv = {...}``), not one paper; a
    preprint's renamed version still shares most of its words."""
    words_a = set(title_key(a.title).split()) - _TITLE_FILLER
    words_b = set(title_key(b.title).split()) - _TITLE_FILLER
    if len(words_a) < 3 or len(words_b) < 3:
        return False
    return len(words_a & words_b) / len(words_a | words_b) < MIN_SHARED_TITLE_WORDS


def shared_ids(a: Paper, b: Paper) -> list[str]:
    """The id fields (doi, arxiv_id, openalex_id) on which two records agree."""
    a, b = normalize_ids(a), normalize_ids(b)
    return [name for name in ("doi", "arxiv_id", "openalex_id") if getattr(a, name) and getattr(a, name) == getattr(b, name)]


def same_paper(a: Paper, b: Paper) -> bool:
    """True when two records describe the same paper (see the module docstring)."""
    a, b = normalize_ids(a), normalize_ids(b)
    if a.doi and b.doi and a.doi != b.doi:
        return False
    if a.arxiv_id and b.arxiv_id and a.arxiv_id != b.arxiv_id:
        return False
    if shared_ids(a, b):
        return not titles_conflict(a, b)
    if not a.authors or not b.authors:
        return False
    one_preprint = is_preprint(a) != is_preprint(b)
    if not _titles_match(a, b, one_preprint) or not _years_match(a, b, one_preprint):
        return False
    first_a, first_b = a.authors[0], b.authors[0]
    if first_a.orcid and first_b.orcid:
        return first_a.orcid == first_b.orcid
    # OpenAlex author ids are not compared here: OpenAlex often splits one person into several
    # profiles, one per version of a paper (ChemCrow's preprint and article differ).
    return names_compatible(first_a.name, first_b.name)


# Merging ---------------------------------------------------------------------------------------


def _supplied_fields(paper: Paper) -> list[str]:
    return [name for name in _ATTRIBUTED_FIELDS if getattr(paper, name) not in (None, "", [], {})]


def _attributed(paper: Paper) -> Paper:
    """A single-source record whose provenance does not say which fields it supplied: say it."""
    if len(paper.provenance) == 1 and not paper.provenance[0].fields:
        entry = paper.provenance[0].model_copy(update={"fields": _supplied_fields(paper)})
        return paper.model_copy(update={"provenance": [entry]})
    return paper


def _field_rank(paper: Paper, field: str) -> int:
    ranks = [source_rank(p.source) for p in paper.provenance if field in p.fields]
    if not ranks:
        ranks = [source_rank(p.source) for p in paper.provenance]
    return min(ranks, default=_UNKNOWN_RANK)


def _choose(a: Paper, b: Paper, field: str, published_side: Paper | None) -> Any:
    """Value of a priority field: the published version's, else the better-ranked source's."""
    value_a, value_b = getattr(a, field), getattr(b, field)
    if value_a in (None, "", []):
        return value_b
    if value_b in (None, "", []):
        return value_a
    if published_side is not None:
        return getattr(published_side, field)
    if field == "doi":  # a real DOI beats an arXiv DOI (normally already normalised away)
        if arxiv_id_from_doi(value_a) and not arxiv_id_from_doi(value_b):
            return value_b
        if arxiv_id_from_doi(value_b) and not arxiv_id_from_doi(value_a):
            return value_a
    return value_b if _field_rank(b, field) < _field_rank(a, field) else value_a


def _clean_abstract(text: str) -> tuple[bool, int]:
    """(is clean, useful length) of an abstract: markup residue makes it unclean."""
    body = _ABSTRACT_LABEL.sub("", text)
    return (not _MARKUP.search(body), len(body))


def _choose_abstract(a: str | None, b: str | None) -> str | None:
    candidates = [text for text in (a, b) if text]
    if not candidates:
        return None
    return max(candidates, key=_clean_abstract)


def _precision(published: str | None) -> int:
    return 0 if not published else published.count("-") + 1


def _choose_published(a: Paper, b: Paper, published_side: Paper | None) -> str | None:
    if published_side is not None and published_side.published:
        return published_side.published
    if not a.published or not b.published:
        return a.published or b.published
    if _precision(a.published) != _precision(b.published):
        return a.published if _precision(a.published) > _precision(b.published) else b.published
    return b.published if _field_rank(b, "published") < _field_rank(a, "published") else a.published


def _version_number(version: str | None) -> int:
    return int(version[1:]) if version and version[1:].isdigit() else 0


def _author_info(authors: list[Author]) -> tuple[int, int]:
    detail = sum(
        name_specificity(author.name) + 3 * bool(author.orcid) + 3 * bool(author.openalex_id) + bool(author.affiliations)
        for author in authors
    )
    return (len(authors), detail)


def _enrich(primary: Author, other: Author) -> Author:
    """``primary`` completed with ``other``'s ids, affiliations and (fuller) name.

    The family part goes with the name kept, from the author whose name it is first; the other
    author's is taken when that one has none and it fits the name (``Author`` drops one that
    does not: "Vos" is not words of "Martijn Devos")."""
    name_from = primary
    if name_specificity(other.name) > name_specificity(primary.name) and names_compatible(primary.name, other.name):
        name_from = other
    family_from = next((author for author in (name_from, primary, other) if author.family), name_from)
    affiliations = list(primary.affiliations) + [a for a in other.affiliations if a not in primary.affiliations]
    return Author(
        name=name_from.name,
        orcid=primary.orcid or other.orcid,
        openalex_id=primary.openalex_id or other.openalex_id,
        affiliations=affiliations,
        family=family_from.family,
        particle=family_from.particle,
    )


def _same_initial_and_family(a: str, b: str) -> bool:
    """"Ron L. Diercks" / "Ronald L. Diercks": a nickname in the same slot of the same paper."""
    left, right = parse_name(a), parse_name(b)
    return bool(left.family and left.family == right.family and left.initials and left.initials == right.initials)


class _AuthorLookup:
    """Finds, for an author of one list, the same person in the other list (ids, position, name)."""

    def __init__(self, others: list[Author]) -> None:
        self.others = others
        self.used: set[int] = set()
        self.by_orcid = {author.orcid: j for j, author in reversed(list(enumerate(others))) if author.orcid}
        self.by_openalex = {a.openalex_id: j for j, a in reversed(list(enumerate(others))) if a.openalex_id}
        self.by_family: dict[str, list[int]] = {}
        for j, author in enumerate(others):
            self.by_family.setdefault(parse_name(author.name).family, []).append(j)

    def _fits(self, author: Author, j: int, *, same_slot: bool) -> bool:
        """One author of one paper in two lists: compatible names and no disagreeing ORCIDs.

        Different OpenAlex ids do not block (OpenAlex splits people across paper versions); in
        the very same slot a nickname ("Ron"/"Ronald", same family and initials) is accepted too.
        """
        other = self.others[j]
        if j in self.used or (author.orcid and other.orcid and author.orcid != other.orcid):
            return False
        if names_compatible(author.name, other.name):
            return True
        return same_slot and _same_initial_and_family(author.name, other.name)

    def partner(self, author: Author, position: int) -> int | None:
        """An agreeing id, else the same position, else the nearest compatible name; marks it used."""
        found: int | None = None
        for j in (self.by_orcid.get(author.orcid or ""), self.by_openalex.get(author.openalex_id or "")):
            if j is not None and j not in self.used and ids_agree(author, self.others[j]) is True:
                found = j
                break
        if found is None and position < len(self.others) and self._fits(author, position, same_slot=True):
            found = position
        if found is None:
            same_family = self.by_family.get(parse_name(author.name).family, [])
            for j in sorted(same_family, key=lambda j: abs(j - position)):
                if self._fits(author, j, same_slot=j == position):
                    found = j
                    break
        if found is not None:
            self.used.add(found)
        return found


def first_list_wins(a: list[Author], b: list[Author]) -> bool:
    """True when ``merge_authors`` keeps ``a``'s list (more authors, then more detail; ties: ``a``)."""
    return _author_info(a) >= _author_info(b)


def merge_authors(a: list[Author], b: list[Author]) -> list[Author]:
    """The author list with more information, each author enriched from the other list."""
    primary, other = (a, b) if first_list_wins(a, b) else (b, a)
    lookup = _AuthorLookup(other)
    merged: list[Author] = []
    for position, author in enumerate(primary):
        j = lookup.partner(author, position)
        merged.append(author if j is None else _enrich(author, other[j]))
    return merged


def _truncated(a: Paper, b: Paper) -> bool:
    """Whether the author list ``merge_authors`` keeps is cut: its own flag, or the other list
    says it was cut and the kept one is no longer (only a fuller list clears the flag)."""
    kept, other = (a, b) if first_list_wins(a.authors, b.authors) else (b, a)
    return kept.authors_truncated or (other.authors_truncated and len(kept.authors) <= len(other.authors))


ProvenanceKey = tuple[str, str, str]


def provenance_key(entry: Provenance) -> ProvenanceKey:
    """What makes two provenance entries one: the source, the id it uses and the file it was read
    from (one BibTeX key in two people's files is two entries, so that either file's later
    corrections find the record: ``ingest.pipeline._revises``)."""
    return (entry.source, entry.source_id or "", entry.file or "")


def merge_provenance(a: list[Provenance], b: list[Provenance], limit: int | None = None) -> list[Provenance]:
    """The entries of both, one per (source, source_id, file): fields united, latest retrieval date.
    An entry that names no file (stored before files were named) is one with the first entry of
    its source and id that names one: the same entry, read again since.

    At most ``limit`` (``MAX_PROVENANCE_ENTRIES``) are kept: every source keeps its latest entry
    (the last one merged), and the earliest entries fill the other places, in their order. So a
    reader sees where the record came from first, every source that describes it and how recent
    each one is. An entry dropped this way is folded into the latest entry of its source (its
    fields and retrieval date join that entry's): which source supplied which field, and so the
    field rules of later merges, stay exactly as if every entry had been kept. Only when more
    than ``limit`` sources describe one record (no real paper) are the later sources dropped.
    Entries are shared, not copied (nothing changes one in place).
    """
    filed: dict[tuple[str, str], ProvenanceKey] = {}
    for entry in chain(a, b):
        if entry.file and entry.source_id:
            filed.setdefault((entry.source, entry.source_id), provenance_key(entry))
    merged: dict[ProvenanceKey, Provenance] = {}
    for entry in chain(a, b):
        key = provenance_key(entry)
        if not entry.file and entry.source_id:
            key = filed.get((entry.source, entry.source_id), key)
        current = merged.get(key)
        if current is None:
            merged[key] = entry
        elif current is not entry:
            merged[key] = _united(current, entry)
    entries = list(merged.values())
    limit = MAX_PROVENANCE_ENTRIES if limit is None else limit
    return entries if len(entries) <= limit else _capped(entries, limit)


def _united(kept: Provenance, other: Provenance) -> Provenance:
    """``kept`` with ``other``'s fields added, the later of the two retrieval dates, and the file
    of whichever names one (entries of two files are never united; one that names no file is
    united with one that does: ``merge_provenance``)."""
    fields = list(kept.fields) + [f for f in other.fields if f not in kept.fields]
    retrieved = max(filter(None, [kept.retrieved, other.retrieved]), default=None)
    file = kept.file or other.file
    if fields == kept.fields and retrieved == kept.retrieved and file == kept.file:
        return kept
    return kept.model_copy(update={"fields": fields, "retrieved": retrieved, "file": file})


def _capped(entries: list[Provenance], limit: int) -> list[Provenance]:
    """``limit`` of ``entries``: each source's latest, then the earliest (see ``merge_provenance``)."""
    latest: dict[str, int] = {}
    for position, entry in enumerate(entries):
        latest[entry.source] = position
    keep = set(list(latest.values())[:limit])
    for position in range(len(entries)):
        if len(keep) >= limit:
            break
        keep.add(position)
    result = {position: entries[position] for position in sorted(keep)}
    for position, entry in enumerate(entries):
        heir = latest[entry.source]
        if position not in keep and heir in result:
            result[heir] = _united(result[heir], entry)
    return list(result.values())


def _union(a: list[str], b: list[str]) -> list[str]:
    return list(a) + [item for item in b if item not in a]


def _extra_fields(a: Paper, b: Paper) -> dict[str, str]:
    """Both records' extra fields; where both have one, the better-ranked source's value."""
    if not b.extra_fields or not a.extra_fields:
        return dict(a.extra_fields or b.extra_fields)
    first, second = (b, a) if _field_rank(b, "extra_fields") < _field_rank(a, "extra_fields") else (a, b)
    return {**second.extra_fields, **first.extra_fields}


def _open_access(a: bool | None, b: bool | None) -> bool | None:
    if a is None and b is None:
        return None
    return bool(a) or bool(b)


#: Every field of a record but its provenance: two records equal on these are one description.
_CONTENT_FIELDS = tuple(name for name in Paper.model_fields if name != "provenance")


def _same_content(a: Paper, b: Paper) -> bool:
    return all(getattr(a, name) == getattr(b, name) for name in _CONTENT_FIELDS)


def merge_papers(a: Paper, b: Paper) -> Paper:
    """One record from two records of the same paper (``a`` wins exact ties).

    When both say exactly the same thing (a repeated entry), every rule would keep that value:
    only the provenance is merged, without the field rules and a new validation."""
    a, b = _attributed(normalize_ids(a)), _attributed(normalize_ids(b))
    if _same_content(a, b):
        return a.model_copy(update={"provenance": merge_provenance(a.provenance, b.provenance)})
    return _merge_fields(a, b)


def _merge_fields(a: Paper, b: Paper) -> Paper:
    """``merge_papers`` by the field rules (``a`` and ``b`` normalised and attributed)."""
    published_side: Paper | None = None
    if is_preprint(a) != is_preprint(b) and not (a.doi and a.doi == b.doi):
        # two versions (preprint and article), not two descriptions of one DOI
        published_side = b if is_preprint(a) else a
    data: dict[str, Any] = {field: _choose(a, b, field, published_side) for field in _PRIORITY_FIELDS}
    arxiv_source = a if a.arxiv_id else b
    arxiv_id = a.arxiv_id or b.arxiv_id
    versions = [p.arxiv_version for p in (a, b) if p.arxiv_id == arxiv_id and p.arxiv_version]
    openalex_id: str | None
    if published_side is not None and published_side.openalex_id:
        openalex_id = published_side.openalex_id  # OpenAlex keeps preprint and article apart
    else:
        openalex_id = a.openalex_id or b.openalex_id
    citations = [count for count in (a.citation_count, b.citation_count) if count is not None]
    data.update(
        authors=merge_authors(a.authors, b.authors),
        authors_truncated=_truncated(a, b),
        abstract=_choose_abstract(a.abstract, b.abstract),
        published=_choose_published(a, b, published_side),
        arxiv_id=arxiv_id,
        arxiv_version=max(versions, key=_version_number) if versions else arxiv_source.arxiv_version,
        openalex_id=openalex_id,
        categories=_union(a.categories, b.categories),
        open_access=_open_access(a.open_access, b.open_access),
        citation_count=max(citations) if citations else None,
        extra_fields=_extra_fields(a, b),
        # the editors kept keep their family parts, whichever record gave them
        editor_families={**b.editor_families, **a.editor_families},
        provenance=merge_provenance(a.provenance, b.provenance),
    )
    return Paper.model_validate(data)


# Dedupe ----------------------------------------------------------------------------------------


def dedupe(papers: Iterable[Paper], *, on_capped: Callable[[Paper, int], None] | None = None) -> list[Paper]:
    """Fold records of the same paper into one, keeping first-appearance order.

    Candidates are found through shared ``blocking_keys`` (ids, title + first author), so the
    cost grows with the number of records, not their pairs; every candidate is confirmed with
    ``same_paper`` against the record merged so far, which keeps a chain of weak links from
    gluing two different papers together.

    ``on_capped(record, n)`` is called once for each record whose provenance was cut to
    ``MAX_PROVENANCE_ENTRIES`` while ``n`` distinct (source, source_id) entries described it.
    """
    merged: list[Paper | None] = []
    owners: dict[str, list[int]] = {}
    described: dict[int, set[ProvenanceKey]] = {}  # slots whose provenance reached the cap: every key seen

    def fold(slot: int, incoming: Paper, incoming_keys: set[ProvenanceKey] | None = None) -> None:
        current = merged[slot]
        assert current is not None
        result = merge_papers(current, incoming)
        merged[slot] = result
        if slot in described or len(result.provenance) >= MAX_PROVENANCE_ENTRIES:
            keys = described.get(slot) or {provenance_key(entry) for entry in current.provenance}
            keys.update(incoming_keys or (provenance_key(entry) for entry in incoming.provenance))
            described[slot] = keys

    for paper in papers:
        paper = normalize_ids(paper)
        candidates: list[int] = []
        paper_keys = blocking_keys(paper)
        for key in sorted(paper_keys):
            for slot in owners.get(key, []):
                if merged[slot] is not None and slot not in candidates:
                    candidates.append(slot)
        target: int | None = None
        for slot in sorted(candidates):
            current = merged[slot]
            if current is None:
                continue
            if target is None:
                if same_paper(current, paper):
                    fold(slot, paper)
                    target = slot
            elif same_paper(merged[target], current):  # type: ignore[arg-type]
                fold(target, current, described.pop(slot, None))
                merged[slot] = None
        if target is None:
            merged.append(paper)
            target = len(merged) - 1
        else:  # a merged record: its keys may differ from the paper's
            paper_keys = blocking_keys(merged[target])  # type: ignore[arg-type]
        for key in paper_keys:
            slots = owners.setdefault(key, [])
            if target not in slots:
                slots.append(target)
    if on_capped is not None:
        for slot, keys in described.items():
            record = merged[slot]
            if record is not None and len(keys) > len(record.provenance):
                on_capped(record, len(keys))
    return [paper for paper in merged if paper is not None]
