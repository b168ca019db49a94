"""Records put into the index and taken out again (``Assistant.library``): files and fetched
records ingested, the records of files removed, and the marks that say which file was ingested.

Every write to the records here holds the data dir's writer lock (``Installation.writing``:
``ingest_files``, ``ingest_papers``, ``remove_sources``) from before it first touches the index
until it is done, so two processes never merge into the same records at once. A ``mark`` is one
key of the record store's metadata that says which file was ingested (``paperbot demo``'s
sample); it is set or deleted under the same lock as the write it marks, so a removal can never
fall between an ingest and its mark and leave a mark of records that are gone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.assistant.installation import Installation
from retrieval.records.paper import Paper
from retrieval.results import IngestReport, KeptAfterRemoval, RemovalReport

if TYPE_CHECKING:
    from retrieval.ingest.pipeline import Progress
    from retrieval.ingest.removal import RemovalPlan


def _digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class Library:
    """Ingest and removal for one installation, and the marks of files ingested."""

    def __init__(self, installation: Installation) -> None:
        self._installation = installation

    def ingest_files(
        self, paths: Sequence[Path], *, progress: Progress | None = None, fmt: str | None = None,
        mark: str | None = None, prune: bool = False,
    ) -> IngestReport:
        """Index the files (each in ``fmt``, else its detected format); see ``retrieval.ingest.pipeline``.

        ``mark``: record under that key that the one file of ``paths``, as it was read, is indexed
        (``ingested_before``), in the same locked write, once its records are in. The report lists
        the records earlier versions of the files made that they no longer hold, and ``prune``
        takes them out in the same locked write (``note_entries_no_longer_in``)."""
        from retrieval.ingest.pipeline import ingest_papers, read_files

        if mark is not None and len(paths) != 1:
            raise ValueError("a mark records one file")
        # the file's digest before it is read: a change while it is read re-ingests it next time
        marking = (mark, _digest(paths[0])) if mark is not None else None
        papers, report = read_files(paths, fmt=fmt)
        if papers:  # nothing read: the index (and its vector store) is not even opened
            with self._installation.writing("ingest"):
                index = self._installation.index
                report.extend(ingest_papers(index, papers, progress=progress))
                plan = self._entries_no_longer_in(report)
                if prune and plan is not None:
                    if plan.remove:
                        index.delete(plan.remove)
                    if plan.kept:
                        index.upsert(plan.kept_records, replaces=plan.replaces)
                    _note_pruned(report, plan)
                if marking is not None:
                    index.store.set_meta(*marking)
        return report

    def ingest_papers(self, papers: Sequence[Paper], *, progress: Progress | None = None) -> IngestReport:
        """Merge fetched records (``paperbot ingest arxiv|openalex|crossref``) into the index."""
        from retrieval.ingest.pipeline import ingest_papers

        with self._installation.writing("ingest"):
            return ingest_papers(self._installation.index, papers, progress=progress)

    def remove_sources(
        self, paths: Sequence[Path], *, label: str | None = None, fmt: str | None = None, dry_run: bool = False,
        forget: str | None = None,
    ) -> RemovalReport:
        """Take the records the files were ingested into back out of the index.

        The records an entry of the files made (the file each names) and those the files' entries,
        read again, match (``retrieval.ingest.removal``): records only the files' entries describe
        are deleted; records other sources describe too are kept without the files' provenance
        and the fields only they supplied, and listed. A file that no longer exists is not read;
        the records that name it are still found. ``dry_run``: report the same without changing
        anything. ``label`` names the source in the report (default: the paths). ``forget``: the
        mark (``ingest_files(mark=)``) of the file removed, deleted in the same locked write.
        """
        from retrieval.ingest.pipeline import read_files
        from retrieval.ingest.removal import plan_removal

        entries, read = read_files([path for path in paths if path.exists()], fmt=fmt)
        report = RemovalReport(source=label or ", ".join(str(path) for path in paths), dry_run=dry_run,
                               files=read.files, skipped=read.skipped)
        files = [str(path.resolve()) for path in paths]
        index = self._installation.index
        if dry_run:
            plan = plan_removal(index, entries, files)
        else:
            with self._installation.writing("remove"):  # planned under the lock: no writer changes it in between
                plan = plan_removal(index, entries, files)
                if plan.remove:
                    index.delete(plan.remove)
                if plan.kept:
                    index.upsert(plan.kept_records, replaces=plan.replaces)
                if forget is not None:
                    index.store.delete_meta(forget)
        report.removed = plan.remove
        report.kept = _kept(plan)
        report.not_indexed = plan.not_indexed
        return report

    def note_entries_no_longer_in(self, report: IngestReport, *, prune: bool = False) -> None:
        """After an ingest of files that ran elsewhere (``JobService.ingest_files``' workers), what
        ``ingest_files`` does after its own: list in ``report`` the records that earlier versions of
        the files made and that the files no longer hold, and with ``prune`` take them out, under
        the writer lock (``_entries_no_longer_in``)."""
        if not prune:
            self._entries_no_longer_in(report)
            return
        with self._installation.writing("remove"):  # planned under the lock: no writer changes it in between
            plan = self._entries_no_longer_in(report)
            if plan is not None:
                index = self._installation.index
                if plan.remove:
                    index.delete(plan.remove)
                if plan.kept:
                    index.upsert(plan.kept_records, replaces=plan.replaces)
                _note_pruned(report, plan)

    def _entries_no_longer_in(self, report: IngestReport) -> RemovalPlan | None:
        """The plan that takes out the records an entry deleted or renamed since made
        (``retrieval.ingest.removal.plan_no_longer_in``: as ``remove_sources`` would, those other
        sources describe too kept without what the entry supplied), their ids listed in
        ``report.no_longer_in_files``; None when no file was read whole (records, and no entry
        skipped): an entry that could not be read this time takes nothing out. Reads only."""
        from retrieval.ingest.removal import plan_no_longer_in

        whole = [str(Path(result.path).resolve()) for result in report.files
                 if result.records and not result.skipped and not result.problem]
        if not whole:
            return None
        plan = plan_no_longer_in(self._installation.index, whole, {*report.added, *report.updated, *report.unchanged})
        report.no_longer_in_files = plan.all_ids
        return plan

    def records_naming(self, paths: Sequence[Path]) -> dict[Path, int]:
        """For each of ``paths``, how many indexed records have an entry read from that file
        (``Provenance.file``): what ``remove_sources`` finds of a file that no longer exists."""
        files = {path: str(path.resolve()) for path in paths}
        counts = self._installation.index.store.count_made_from_files(list(files.values()))
        return {path: counts.get(file, 0) for path, file in files.items()}

    def ingested_before(self, path: Path, marker: str) -> bool:
        """Whether this very file (by content) was indexed and recorded under ``marker`` (``ingest_files(mark=)``)."""
        return self._installation.index.store.get_meta(marker) == _digest(path)

    def holds_marked_file(self, marker: str) -> bool:
        """Whether some version of a file was recorded under ``marker`` here; opens nothing but
        the record store, and creates none when the data dir has no index yet."""
        if (index := self._installation.opened_index) is not None:
            return index.store.get_meta(marker) is not None
        settings = self._installation.settings
        if settings.database_url is None and not settings.database_path.exists():
            return False
        from retrieval.storage.records import RecordStore

        store = RecordStore.open(settings)  # the record store alone: no vector index opened
        try:
            return store.get_meta(marker) is not None
        finally:
            store.close()


def _note_pruned(report: IngestReport, plan: RemovalPlan) -> None:
    report.pruned = plan.remove
    report.pruned_kept = _kept(plan)


def _kept(plan: RemovalPlan) -> list[KeptAfterRemoval]:
    return [KeptAfterRemoval(k.record.id, k.title, k.other_sources, k.fields_removed) for k in plan.kept]
