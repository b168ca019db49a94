"""Take a file's records back out of the index (`paperbot remove --source FILE|demo`).

The index does not remember which file a record came from, but a record remembers which
sources described it (``Paper.provenance``: source name and that source's id). So the file is
read again, each of its entries is matched with the indexed records it became (same id, DOI,
arXiv id, fingerprint or title, confirmed by ``merge.same_paper``), and a matched record is
removed only when every source that described it is one of that entry's own sources. A
record that something else also described (a fetch from arXiv, another file's entry with its
own key) is kept, without the file's provenance entries and without the fields only they
supplied (``Provenance.fields``); a field both supplied keeps its merged value. Removing the
other source later then removes the record.

Two files' entries with the same source and the same key (one BibTeX key in two files) cannot
be told apart: removing either file removes such a record.

Entries of the file that match no indexed record (the file changed since it was ingested,
or its records were removed already) are counted, not guessed at.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def _key(item: Provenance) -> tuple[str, str]:
    return item.source, item.source_id or ""


def _describe(item: Provenance) -> str:
    return f"{item.source} {item.source_id}" if item.source_id else item.source


def plan_removal(index: PaperIndex, entries: Sequence[Paper]) -> RemovalPlan:
    """Which indexed records the file's ``entries`` (as parsed again) account for entirely.

    Reads the index only; ``apply`` is the caller's (``Assistant.library.remove_sources``), under the
    writer lock. A record several entries match is planned once.
    """
    plan = RemovalPlan()
    decided: set[str] = set()
    own_sources: dict[str, set[tuple[str, str]]] = {}
    matched_by: dict[str, Paper] = {}
    for entry in entries:
        matches = [record for record in index.find_matches(entry) if same_paper(record, entry)]
        if not matches:
            plan.not_indexed += 1
            continue
        for record in matches:
            own_sources.setdefault(record.id, set()).update(_key(item) for item in entry.provenance)
            matched_by.setdefault(record.id, record)
    for record_id, record in matched_by.items():
        if record_id in decided:
            continue
        decided.add(record_id)
        others = [item for item in record.provenance if _key(item) not in own_sources[record_id]]
        if others:
            described = list(dict.fromkeys(_describe(item) for item in others))
            stays, cleared = without_sources(record, own_sources[record_id])
            plan.kept.append(KeptRecord(record_id, record.title, described, stays, cleared))
        else:
            plan.remove.append(record_id)
    return plan


def without_sources(record: Paper, gone: set[tuple[str, str]]) -> tuple[Paper, list[str]]:
    """``record`` without the provenance entries keyed in ``gone`` (source, source id) and
    without the optional fields only those entries supplied; and the names of those fields.

    When a remaining entry does not list its fields (records stored before they were listed),
    which fields it supplied is unknown and none is cleared.
    """
    remaining = [item for item in record.provenance if _key(item) not in gone]
    if any(not item.fields for item in remaining):
        return record.model_copy(update={"provenance": remaining}), []
    still_supplied = {name for item in remaining for name in item.fields}
    supplied_by_gone = {name for item in record.provenance if _key(item) in gone for name in item.fields}
    cleared = sorted(
        name for name in supplied_by_gone - still_supplied
        if name in Paper.model_fields and not Paper.model_fields[name].is_required()
    )
    reset = {name: Paper.model_fields[name].get_default(call_default_factory=True) for name in cleared}
    return record.model_copy(update={**reset, "provenance": remaining}), cleared
