"""`paperbot ingest PATH...`: index files (BibTeX, JSONL, CSL-JSON, RIS, OAI-PMH, arXiv snapshot).

`paperbot ingest arxiv|openalex|crossref ...` (one-off API fetches) is the `fetch` command;
``rewrite_fetch_argv`` routes those forms there so both read as `ingest` to the user.

Exit status: 0 when at least one record was read (every skip is listed); 2 when nothing in the
given files could be read (each unreadable, empty or fully skipped): the report is printed
(with ``--json``: with ``"ok": false`` and the ``"error"``), then one error line on stderr.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from retrieval import FILE_FORMATS
from retrieval.errors import InputError

if TYPE_CHECKING:
    from bot.context import CliContext
    from retrieval.config import Settings
    from retrieval.results import FileResult, IngestReport, JobProgress

FETCH_SOURCES = ("arxiv", "openalex", "crossref")
SKIPS_SHOWN = 20
WARNINGS_SHOWN = 3  # examples of records kept without an unreadable value; --json lists all
PROBLEMS_SHOWN = 3  # files named in the "nothing could be read" error


def rewrite_fetch_argv(argv: list[str]) -> list[str]:
    """``ingest arxiv --author X`` -> ``fetch arxiv --author X`` (unless a file of that name exists)."""
    if len(argv) >= 2 and argv[0] == "ingest" and argv[1] in FETCH_SOURCES and not Path(argv[1]).exists():
        return ["fetch", *argv[1:]]
    return argv


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="index publication files, or fetch from an API: ingest arxiv|openalex|crossref ...",
        description="Index files (format detected from content) or, with arxiv|openalex|crossref as the "
        "first word, fetch from that API (see `paperbot fetch --help`).",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files to index")
    parser.add_argument("--format", choices=FILE_FORMATS, metavar="FMT",
                        help="read every file as FMT (%(choices)s); default: detected per file")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--prune", action="store_true",
                        help="also take out the records of entries these files held before and no longer hold "
                             "(deleted or renamed since); without it they are listed and kept")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help="with PAPERBOT_JOB_QUEUE: split the records into N jobs that `paperbot worker` "
                             "processes write in parallel, and wait for them (docs/workers.md); "
                             "without a queue the ingest runs here as usual")
    parser.set_defaults(handler=run, prepare=prepare)


# Files at least this large (together) get an encoding process started before anything else: a
# few hundred title-only BibTeX entries. Smaller ingests encode too little for it to matter.
ENCODE_AHEAD_MIN_BYTES = 256 * 1024


def prepare(args: argparse.Namespace, settings: Settings) -> None:
    """Before the command's own imports: start the process that will encode the files' texts
    (``retrieval.start_encoding_process``), when they are large enough for it to pay and
    ``PAPERBOT_ENCODE_AHEAD`` allows it."""
    if not settings.encode_ahead or getattr(args, "jobs", None):  # the workers encode a queued ingest
        return
    size = 0
    for path in args.paths:
        try:
            size += path.stat().st_size if path.is_file() else 0
        except OSError:
            continue  # ``run`` reports it
    if size >= ENCODE_AHEAD_MIN_BYTES:
        from retrieval import start_encoding_process

        start_encoding_process()


def print_report(report: IngestReport, ctx: CliContext, *, as_json: bool, what: str) -> None:
    """The final report of any ingest: counts, then every skip with its reason."""
    if as_json:
        ctx.out_json(report.as_dict())
        return
    ctx.out(
        f"{what}: {report.total:,} records — added {len(report.added):,}, updated {len(report.updated):,}, "
        f"unchanged {len(report.unchanged):,}"
        + (f"; {report.merged_duplicates:,} duplicates merged" if report.merged_duplicates else "")
        + f"; skipped {len(report.skipped):,}."
    )
    for item in report.skipped[:SKIPS_SHOWN]:
        ctx.out(f"  skipped {item.item}: {item.reason}")
    if len(report.skipped) > SKIPS_SHOWN:
        ctx.out(f"  ... and {len(report.skipped) - SKIPS_SHOWN:,} more skips (use --json to see all).")
    if report.warnings:
        ctx.out(f"{len(report.warnings):,} records were kept without a value that could not be read, e.g.:")
        for item in report.warnings[:WARNINGS_SHOWN]:
            ctx.out(f"  {item.item}: {item.reason}")
        if len(report.warnings) > WARNINGS_SHOWN:
            ctx.out(f"  ... and {len(report.warnings) - WARNINGS_SHOWN:,} more warnings (use --json to see all).")
    if report.pruned or report.pruned_kept:
        kept = f"; kept {len(report.pruned_kept):,} that other sources describe too" if report.pruned_kept else ""
        ctx.out(f"Pruned {len(report.pruned):,} records made from entries these files no longer hold{kept}.")
    elif report.no_longer_in_files:
        ctx.out(f"{len(report.no_longer_in_files):,} records were made from entries these files no longer hold "
                "(deleted or renamed since); they stay indexed: `paperbot ingest --prune` with the same files "
                "takes them out (--json lists them).")


def nothing_read_error(files: Sequence[FileResult], fmt: str | None, *, outcome: str = "nothing was ingested") -> InputError:
    """The one-line error of an ingest (or a removal) that read nothing from its ``files``: what
    each file held, and what to do."""
    from retrieval.results import EMPTY_FILE

    problems = [(result.path, " ".join(str(result.problem).splitlines())) for result in files if result.problem]
    listed = "; ".join(f"{path}: {problem}" for path, problem in problems[:PROBLEMS_SHOWN])
    if len(problems) > PROBLEMS_SHOWN:
        listed += f"; and {len(problems) - PROBLEMS_SHOWN} more"
    if len(files) == 1:
        message = f"Nothing could be read from {listed}."
    else:
        message = f"Nothing could be read from the {len(files)} given files ({listed})."
    formats = ", ".join(FILE_FORMATS)
    if fmt is not None:
        which = "the file is" if len(files) == 1 else "the files are"
        hint = f"Check that {which} {fmt}, or pass another --format ({formats})."
    elif all(problem == EMPTY_FILE for _, problem in problems):
        hint = f"Check the files; {outcome}."
    else:
        hint = f"Check the files, or pass --format FMT ({formats})."
    return InputError(message, hint=hint)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        raise InputError(f"No such file: {', '.join(missing)}.", hint="Check the path; nothing was ingested.")
    directories = [str(p) for p in args.paths if p.is_dir()]
    if directories:
        raise InputError(f"{', '.join(directories)} is a directory.", hint="Pass the files inside it, e.g. dir/*.bib.")
    if args.jobs is not None:
        report = _ingest_as_jobs(args, ctx)
    else:
        with ctx.progress("Indexing", total=None) as update:
            report = ctx.assistant.library.ingest_files(list(args.paths), progress=update, fmt=args.format,
                                                        prune=args.prune)
    failure = nothing_read_error(report.files, args.format) if report.nothing_read else None
    if args.json:
        error = None if failure is None else {"message": failure.user_message, "hint": failure.hint}
        ctx.out_json({**report.as_dict(), "ok": failure is None, "error": error})
    else:
        print_report(report, ctx, as_json=False, what=f"Ingested {len(args.paths)} file(s)")
    if failure is not None:
        raise failure
    return 0


def _ingest_as_jobs(args: argparse.Namespace, ctx: CliContext) -> IngestReport:
    """``ingest --jobs N``: the files' records as N queued jobs, followed to their end with one
    progress line per change (without a queue: the usual in-process ingest)."""
    from retrieval import JobService

    if not 1 <= args.jobs <= 256:
        raise InputError(f"--jobs must be between 1 and 256 (got {args.jobs}).")
    service = JobService(ctx.assistant)
    if not service.queued:
        with ctx.progress("Indexing", total=None) as update:
            return ctx.assistant.library.ingest_files(list(args.paths), progress=update, fmt=args.format,
                                                      prune=args.prune)

    def show(progress: JobProgress) -> None:
        parts = f": {progress.done}/{progress.total} parts written" if progress.total else ""
        ctx.note(f"{progress.job}: {progress.state}{parts}" + (f" ({progress.message})" if progress.message else ""))

    report = service.ingest_files(list(args.paths), parts=args.jobs, fmt=args.format, progress=show)
    ctx.assistant.library.note_entries_no_longer_in(report, prune=args.prune)  # once every part is written
    return report
