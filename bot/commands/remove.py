"""`paperbot remove --source FILE... | demo`: take the records a file was ingested into back out.

The records the file's entries made are found by the file they name, and by reading the file again
(``Assistant.library.remove_sources``): records only its entries describe are removed; records
another source also describes (a fetch, another file) are kept, without what only this file
supplied, and listed with those sources. A file that no longer exists is found by name only.
``demo`` names the bundled sample corpus, which earlier versions of `paperbot demo` indexed into
the user's own data dir.

Exit status: 0 when the file could be read or records name it (whether or not anything was indexed
from it); 2 when a file is missing and no record names it, or when nothing could be read and no
record was found by the files' names.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from retrieval.errors import InputError

if TYPE_CHECKING:
    from bot.context import CliContext
    from retrieval.results import RemovalReport

DEMO = "demo"
KEPT_SHOWN = 10


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "remove",
        help="take a file's records (or the demo's sample) back out of the index",
        description="Remove the records that the given files were ingested into. Each file is read again; "
        "records that other sources describe too are kept and listed.",
    )
    parser.add_argument("--source", required=True, nargs="+", metavar="FILE|demo",
                        help="the files as they were ingested, or `demo` for the bundled sample corpus")
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed; change nothing")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    from bot.commands.demo import META_KEY, sample_path
    from bot.commands.ingest import nothing_read_error

    sources = [str(source) for source in args.source]
    paths = [sample_path() if source == DEMO else Path(source) for source in sources]
    if not ctx.settings.records_path.exists():
        raise InputError(f"Nothing is indexed in {ctx.settings.data_dir}; nothing to remove.",
                         hint="Check PAPERBOT_DATA_DIR.")
    missing = [path for path in paths if not path.is_file()]
    named = ctx.assistant.library.records_naming(missing) if missing else {}
    if unknown := [str(path) for path in missing if not named[path]]:
        raise InputError(f"No such file, and no indexed record names it: {', '.join(unknown)}.",
                         hint="Name the files as they were ingested (records ingested before paperbot named "
                         "their files are found by reading the file again); nothing was removed.")
    # the sample's records go out (or stay without it), and with them the mark that it is indexed
    report = ctx.assistant.library.remove_sources(paths, label=", ".join(sources), dry_run=args.dry_run,
                                                  forget=META_KEY if DEMO in sources else None)
    if args.json:
        ctx.out_json(report.as_dict())
    else:
        _print_report(report, ctx, named)
    if report.files and all(result.problem for result in report.files) and not (report.removed or report.kept):
        raise nothing_read_error(report.files, None, outcome="nothing was removed")
    return 0


def _print_report(report: RemovalReport, ctx: CliContext, gone: Mapping[Path, int]) -> None:
    verb = "Would remove" if report.dry_run else "Removed"
    line = f"{verb} {len(report.removed):,} records of {report.source}"
    if report.kept:
        line += f"; kept {len(report.kept):,} that other sources describe too"
    if report.not_indexed:
        line += f"; {report.not_indexed:,} entries of it are not in the index"
    ctx.out(line + ".")
    for kept in report.kept[:KEPT_SHOWN]:
        without = f" (without its {', '.join(kept.fields_removed)})" if kept.fields_removed else ""
        ctx.out(f"  kept {kept.id} {kept.title[:70]!r}: also from {', '.join(kept.other_sources)}{without}")
    if len(report.kept) > KEPT_SHOWN:
        ctx.out(f"  ... and {len(report.kept) - KEPT_SHOWN:,} more kept (use --json to see all).")
    for item in report.skipped[:KEPT_SHOWN]:
        ctx.out(f"  unreadable {item.item}: {item.reason}")
    for path in gone:
        ctx.out(f"  {path} no longer exists: its records were found by the file name they carry.")
    if report.dry_run and report.removed:
        ctx.out("Nothing was changed (--dry-run).")

