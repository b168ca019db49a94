"""`paperbot scholars add|list|remove`: the roster of scholars that `paperbot sync` keeps current."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from bot.commands.ingest import FETCH_SOURCES  # the sources a scholar is synced from, in this order

if TYPE_CHECKING:
    from bot.context import CliContext
    from retrieval.results import Scholar


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "scholars",
        help="manage the roster of scholars whose publications `paperbot sync` fetches",
        description="The roster lives in the database (PAPERBOT_DATABASE_URL; unset, records.sqlite3 in the data dir). ORCID and OpenAlex ids make syncs exact; "
        "without them paperbot searches by name.",
    )
    actions = parser.add_subparsers(dest="scholars_action", metavar="ACTION")
    actions.required = True

    add = actions.add_parser("add", help="add a scholar to the roster")
    add.add_argument("name", metavar="NAME", help='the scholar\'s name, e.g. "Zhao Zhang"')
    add.add_argument("--orcid", metavar="ID", help="ORCID (0000-0002-1825-0097): enables OpenAlex and Crossref by ORCID")
    add.add_argument("--openalex", metavar="ID", help="OpenAlex author id (A5023888391): the exact OpenAlex profile")
    add.add_argument("--arxiv-name", metavar="NAME", help="the name as arXiv lists it, when it differs")
    add.add_argument("--alias", metavar="A", nargs="+", action="extend", default=[],
                     help="other spellings the scholar publishes under (repeatable)")
    add.set_defaults(handler=run)

    listing = actions.add_parser("list", help="show the roster")
    listing.add_argument("--json", action="store_true", help="print the roster as JSON")
    listing.set_defaults(handler=run)

    remove = actions.add_parser("remove", help="remove a scholar (by name, alias, ORCID or OpenAlex id)")
    remove.add_argument("name", metavar="NAME")
    remove.set_defaults(handler=run)


def _describe(scholar: Scholar) -> str:
    parts = [scholar.name]
    if scholar.orcid:
        parts.append(f"ORCID {scholar.orcid}")
    if scholar.openalex_id:
        parts.append(f"OpenAlex {scholar.openalex_id}")
    if scholar.arxiv_name:
        parts.append(f"arXiv as {scholar.arxiv_name!r}")
    if scholar.aliases:
        parts.append("aliases " + ", ".join(scholar.aliases))
    return " · ".join(parts)


def _synced(scholar: Scholar) -> str:
    marks = [f"{source} {scholar.last_synced[source][:10]}" for source in FETCH_SOURCES if source in scholar.last_synced]
    return "last synced: " + (", ".join(marks) if marks else "never")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.scholars_action == "add":
        scholar = ctx.assistant.roster.add(args.name, orcid=args.orcid, openalex_id=args.openalex,
                                            arxiv_name=args.arxiv_name, aliases=args.alias)
        ctx.out(f"Added {_describe(scholar)}.")
        if not (scholar.orcid or scholar.openalex_id):
            ctx.note("Tip: without --orcid or --openalex, OpenAlex is searched by name and Crossref is skipped.")
        ctx.note("Run `paperbot sync` to fetch their publications.")
        return 0
    if args.scholars_action == "remove":
        scholar = ctx.assistant.roster.remove(args.name)
        ctx.out(f"Removed {scholar.name} from the roster (their indexed papers stay in the index).")
        return 0
    scholars = ctx.assistant.roster.scholars()
    if args.json:
        ctx.out_json([scholar.model_dump(mode="json") for scholar in scholars])
        return 0
    if not scholars:
        ctx.out("The roster is empty. Add someone: paperbot scholars add \"Zhao Zhang\" --orcid 0000-0002-1825-0097")
        return 0
    for scholar in scholars:
        ctx.out(f"{_describe(scholar)}  ({_synced(scholar)})")
    return 0
