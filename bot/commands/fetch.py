"""`paperbot ingest arxiv|openalex|crossref ...`: one-off fetches from the scholarly APIs.

Registered as the `fetch` command; ``bot.commands.ingest.rewrite_fetch_argv`` routes
`paperbot ingest arxiv ...` here, so users only ever type `ingest`. Each form fetches, merges
with what is indexed (one record per paper, with provenance) and prints the ingest report
(``Assistant.fetching.fetch``; the work is ``retrieval.ingest.fetchers``'s). A source that fails
part-way keeps what it delivered: that part is indexed, then the error is shown and the exit
status is 2.

    paperbot ingest arxiv    --author NAME | --query Q | --id ID [ID ...]
    paperbot ingest openalex --author ID | --orcid ID | --doi DOI [DOI ...] | --query Q
    paperbot ingest crossref --doi DOI [DOI ...] | --orcid ID | --query Q
"""

from __future__ import annotations

import argparse
from datetime import date
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from bot.commands.ingest import FETCH_SOURCES

if TYPE_CHECKING:
    from bot.context import CliContext

LABELS = {"arxiv": "arXiv", "openalex": "OpenAlex", "crossref": "Crossref"}  # for --help
DEFAULT_MAX_RESULTS = 200  # ``retrieval.ingest.fetchers``'s, here for --help (which imports no core module)


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "fetch",
        help="fetch from arXiv, OpenAlex or Crossref and index (also: paperbot ingest arxiv|openalex|crossref ...)",
        description="One-off fetches. `paperbot ingest arxiv|openalex|crossref ...` is the same command.",
    )
    sources = parser.add_subparsers(dest="fetch_source", metavar="SOURCE")
    sources.required = True
    for source in FETCH_SOURCES:
        sub = sources.add_parser(source, help=f"fetch from {LABELS[source]}")
        add_fetch_options(sub, source)
        sub.set_defaults(handler=run)


def _since(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date like 2024-01-31") from None


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number")
    return number


def add_fetch_options(parser: argparse.ArgumentParser, source: str) -> None:
    """The options of one source's fetch form (exactly one way of selecting works is required)."""
    what = parser.add_mutually_exclusive_group(required=True)
    if source == "arxiv":
        what.add_argument("--author", metavar="NAME", help='papers by this author ("Adrian Del Maestro")')
        what.add_argument("--query", metavar="Q", help='an arXiv search query ("all:graph AND cat:cs.LG")')
        what.add_argument("--id", metavar="ID", nargs="+", action="extend", help="arXiv ids (2104.12255, 2104.12255v1)")
    elif source == "openalex":
        what.add_argument("--author", metavar="ID", help="an OpenAlex author id (A5023888391); a name is searched")
        what.add_argument("--orcid", metavar="ID", help="works carrying this ORCID")
        what.add_argument("--doi", metavar="DOI", nargs="+", action="extend", help="works by DOI")
        what.add_argument("--query", metavar="Q", help="full-text search")
    elif source == "crossref":
        what.add_argument("--doi", metavar="DOI", nargs="+", action="extend", help="works by DOI")
        what.add_argument("--orcid", metavar="ID", help="works carrying this ORCID")
        what.add_argument("--query", metavar="Q", help="bibliographic search")
    else:  # pragma: no cover - programming error
        raise ValueError(f"unknown fetch source {source!r}")
    parser.add_argument("--since", type=_since, metavar="YYYY-MM-DD", help="author/ORCID forms: only works from this date")
    parser.add_argument("--max-results", type=_positive, default=DEFAULT_MAX_RESULTS, metavar="N",
                        help=f"stop after N works (default {DEFAULT_MAX_RESULTS})")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    return run_fetch(args.fetch_source, args, ctx)


def run_fetch(source: str, args: argparse.Namespace, ctx: CliContext) -> int:
    """Fetch what ``args`` select from ``source`` ("arxiv", "openalex", "crossref") and index it."""
    from bot.commands.ingest import print_report

    result = ctx.assistant.fetching.fetch(
        source, author=getattr(args, "author", None), query=getattr(args, "query", None),
        ids=getattr(args, "id", None) or (), orcid=getattr(args, "orcid", None), dois=getattr(args, "doi", None) or (),
        since=args.since, max_results=args.max_results, bars=ctx.progress,
    )
    for note in result.notes:
        ctx.note(note)
    if not result.fetched and result.failure is None:
        ctx.note(f"{result.label} returned nothing for {result.what}.")
    print_report(result.report, ctx, as_json=args.json, what=f"Fetched {result.fetched} work(s) from {result.label}")
    if result.failure is not None:
        ctx.note(f"paperbot: {result.failure}")
        ctx.note(f"The {result.fetched} work(s) received before the failure were indexed; run the command again to complete.")
        return 2
    return 0
