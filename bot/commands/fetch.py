"""`paperbot ingest arxiv|openalex|crossref ...`: one-off fetches from the scholarly APIs.

Registered as the `fetch` command; ``bot.commands.ingest.rewrite_fetch_argv`` routes
`paperbot ingest arxiv ...` here, so users only ever type `ingest`. Each form fetches, merges
with what is indexed (one record per paper, with provenance) and prints the ingest report.
A source that fails part-way keeps what it delivered: that part is indexed, then the error is
shown and the exit status is 2.

    paperbot ingest arxiv    --author NAME | --query Q | --id ID [ID ...]
    paperbot ingest openalex --author ID | --orcid ID | --doi DOI [DOI ...] | --query Q
    paperbot ingest crossref --doi DOI [DOI ...] | --orcid ID | --query Q
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from datetime import date
from typing import TYPE_CHECKING

from retrieval.errors import InputError, SourceError

if TYPE_CHECKING:
    from bot.context import CliContext
    from retrieval.records.paper import Paper
    from retrieval.sources.files.base import SkippedItem

FETCH_SOURCES = ("arxiv", "openalex", "crossref")
LABELS = {"arxiv": "arXiv", "openalex": "OpenAlex", "crossref": "Crossref"}
DEFAULT_MAX_RESULTS = 200


def register(subparsers: argparse._SubParsersAction) -> None:
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


class _Plan:
    """What to fetch: a works iterator plus the connector (for its skipped items) and notes."""

    def __init__(self, works: Callable[[], Iterator[Paper]], connector: object, what: str) -> None:
        self.works = works
        self.connector = connector
        self.what = what
        self.notes: list[str] = []


def _doi_lookup(lookup: Callable[[str], Paper | None], dois: list[str], source: str, skipped: list[SkippedItem]) -> Iterator[Paper]:
    from retrieval.sources.files.base import SkippedItem

    for doi in dois:
        paper = lookup(doi)
        if paper is None:
            skipped.append(SkippedItem(f"DOI {doi}", f"{LABELS[source]} does not know this DOI"))
        else:
            yield paper


def _arxiv_plan(args: argparse.Namespace, ctx: CliContext, lookups: list[SkippedItem]) -> _Plan:
    from retrieval.sources.apis.arxiv import ArxivSource

    source = ArxivSource(ctx.settings)
    if args.author:
        name = args.author
        plan = _Plan(lambda: _by_author(source, name, args, plan), source, f"arXiv papers of {name!r}")
        return plan
    if args.query:
        return _Plan(lambda: source.search(args.query, max_results=args.max_results), source, f"arXiv search {args.query!r}")
    return _Plan(lambda: iter(source.by_ids(args.id)), source, "arXiv ids")


def _by_author(source: object, name: str, args: argparse.Namespace, plan: _Plan) -> Iterator[Paper]:
    """arXiv's author search also matches other people's names: keep the compatible ones."""
    from retrieval.records.names import names_compatible

    dropped = 0
    for paper in source.by_author(name, since=args.since, max_results=args.max_results):  # type: ignore[attr-defined]
        if any(names_compatible(name, author.name) for author in paper.authors):
            yield paper
        else:
            dropped += 1
    if dropped:
        plan.notes.append(f"Left out {dropped} arXiv result(s) with no author whose name agrees with {name!r}.")


def _openalex_author(source: object, value: str) -> str:
    """An OpenAlex author id from ``--author``: the id itself, or the one profile a name search finds."""
    from retrieval.ingest.sync import choose_openalex_profile
    from retrieval.records.paper import normalize_openalex_id

    bare = normalize_openalex_id(value)
    if bare and bare.startswith("A"):
        return bare
    choice = choose_openalex_profile([value], source.find_authors(value))  # type: ignore[attr-defined]
    if choice.author_id is None:
        raise InputError(choice.problem(value), hint="Pass the OpenAlex author id: paperbot ingest openalex --author A...")
    return choice.author_id


def _openalex_plan(args: argparse.Namespace, ctx: CliContext, lookups: list[SkippedItem]) -> _Plan:
    from retrieval.sources.apis.openalex import OpenAlexSource

    source = OpenAlexSource(ctx.settings)
    if args.author:
        author_id = _openalex_author(source, args.author)
        return _Plan(lambda: source.works_by_author(author_id, since=args.since, max_results=args.max_results),
                     source, f"OpenAlex works of {author_id}")
    if args.orcid:
        orcid = _orcid(args.orcid)
        return _Plan(lambda: source.works_by_orcid(orcid, since=args.since, max_results=args.max_results),
                     source, f"OpenAlex works of ORCID {orcid}")
    if args.doi:
        return _Plan(lambda: _doi_lookup(source.work_by_doi, args.doi, "openalex", lookups), source, "OpenAlex DOIs")
    return _Plan(lambda: source.search(args.query, max_results=args.max_results), source, f"OpenAlex search {args.query!r}")


def _crossref_plan(args: argparse.Namespace, ctx: CliContext, lookups: list[SkippedItem]) -> _Plan:
    from retrieval.sources.apis.crossref import CrossrefSource

    source = CrossrefSource(ctx.settings)
    if args.orcid:
        orcid = _orcid(args.orcid)
        return _Plan(lambda: source.works_by_orcid(orcid, since=args.since, max_results=args.max_results),
                     source, f"Crossref works of ORCID {orcid}")
    if args.doi:
        return _Plan(lambda: _doi_lookup(source.work_by_doi, args.doi, "crossref", lookups), source, "Crossref DOIs")
    return _Plan(lambda: source.search(args.query, max_results=args.max_results), source, f"Crossref search {args.query!r}")


def _orcid(value: str) -> str:
    from retrieval.records.paper import normalize_orcid

    orcid = normalize_orcid(value)
    if orcid is None:
        raise InputError(f"{value!r} is not an ORCID.", hint="An ORCID looks like 0000-0002-1825-0097.")
    return orcid


PLANS = {"arxiv": _arxiv_plan, "openalex": _openalex_plan, "crossref": _crossref_plan}


def run_fetch(source: str, args: argparse.Namespace, ctx: CliContext) -> int:
    """Fetch what ``args`` select from ``source`` ("arxiv", "openalex", "crossref") and index it."""
    from bot.commands.ingest import print_report
    from retrieval.ingest.pipeline import IngestReport

    if source not in PLANS:
        raise InputError(f"Unknown source {source!r}.", hint="Use one of: " + ", ".join(FETCH_SOURCES))
    lookups: list[SkippedItem] = []
    plan = PLANS[source](args, ctx, lookups)
    papers: list[Paper] = []
    failure: SourceError | None = None
    with ctx.progress(f"Fetching {plan.what}", total=None) as update:
        try:
            for paper in plan.works():
                papers.append(paper)
                update(len(papers), None)  # type: ignore[arg-type]
        except SourceError as exc:
            failure = exc
    http = getattr(plan.connector, "http", None)
    if http is not None:
        http.close()
    for note in plan.notes:
        ctx.note(note)
    skipped = [*lookups, *getattr(plan.connector, "skipped", [])]
    report = IngestReport()
    if papers:
        with ctx.progress(f"Indexing {len(papers)} work(s)", total=len(papers)) as update:
            report = ctx.assistant.ingest_papers(papers, progress=update)
    report.skipped = [*skipped, *report.skipped]
    if not papers and failure is None:
        ctx.note(f"{LABELS[source]} returned nothing for {plan.what}.")
    print_report(report, ctx, as_json=args.json, what=f"Fetched {len(papers)} work(s) from {LABELS[source]}")
    if failure is not None:
        ctx.note(f"paperbot: {failure}")
        ctx.note(f"The {len(papers)} work(s) received before the failure were indexed; run the command again to complete.")
        return 2
    return 0
