"""Ingest: parsed or fetched papers -> dedupe -> merge with what is indexed -> index.

One ingest is a sequence of small committed batches, so an interrupted run keeps every batch
it finished and a re-run only does the rest (unchanged records are detected by content hash
and never re-embedded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.errors import ParseError
from retrieval.index import PaperIndex
from retrieval.merge import dedupe, merge_papers, same_paper
from retrieval.records import Paper
from retrieval.sources.base import SkippedItem
from retrieval.sources.files import parse_file

Progress = Callable[[int, int], None]
BATCH_SIZE = 256


@dataclass
class IngestReport:
    """What one ingest did, id by id."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[SkippedItem] = field(default_factory=list)
    warnings: list[SkippedItem] = field(default_factory=list)  # kept records that lost a bad optional value
    merged_duplicates: int = 0  # incoming items folded into another item of the same batch

    def extend(self, other: "IngestReport") -> None:
        self.added.extend(other.added)
        self.updated.extend(other.updated)
        self.unchanged.extend(other.unchanged)
        self.skipped.extend(other.skipped)
        self.warnings.extend(other.warnings)
        self.merged_duplicates += other.merged_duplicates

    @property
    def total(self) -> int:
        return len(self.added) + len(self.updated) + len(self.unchanged)

    def as_dict(self) -> dict[str, object]:
        return {
            "added": len(self.added),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "merged_duplicates": self.merged_duplicates,
            "skipped": [{"item": s.item, "reason": s.reason} for s in self.skipped],
            "warnings": [{"item": w.item, "reason": w.reason} for w in self.warnings],
        }


def _merge_with_index(index: PaperIndex, paper: Paper) -> tuple[Paper, list[str]]:
    """The paper merged with every indexed record it matches, and the ids those records had."""
    merged = paper
    previous_ids: list[str] = []
    for existing in index.find_matches(paper):
        if not same_paper(existing, merged):  # shared fingerprint but conflicting DOIs, say
            continue
        merged = merge_papers(existing, merged)
        previous_ids.append(existing.id)
    return merged, previous_ids


def _fold_equal_ids(papers: list[Paper]) -> list[Paper]:
    """Merge records that ``dedupe`` kept apart but that share a canonical id.

    A hash id (title + year + first family name) is the record's key in the store, so two
    items with that key *are* one record there ("Steve Benson" and "Steven J. Benson" citing
    the same 2001 paper). Folding them here, once, keeps a re-ingest from flip-flopping
    between the two versions.
    """
    by_id: dict[str, Paper] = {}
    for paper in papers:
        key = paper.id
        by_id[key] = merge_papers(by_id[key], paper) if key in by_id else paper
    return list(by_id.values())


def ingest_papers(
    index: PaperIndex,
    papers: Iterable[Paper],
    *,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
) -> IngestReport:
    """Dedupe ``papers``, merge each with its indexed matches, and upsert in committed batches."""
    incoming = list(papers)
    unique = _fold_equal_ids(dedupe(incoming))
    report = IngestReport(merged_duplicates=len(incoming) - len(unique))
    total = len(unique)
    done = 0
    if progress:
        progress(0, total)
    for start in range(0, total, batch_size):
        batch = unique[start : start + batch_size]
        final: dict[str, Paper] = {}
        replaces: dict[str, str] = {}
        stale: list[str] = []
        for paper in batch:
            merged, previous_ids = _merge_with_index(index, paper)
            if merged.id in final:  # two batch items matched the same indexed record
                merged = merge_papers(final[merged.id], merged)
            final[merged.id] = merged
            old_ids = [old for old in previous_ids if old != merged.id]
            if old_ids:
                replaces[merged.id] = old_ids[0]
                stale.extend(old_ids[1:])
        outcome = index.upsert(list(final.values()), replaces=replaces)
        if stale:
            index.delete(stale)
        report.added.extend(outcome.added)
        report.updated.extend(outcome.updated)
        report.unchanged.extend(outcome.unchanged)
        done += len(batch)
        if progress:
            progress(done, total)
    return report


def ingest_files(
    index: PaperIndex,
    paths: Sequence[Path],
    *,
    progress: Progress | None = None,
    on_file: Callable[[Path, int], None] | None = None,
) -> IngestReport:
    """Parse every file (format detected from content) and ingest what parsed.

    A file that cannot be read at all is reported as one skipped item; the others go on.
    """
    report = IngestReport()
    papers: list[Paper] = []
    for path in paths:
        try:
            outcome = parse_file(path)
        except ParseError as exc:
            report.skipped.append(SkippedItem(item=str(path), reason=exc.user_message))
            continue
        report.skipped.extend(
            SkippedItem(item=f"{path.name}: {item.item}", reason=item.reason) for item in outcome.skipped
        )
        report.warnings.extend(
            SkippedItem(item=f"{path.name}: {item.item}", reason=item.reason) for item in outcome.warnings
        )
        papers.extend(outcome.papers)
        if on_file:
            on_file(path, len(outcome.papers))
    report.extend(ingest_papers(index, papers, progress=progress))
    return report
