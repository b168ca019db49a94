"""Take a file's records back out of the index (`paperbot remove --source FILE|demo`).

A record remembers which sources described it (``Paper.provenance``: source name, that source's
id and, for an entry read from a file since paperbot names them, the file's absolute path). A
record is removed only when every entry that describes it is one of the file's; a record that
something else also described (a fetch from arXiv, another file's entry) is kept, without the
file's entries and without the fields only they supplied (``Provenance.fields``); a field both
supplied keeps its merged value. Removing the other source later then removes the record.

The file's entries are found two ways:

- **by the file they name** (``RecordStore.made_from_files``): every record an entry of this file
  made, whatever the file says now (an entry since corrected, deleted, or given to another paper),
  and even when the file itself is gone;
- **by reading the file again**, for entries stored before files were named: each of its entries
  is matched with the indexed records it became (same id, DOI, arXiv id, fingerprint or title,
  confirmed by ``merge.same_paper``). Such an entry names no file, so it is the file's when its
  source and key are; two files' entries with one key then cannot be told apart, and removing
  either file removes such a record (entries that name their files are told apart).

Entries of the file that match no indexed record (the file changed since it was ingested,
or its records were removed already) are counted, not guessed at.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from retrieval.records.merge import same_paper
from retrieval.records.paper import Paper, Provenance

if TYPE_CHECKING:
    from retrieval.index.paper_index import PaperIndex


@dataclass(frozen=True)
class KeptRecord:
    """An indexed record one of the file's entries describes, kept because other sources do too."""

    id: str
    title: str
    other_sources: list[str]  # "arxiv 2401.01234", "bibtex smith2020", ...
    record: Paper  # what stays: the file's provenance and the fields only it supplied taken out
    fields_removed: list[str]


@dataclass
class RemovalPlan:
    """What removing a file's records does: the ids to delete, what stays and why."""

    remove: list[str] = field(default_factory=list)
    kept: list[KeptRecord] = field(default_factory=list)
    not_indexed: int = 0  # entries of the file that match no indexed record

    @property
    def kept_records(self) -> list[Paper]:
        """What stays of the kept records (to upsert under ``replaces``)."""
        return [kept.record for kept in self.kept]

    @property
    def replaces(self) -> dict[str, str]:
        """The kept records' new ids (an id can change with the fields taken out) to their old ones."""
        return {kept.record.id: kept.id for kept in self.kept}

    @property
    def all_ids(self) -> list[str]:
        """Every record the plan touches, removed or kept, in the plan's order."""
        return [*self.remove, *(kept.id for kept in self.kept)]


EntryKey = tuple[str, str, str]  # (source, source id, file): "" where a part is absent


def _key(item: Provenance) -> EntryKey:
    return item.source, item.source_id or "", item.file or ""


def _is_one_of(item: Provenance, gone: set[EntryKey]) -> bool:
    """Whether the indexed entry ``item`` is one of the entries ``gone``: the same source, id and
    file, or the same source and id where either names no file (stored before files were named)."""
    source, key, file = _key(item)
    if (source, key, file) in gone:
        return True
    return any(other[:2] == (source, key) and not (file and other[2]) for other in gone)


def _describe(item: Provenance) -> str:
    return f"{item.source} {item.source_id}" if item.source_id else item.source


def plan_removal(index: PaperIndex, entries: Sequence[Paper], files: Sequence[str] = ()) -> RemovalPlan:
    """Which indexed records the files account for: those an entry naming one of ``files`` (their
    absolute paths) made, and those the files' ``entries`` (as parsed again) match.

    Reads the index only; ``apply`` is the caller's (``Assistant.library.remove_sources``), under the
    writer lock. A record several entries match is planned once.
    """
    plan = RemovalPlan()
    own_sources: dict[str, set[EntryKey]] = {}
    matched_by: dict[str, Paper] = {}
    named = set(files)
    for record in index.store.made_from_files(sorted(named)) if named else []:
        own_sources.setdefault(record.id, set()).update(_key(item) for item in record.provenance if item.file in named)
        matched_by.setdefault(record.id, record)
    for entry in entries:
        keys = {_key(item) for item in entry.provenance}
        matches = [record for record in index.find_matches(entry)
                   if same_paper(record, entry) or any(_key(item) in keys for item in record.provenance if item.file)]
        if not matches:
            plan.not_indexed += 1
            continue
        for record in matches:
            own_sources.setdefault(record.id, set()).update(keys)
            matched_by.setdefault(record.id, record)
    for record_id, record in matched_by.items():
        _decide(plan, record_id, record, own_sources[record_id])
    return plan


def _decide(plan: RemovalPlan, record_id: str, record: Paper, gone: set[EntryKey]) -> None:
    """Plan ``record`` without the entries ``gone``: removed when nothing else describes it, else
    kept without them (and the fields only they supplied)."""
    others = [item for item in record.provenance if not _is_one_of(item, gone)]
    if others:
        described = list(dict.fromkeys(_describe(item) for item in others))
        stays, cleared = without_sources(record, gone)
        plan.kept.append(KeptRecord(record_id, record.title, described, stays, cleared))
    else:
        plan.remove.append(record_id)


def plan_no_longer_in(index: PaperIndex, files: Sequence[str], current: Collection[str]) -> RemovalPlan:
    """What earlier versions of ``files`` (absolute paths, each just ingested whole: every entry
    read) made that the files no longer hold; ``current`` holds the ids that ingest added, updated
    or found unchanged.

    Every entry of such a file went into one of the ``current`` records, so a record that names
    the file through an entry (``Provenance.file``) and is not among them was made by an entry the
    file no longer has: deleted, or renamed and now another paper's. Its entries of the file are
    planned out as ``plan_removal`` plans them. Reads the index only.
    """
    gone: dict[str, set[EntryKey]] = {}
    for paper_id, source, key, file in index.store.file_entry_rows(files):
        if paper_id not in current:
            gone.setdefault(paper_id, set()).add((source, key, file))
    plan = RemovalPlan()
    for paper_id, record in index.get_many(sorted(gone)).items():
        _decide(plan, paper_id, record, gone[paper_id])
    return plan


def without_sources(record: Paper, gone: set[EntryKey]) -> tuple[Paper, list[str]]:
    """``record`` without the provenance entries ``gone`` names (source, source id, file: see
    ``_is_one_of``) and without the optional fields only those entries supplied; and the names
    of those fields.

    When a remaining entry does not list its fields (records stored before they were listed),
    which fields it supplied is unknown and none is cleared.
    """
    remaining = [item for item in record.provenance if not _is_one_of(item, gone)]
    if any(not item.fields for item in remaining):
        return record.model_copy(update={"provenance": remaining}), []
    still_supplied = {name for item in remaining for name in item.fields}
    supplied_by_gone = {name for item in record.provenance if _is_one_of(item, gone) for name in item.fields}
    cleared = sorted(
        name for name in supplied_by_gone - still_supplied
        if name in Paper.model_fields and not Paper.model_fields[name].is_required()
    )
    reset = {name: Paper.model_fields[name].get_default(call_default_factory=True) for name in cleared}
    return record.model_copy(update={**reset, "provenance": remaining}), cleared
