"""Ingests, removals, fetches and syncs: what each file, source and scholar gave.

Part of the public contracts of ``retrieval.results`` (import them from there).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, computed_field

from retrieval.results.validation import SkippedItem

if TYPE_CHECKING:
    from retrieval.errors import SourceError


EMPTY_FILE = "the file is empty"  # ``FileResult.problem`` of a file with nothing in it


@dataclass(frozen=True)
class FileResult:
    """What one file of an ingest yielded; ``problem`` says why it yielded no record."""

    path: str
    format: str | None  # None when the file could not be read in any format
    records: int  # papers parsed from it (before deduplication)
    skipped: int  # the report's skipped items that come from this file
    problem: str | None = None  # "the file is empty", "not in a format paperbot reads", ...


@dataclass
class IngestReport:
    """What one ingest did, id by id."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[SkippedItem] = field(default_factory=list)
    warnings: list[SkippedItem] = field(default_factory=list)  # kept records that lost a bad optional value
    merged_duplicates: int = 0  # incoming items folded into another item of the same batch
    files: list[FileResult] = field(default_factory=list)  # file ingests: one per given file
    # records earlier versions of the files made that the files no longer hold (an entry deleted
    # or renamed since: ``Library.note_entries_no_longer_in``), and those ``--prune`` took out or
    # kept without the entry (other sources describe them too)
    no_longer_in_files: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    pruned_kept: list[KeptAfterRemoval] = field(default_factory=list)

    def extend(self, other: IngestReport) -> None:
        self.added.extend(other.added)
        self.updated.extend(other.updated)
        self.unchanged.extend(other.unchanged)
        self.skipped.extend(other.skipped)
        self.warnings.extend(other.warnings)
        self.merged_duplicates += other.merged_duplicates
        self.files.extend(other.files)

    @property
    def total(self) -> int:
        return len(self.added) + len(self.updated) + len(self.unchanged)

    @property
    def nothing_read(self) -> bool:
        """No record came out of the given files: each was unreadable, empty or fully skipped."""
        return self.total == 0 and bool(self.files) and all(result.problem for result in self.files)

    def as_dict(self) -> dict[str, object]:
        return {
            "added": len(self.added),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "merged_duplicates": self.merged_duplicates,
            "skipped": [{"item": s.item, "reason": s.reason} for s in self.skipped],
            "warnings": [{"item": w.item, "reason": w.reason} for w in self.warnings],
            "files": [asdict(result) for result in self.files],
            "no_longer_in_files": list(self.no_longer_in_files),
            "pruned": list(self.pruned),
            "pruned_kept": [asdict(kept) for kept in self.pruned_kept],
        }


@dataclass(frozen=True)
class KeptAfterRemoval:
    """A record a removed file described that other sources describe too: kept without the
    file's provenance and ``fields_removed``, the fields only the file had supplied."""

    id: str
    title: str
    other_sources: list[str]  # "arxiv 2401.01234", "bibtex smith2020", ...
    fields_removed: list[str]


@dataclass
class RemovalReport:
    """What `paperbot remove --source` did (or, with ``dry_run``, would do), id by id.

    ``removed``: records every source of which was one of the files' entries. ``kept``: records
    an entry describes that other sources describe too (``retrieval.ingest.removal``).
    ``not_indexed``: entries that match no indexed record. ``files`` and ``skipped``: reading
    the files again, as an ingest reports it.
    """

    source: str  # what the user named: a file path, several, or "demo"
    dry_run: bool = False
    removed: list[str] = field(default_factory=list)
    kept: list[KeptAfterRemoval] = field(default_factory=list)
    not_indexed: int = 0
    files: list[FileResult] = field(default_factory=list)
    skipped: list[SkippedItem] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "dry_run": self.dry_run,
            "removed": list(self.removed),
            "kept": [asdict(kept) for kept in self.kept],
            "not_indexed": self.not_indexed,
            "files": [asdict(result) for result in self.files],
            "skipped": [{"item": s.item, "reason": s.reason} for s in self.skipped],
        }


@dataclass
class FetchResult:
    """What one `paperbot ingest arxiv|openalex|crossref` fetch did (``retrieval.ingest.fetchers``).

    ``report`` is the ingest of the works received, its ``skipped`` led by what the source could
    not deliver (unknown DOIs, unusable items); ``failure`` is the source's error when it failed
    part-way (the works received before it are indexed).
    """

    source: str  # "arxiv", "openalex", "crossref"
    label: str  # "arXiv", "OpenAlex", "Crossref"
    what: str  # "arXiv papers of 'Adrian Del Maestro'"
    fetched: int
    report: IngestReport
    notes: list[str] = field(default_factory=list)  # e.g. results left out by the name filter
    failure: SourceError | None = None


class SourceFailure(BaseModel):
    """A source that failed for one scholar; works it delivered before failing were kept."""

    source: str
    message: str
    fetched_before_failure: int = 0


class ScholarSync(BaseModel):
    """What one scholar's sync did."""

    name: str
    new: list[str] = Field(default_factory=list)  # ids of papers not in the index before this sync
    updated: list[str] = Field(default_factory=list)  # existing records that gained information
    unchanged: int = 0
    fetched: dict[str, int] = Field(default_factory=dict)  # works received per source asked
    completed: list[str] = Field(default_factory=list)  # sources whose sync time was advanced
    errors: list[SourceFailure] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # skipped sources, ambiguous profiles, caps


class SyncReport(BaseModel):
    """The outcome of one ``sync_roster`` run (``paperbot sync --json`` prints this)."""

    started_at: str
    finished_at: str | None = None
    scholars: list[ScholarSync] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def new_paper_ids(self) -> list[str]:
        """Every paper that is new in this sync, once, in the order found."""
        return list(dict.fromkeys(pid for scholar in self.scholars for pid in scholar.new))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def updated_paper_ids(self) -> list[str]:
        new = set(self.new_paper_ids)
        return [pid for pid in dict.fromkeys(p for s in self.scholars for p in s.updated) if pid not in new]

    @property
    def errors(self) -> list[tuple[str, SourceFailure]]:
        """(scholar name, failure) for every source that failed."""
        return [(scholar.name, failure) for scholar in self.scholars for failure in scholar.errors]

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class SyncEvent:
    """Progress of a sync, for a progress bar or log lines.

    ``stage``: "start" (a scholar begins), "source" (a source delivered ``count`` works),
    "error" (a source failed, ``message``), "note" (``message``), "done" (scholar committed).
    """

    scholar: str
    position: int  # 1-based
    total: int
    stage: str
    source: str | None = None
    count: int = 0
    message: str = ""
