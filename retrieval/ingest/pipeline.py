"""Ingest: parsed or fetched papers -> dedupe -> merge with what is indexed -> index.

One ingest is a sequence of small committed batches, so an interrupted run keeps every batch
it finished and a re-run only does the rest (unchanged records are detected by content hash
and never re-embedded).

Nothing is dropped silently: a file that cannot be read, holds nothing (empty, only comments)
or whose every entry is broken is a skipped item with the reason, and ``IngestReport.files``
says per file what it yielded and, when it yielded nothing, why (``FileResult.problem``).

A bad file never stops the others: whatever goes wrong while one file is read, even a bug of
ours, makes that file one skipped item (a bug's traceback is logged under a reference id the
reason quotes) and the next file is read. Only an interrupt (Ctrl-C) or an exit stops the
command. A record that so many entries describe that its provenance is cut
(``merge.MAX_PROVENANCE_ENTRIES``) is reported once, as a warning.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.errors import InputError, ParseError, PartlySavedError, StorageError
from retrieval.gc_pause import older_objects_frozen
from retrieval.records.merge import (
    MAX_PROVENANCE_ENTRIES,
    dedupe,
    merge_papers,
    same_paper,
    shared_ids,
    titles_conflict,
)
from retrieval.records.paper import Paper, title_key
from retrieval.results import EMPTY_FILE, FileResult, IngestReport, SkippedItem
from retrieval.sources.files.detect import FORMATS, parse_file, read_text

if TYPE_CHECKING:
    from retrieval.index.paper_index import PaperIndex  # the caller's: reading files needs no vector store

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
BATCH_SIZE = 256


def _label(paper: Paper) -> str:
    origin = paper.provenance[0] if paper.provenance else None
    where = f"{origin.source} {origin.source_id!r}" if origin and origin.source_id else (origin.source if origin else "")
    return f"{where}: {paper.title[:80]!r}" if where else repr(paper.title[:80])


def _without_ids(paper: Paper, other: Paper, names: list[str], warnings: list[SkippedItem]) -> Paper:
    """``paper`` without the ids it shares with ``other``, a different paper (``titles_conflict``):
    a copy-paste slip in a file must not merge two papers or overwrite one with the other."""
    shown = ", ".join(f"{name.replace('_id', '')} {getattr(paper, name)}" for name in names)
    warnings.append(SkippedItem(_label(paper), f"has the {shown} of another paper, {other.title[:80]!r}; "
                                "kept as a record of its own without that id (check the file)"))
    update: dict[str, object] = dict.fromkeys(names)
    if "arxiv_id" in names:
        update["arxiv_version"] = None
    return paper.model_copy(update=update)


def _merge_with_index(index: PaperIndex, paper: Paper, matches: list[Paper],
                      warnings: list[SkippedItem]) -> tuple[Paper, list[str]]:
    """The paper merged with every indexed record it matches (``matches``: its
    ``find_matches``), and the ids those records had.

    An indexed record with the paper's own id that is another paper (``titles_conflict``) keeps
    the id; the paper loses it, so that the upsert cannot overwrite that record."""
    for existing in matches:
        if existing.id == paper.id and not same_paper(existing, paper) and (names := shared_ids(existing, paper)):
            paper = _without_ids(paper, existing, names, warnings)
            matches = index.find_matches(paper)
            break
    merged = paper
    previous_ids: list[str] = []
    for existing in matches:
        if _revises(paper, existing):  # the same entry again: what it says now wins over what it said
            merged = merge_papers(merged, existing)
        elif same_paper(existing, merged):  # (not: a shared fingerprint but conflicting DOIs, say)
            merged = merge_papers(existing, merged)
        else:
            continue
        previous_ids.append(existing.id)
    return merged, previous_ids


def _revises(paper: Paper, existing: Paper) -> bool:
    """True when ``paper`` is a later version of an entry that ``existing`` was made from: a
    source id they share (the same BibTeX key, CSL-JSON id, arXiv id) and the same title, whatever
    else changed (a corrected year, venue or DOI); or the same entry of the same file
    (``Provenance.file``: file, source and key) and titles that can name one paper
    (``merge.titles_conflict``), so that a corrected title revises the record too. Merged with
    ``paper`` first, so a correction in a re-ingested file replaces what the file said before, where
    the field rules would otherwise keep the older value (same source, same rank); what only
    ``existing`` has (another source's abstract) stays. Without the file, the same title is required
    because two files may use one key for two papers; with it, a key given to another paper since
    (titles sharing under a quarter of their words) is not taken for a correction."""
    own = {(item.source, item.source_id, item.file) for item in paper.provenance if item.source_id}
    keys = {(source, key) for source, key, _file in own}
    shared = [item for item in existing.provenance if item.source_id and (item.source, item.source_id) in keys]
    if not shared:
        return False
    if title_key(paper.title) == title_key(existing.title):
        return True
    same_entry = any(item.file and (item.source, item.source_id, item.file) in own for item in shared)
    return same_entry and not titles_conflict(paper, existing)


def _fold_equal_ids(papers: list[Paper], warnings: list[SkippedItem]) -> list[Paper]:
    """Merge records that ``dedupe`` kept apart but that share a canonical id.

    A hash id (title + year + first family name) is the record's key in the store, so two
    items with that key *are* one record there ("Steve Benson" and "Steven J. Benson" citing
    the same 2001 paper). Folding them here, once, keeps a re-ingest from flip-flopping
    between the two versions. Two different papers that a file gave one DOI or arXiv id
    (``titles_conflict``) are not folded: the first keeps the id, the later one loses it.
    """
    by_id: dict[str, Paper] = {}
    for paper in papers:
        key = paper.id
        while key in by_id and not same_paper(by_id[key], paper) and (names := shared_ids(by_id[key], paper)):
            paper = _without_ids(paper, by_id[key], names, warnings)
            key = paper.id
        by_id[key] = merge_papers(by_id[key], paper) if key in by_id else paper
    return list(by_id.values())


def prepare_papers(papers: Iterable[Paper]) -> tuple[list[Paper], IngestReport]:
    """The first step of every ingest: ``papers`` deduped and folded by id (one item per paper),
    and the report so far (duplicates merged, warnings). Touches no index."""
    incoming = list(papers)
    warnings: list[SkippedItem] = []

    def capped(record: Paper, entries: int) -> None:
        warnings.append(SkippedItem(_label(record), f"{entries:,} source entries describe this paper (one entry "
                                    f"repeated in a file?); its record keeps {MAX_PROVENANCE_ENTRIES}: the first "
                                    "ones and the latest of each source"))

    unique = _fold_equal_ids(dedupe(incoming, on_capped=capped), warnings)
    return unique, IngestReport(merged_duplicates=len(incoming) - len(unique), warnings=warnings)


@older_objects_frozen()
def ingest_papers(
    index: PaperIndex,
    papers: Iterable[Paper],
    *,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
) -> IngestReport:
    """Dedupe ``papers``, merge each with its indexed matches, and upsert in committed batches."""
    unique, report = prepare_papers(papers)
    if progress:
        progress(0, len(unique))
    with index.encoding_ahead(unique):
        write_batches(index, unique, report, progress=progress, batch_size=batch_size)
    return report


BatchGuard = Callable[[], AbstractContextManager[object]]


def write_batches(index: PaperIndex, unique: Sequence[Paper], report: IngestReport, *,
                  progress: Progress | None = None, batch_size: int = BATCH_SIZE,
                  guard: BatchGuard | None = None) -> None:
    """Merge each batch of ``unique`` (``prepare_papers``' items) with its indexed matches and
    upsert it: one committed write per batch, its counts added to ``report``.

    ``guard`` is entered around each batch's read-merge-write (the writer lock of a scaled-out
    ingest, ``retrieval.jobs``: held per batch, so that other workers encode meanwhile); by
    default the caller holds whatever lock it needs around the whole call. Every batch reads the
    index as the previous writer left it, so the records merge as they would in one process."""
    total = len(unique)
    done = 0
    for start in range(0, total, batch_size):
        batch = unique[start : start + batch_size]
        with guard() if guard is not None else nullcontext():
            _write_batch(index, batch, report, progress, done, total)
        done += len(batch)
        if progress:
            progress(done, total)


def _write_batch(index: PaperIndex, batch: Sequence[Paper], report: IngestReport,
                 progress: Progress | None, done: int, total: int) -> None:
    """Merge one batch with its indexed matches and upsert it (one committed write)."""
    final: dict[str, Paper] = {}
    replaces: dict[str, str] = {}
    stale: list[str] = []
    for paper, matches in zip(batch, index.find_matches_many(batch), strict=True):
        merged, previous_ids = _merge_with_index(index, paper, matches, report.warnings)
        if merged.id in final:  # two batch items matched the same indexed record
            merged = merge_papers(final[merged.id], merged)
        final[merged.id] = merged
        old_ids = [old for old in previous_ids if old != merged.id]
        if old_ids:
            replaces[merged.id] = old_ids[0]
            stale.extend(old_ids[1:])
    try:
        outcome = index.upsert(list(final.values()), replaces=replaces,
                               progress=_within_batch(progress, done, len(batch), total) if progress else None)
        if stale:
            index.delete(stale)
    except StorageError as exc:  # a full disk after some committed batches: say what was saved
        if not done or isinstance(exc, PartlySavedError):
            raise
        raise PartlySavedError(exc, saved=done, total=total) from exc
    # a record whose id changed (a corrected year, a DOI that appeared) replaced its old version:
    # for the reader of the report it was updated, not added beside it
    report.added.extend(paper_id for paper_id in outcome.added if paper_id not in replaces)
    report.updated.extend([*outcome.updated, *(paper_id for paper_id in outcome.added if paper_id in replaces)])
    report.unchanged.extend(outcome.unchanged)


def _within_batch(progress: Progress, before: int, size: int, total: int) -> Progress:
    """``progress`` for the upsert of one batch of ``size`` records after ``before`` others: the
    upsert counts the batch's merged records (at most ``size``) as it encodes them, a few dozen at
    a time; they are reported as records of the whole ingest, so that a slow batch shows movement."""
    return lambda done, _records: progress(before + min(done, size), total)


_BIBTEX_BLOCK = re.compile(r"@\s*([A-Za-z][\w-]*)\s*[{(]")
_NOTHING_IN = {
    "ris": "no RIS records: no line starts with 'TY  - '",
    "oai-dc": "no <record> elements",
    "csl-json": "no CSL-JSON items",
    "jsonl": "no records",
    "arxiv-snapshot": "no records",
}


def _text_of(path: Path) -> str | None:
    """The file's text, read as ``parse_file`` reads it; None when it cannot be read."""
    try:
        return read_text(path)
    except ParseError:
        return None


def _is_blank(text: str | None) -> bool:
    return text is not None and not text.lstrip("\ufeff").strip()


def nothing_found(text: str | None, fmt: str) -> str:
    """Why a file that parsed without error held no record, from what is in it."""
    if text is None:
        return "no entries"
    body = text.lstrip("\ufeff").strip()
    if not body:
        return EMPTY_FILE
    if fmt == "bibtex":
        kinds = sorted({kind.lower() for kind in _BIBTEX_BLOCK.findall(body)})
        if not kinds:
            return "no BibTeX entries, only comments"
        if set(kinds) <= {"comment", "preamble", "string"}:
            return "no BibTeX entries, only " + ", ".join(f"@{kind}" for kind in kinds)
        return "no BibTeX entries"
    if fmt in {"csl-json", "jsonl", "arxiv-snapshot"} and re.fullmatch(r"\[\s*\]", body):
        return "an empty JSON array"
    return _NOTHING_IN.get(fmt, "no entries")


def _gist(message: str, path: Path) -> str:
    """A whole-file ParseError message as a short phrase, without the path and the advice.

    "refs.txt is not in a format paperbot reads. Supported: ..." -> "not in a format paperbot reads".
    """
    for prefix in (str(path), path.name):
        if message.startswith(prefix):
            message = message[len(prefix) :].lstrip(": ").removeprefix("is ")
            break
    return re.split(r"[.;] ", message, maxsplit=1)[0].rstrip(".")


def _all_skipped(skipped: Sequence[SkippedItem]) -> str:
    """ "all 3 entries were skipped: no title" (or ", e.g. entry 'x' (line 1): no title")."""
    count = len(skipped)
    what = {1: "its only entry was skipped", 2: "both entries were skipped"}.get(
        count, f"all {count} entries were skipped"
    )
    reasons = {item.reason for item in skipped}
    if len(reasons) == 1:
        return f"{what}: {skipped[0].reason}"
    return f"{what}, e.g. {skipped[0].item}: {skipped[0].reason}"


def _failure(path: Path, exc: Exception) -> str:
    """The skipped-item reason for a file whose reading raised ``exc`` (not a ParseError): a bug
    or an exhausted machine. The traceback is logged under a reference id the reason quotes."""
    reference = secrets.token_hex(4)
    log.error("reading %s failed [ref %s]", path, reference, exc_info=exc)
    if isinstance(exc, MemoryError):
        return (f"not read: the memory ran out while reading it (ref {reference}); split it into smaller "
                "files. The other files were read.")
    return (f"not read: paperbot failed on this file ({type(exc).__name__}, ref {reference}); the other "
            "files were read. Please report it with that reference.")


@older_objects_frozen()
def read_files(
    paths: Sequence[Path],
    *,
    fmt: str | None = None,
    on_file: Callable[[Path, int], None] | None = None,
) -> tuple[list[Paper], IngestReport]:
    """Parse every file (in ``fmt``, else the format detected per file): papers and the report so far.

    A file that cannot be read at all, or that holds nothing, is reported as one skipped item;
    the others go on: any exception reading one file (a bug too, logged with a reference id)
    skips that file only. Raises InputError for a ``fmt`` that is not one of ``FORMATS``.
    """
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"Unknown format {fmt!r}.", hint=f"Use one of: {', '.join(FORMATS)}.")
    report = IngestReport()
    papers: list[Paper] = []
    for path in paths:
        try:
            outcome = parse_file(path, fmt)
        except ParseError as exc:
            refusal = EMPTY_FILE if _is_blank(_text_of(path)) else _gist(exc.user_message, path)
            reason = f"no records found ({refusal})" if refusal == EMPTY_FILE else exc.user_message
            report.skipped.append(SkippedItem(item=str(path), reason=reason))
            report.files.append(FileResult(str(path), fmt, records=0, skipped=1, problem=refusal))
            continue
        except Exception as exc:  # noqa: BLE001 - a bug or MemoryError: this file only (interrupts go on up)
            reason = _failure(path, exc)
            report.skipped.append(SkippedItem(item=str(path), reason=reason))
            report.files.append(FileResult(str(path), fmt, records=0, skipped=1, problem=_gist(reason, path)))
            continue
        skipped = [SkippedItem(item=f"{path.name}: {item.item}", reason=item.reason) for item in outcome.skipped]
        problem = None
        if not outcome.papers:
            if outcome.skipped:
                problem = _all_skipped(outcome.skipped)
            else:
                problem = nothing_found(_text_of(path), outcome.format)
                skipped.append(SkippedItem(item=str(path), reason=f"no records found ({problem})"))
        report.skipped.extend(skipped)
        report.warnings.extend(
            SkippedItem(item=f"{path.name}: {item.item}", reason=item.reason) for item in outcome.warnings
        )
        report.files.append(FileResult(str(path), outcome.format, len(outcome.papers), len(skipped), problem))
        papers.extend(outcome.papers)
        if on_file:
            on_file(path, len(outcome.papers))
    return papers, report


def ingest_files(
    index: PaperIndex,
    paths: Sequence[Path],
    *,
    progress: Progress | None = None,
    on_file: Callable[[Path, int], None] | None = None,
    fmt: str | None = None,
) -> IngestReport:
    """Parse every file (``read_files``: in ``fmt``, else detected per file) and ingest what parsed."""
    papers, report = read_files(paths, fmt=fmt, on_file=on_file)
    report.extend(ingest_papers(index, papers, progress=progress))
    return report
