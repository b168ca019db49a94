"""`paperbot ask` and `paperbot search`: cited answers and ranked records."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from bot.render import render_answer, render_search

if TYPE_CHECKING:
    from bot.context import CliContext
    from retrieval.results import AnswerResult, SearchFilters, SearchResult


def _add_retrieval_options(parser: argparse.ArgumentParser, default_k: int) -> None:
    parser.add_argument("--k", "--limit", dest="k", type=int, default=default_k, metavar="N",
                        help=f"how many records to retrieve (default {default_k}, at most 100)")
    parser.add_argument("--since", type=int, metavar="YEAR", help="only papers from YEAR on")
    parser.add_argument("--author", metavar="NAME", action="append", default=[], help="only papers by NAME (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the scripting contract)")


def register(subparsers: Subcommands) -> None:
    ask = subparsers.add_parser("ask", help="answer a question with cited paper records")
    ask.add_argument("question", help="the question, in quotes")
    _add_retrieval_options(ask, default_k=8)
    ask.set_defaults(handler=run_ask, reads_only=True)

    search = subparsers.add_parser("search", help="retrieval only: ranked records with scores")
    search.add_argument("query", help="what to look for, in quotes")
    _add_retrieval_options(search, default_k=10)
    search.set_defaults(handler=run_search, reads_only=True)


def _filters(args: argparse.Namespace) -> SearchFilters:
    from retrieval.results import SearchFilters

    return SearchFilters(since=args.since, authors=list(args.author))


def _check_k(k: int) -> None:
    from retrieval.errors import InputError

    if not 1 <= k <= 100:
        raise InputError(f"--k (--limit) must be between 1 and 100 (got {k}).")


def _show(result: AnswerResult | SearchResult, args: argparse.Namespace, ctx: CliContext,
          render: Callable[..., str]) -> int:
    """Notice on stderr; the result as JSON (the contract) or as text on stdout."""
    if result.notice:
        ctx.note(result.notice)
    if args.json:
        ctx.out_json(result.model_dump(mode="json"))
    else:
        ctx.out(render(result, width=ctx.width))
    return 0


def run_ask(args: argparse.Namespace, ctx: CliContext) -> int:
    _check_k(args.k)
    return _show(ctx.assistant.ask(args.question, k=args.k, filters=_filters(args)), args, ctx, render_answer)


def run_search(args: argparse.Namespace, ctx: CliContext) -> int:
    _check_k(args.k)
    return _show(ctx.assistant.search(args.query, k=args.k, filters=_filters(args)), args, ctx, render_search)
