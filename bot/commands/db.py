"""`paperbot db upgrade`: bring the database to this paperbot's schema, as a step of its own.

Every command upgrades a database that is behind when it first opens it (``storage.database``),
so this is for operators who run migrations as a deployment step, or want to see them happen:
it says which revision was upgraded to which, or that the schema was current. It takes the
migration lock, so it is safe while other paperbot processes start (docs/postgres.md).
Exit status: 0 upgraded or current; 2 the database cannot be reached, read or written.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from bot.commands import Subcommands

if TYPE_CHECKING:
    from bot.context import CliContext


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "db",
        help="the database (roster, follows, Slack state): upgrade its schema",
        description="The database holds the roster, the follows and the Slack state: SQLite in the data dir, or the PostgreSQL "
        "server PAPERBOT_DATABASE_URL names (docs/postgres.md).",
    )
    actions = parser.add_subparsers(dest="db_action", metavar="ACTION")
    actions.required = True
    upgrade = actions.add_parser("upgrade", help="upgrade the database's schema to this paperbot's (under a lock)")
    upgrade.add_argument("--json", action="store_true", help="print the revisions before and after as JSON")
    upgrade.set_defaults(handler=run_upgrade)


def run_upgrade(args: argparse.Namespace, ctx: CliContext) -> int:
    before, after = ctx.assistant.upkeep.upgrade_database(notice=ctx.note)
    if args.json:
        ctx.out_json({"before": before.revision, "after": after.revision, "upgraded": before.revision != after.revision,
                      "database": {**dataclasses.asdict(after), "current": after.current}})
    elif before.revision == after.revision:
        ctx.out(f"The database {after.where} is at schema {after.revision} (current): nothing to do.")
    else:
        ctx.out(f"Upgraded the database {after.where} from schema {before.revision or '(none)'} to {after.revision}.")
    return 0
