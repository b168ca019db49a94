"""`paperbot ingest PATH...`: index files (BibTeX, JSONL, CSL-JSON, RIS, OAI-PMH, arXiv snapshot).

`paperbot ingest arxiv|openalex|crossref ...` (one-off API fetches) is the `fetch` command;
``rewrite_fetch_argv`` routes those forms there so both read as `ingest` to the user.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.context import CliContext
from retrieval.errors import InputError
from retrieval.ingest import IngestReport

FETCH_SOURCES = ("arxiv", "openalex", "crossref")
SKIPS_SHOWN = 20


def rewrite_fetch_argv(argv: list[str]) -> list[str]:
    """``ingest arxiv --author X`` -> ``fetch arxiv --author X`` (unless a file of that name exists)."""
    if len(argv) >= 2 and argv[0] == "ingest" and argv[1] in FETCH_SOURCES and not Path(argv[1]).exists():
        return ["fetch", *argv[1:]]
    return argv


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="index publication files, or fetch from an API: ingest arxiv|openalex|crossref ...",
        description="Index files (format detected from content) or, with arxiv|openalex|crossref as the "
        "first word, fetch from that API (see `paperbot fetch --help`).",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files to index")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run)


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
        for item in report.warnings[:3]:
            ctx.out(f"  {item.item}: {item.reason}")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        raise InputError(f"No such file: {', '.join(missing)}.", hint="Check the path; nothing was ingested.")
    directories = [str(p) for p in args.paths if p.is_dir()]
    if directories:
        raise InputError(f"{', '.join(directories)} is a directory.", hint="Pass the files inside it, e.g. dir/*.bib.")
    with ctx.progress("Indexing", total=None) as update:
        report = ctx.assistant.ingest_files(list(args.paths), progress=update)
    print_report(report, ctx, as_json=args.json, what=f"Ingested {len(args.paths)} file(s)")
    return 0
