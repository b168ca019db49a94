"""`paperbot summarize NAME`: a scholar's profile and recent work, with cited papers and pictures."""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path

from bot.context import CliContext
from bot.render import MODE_LABELS, citation_line, wrap
from retrieval.errors import InputError
from retrieval.models import AmbiguousScholarResult, ScholarSummaryResult

MODE_LABELS_SUMMARY = {
    "extractive": "extractive (no LLM: titles and abstract sentences of the cited records)",
    "llm": MODE_LABELS.get("llm", "llm"),
}


ID_LABELS = {"orcid": "ORCID", "openalex": "OpenAlex"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "summarize",
        help="a scholar's profile and recent work, every statement tied to a paper",
        description="Resolve NAME (name, alias, ORCID or OpenAlex author id) to one indexed person and "
        "summarise their profile and recent work. When several people match, lists them instead.",
    )
    parser.add_argument("name", help='the scholar, e.g. "Zhao Zhang", an ORCID or an OpenAlex author id')
    parser.add_argument("--since", type=int, metavar="YEAR", help="recent work = papers from YEAR on (default: last 24 months)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the scripting contract)")
    parser.add_argument("--plot", type=Path, metavar="DIR", help="also write the co-author network and timeline PNGs into DIR")
    parser.set_defaults(handler=run)


def _check_since(since: int | None) -> None:
    if since is not None and not 1900 <= since <= date.today().year + 1:
        raise InputError(f"--since must be a year such as {date.today().year - 2} (got {since}).")


def render_ambiguous(result: AmbiguousScholarResult) -> str:
    count = len(result.candidates) + result.more
    lines = [f"“{result.query}” matches {count} different people in the index. Which one?"]
    for i, c in enumerate(result.candidates, start=1):
        facts = [c.affiliation or "no affiliation on record", f"{c.papers} paper" + ("" if c.papers == 1 else "s")]
        if c.latest_year:
            facts[-1] += f" (latest {c.latest_year})"
        line = f"{i:>2}. {c.name} — " + " — ".join(facts)
        if c.sample_title:
            line += f" — e.g. “{c.sample_title}”"
        if c.coauthors:
            line += f" — with {', '.join(c.coauthors)}"
        if c.ids:
            line += " — " + ", ".join(f"{k} {v}" for k, v in sorted(c.ids.items()))
        lines.append(line)
    if result.more:
        lines.append(f"    … and {result.more} more.")
    lines += [
        "",
        "They are kept apart because no shared id, co-author or affiliation shows they are one person.",
        "Ask again with a fuller name, an ORCID or OpenAlex author id, or a roster alias "
        "(paperbot scholars add NAME --openalex ID).",
    ]
    return "\n".join(lines)


def _years(counts: dict[int, int]) -> str:
    return ", ".join(f"{year}: {n}" for year, n in sorted(counts.items()))


def render_summary(result: ScholarSummaryResult) -> str:
    scholar = result.scholar
    lines = [scholar.name]
    if scholar.ids:
        lines.append("  " + "   ".join(f"{ID_LABELS.get(k, k)} {v}" for k, v in sorted(scholar.ids.items())))
    current = scholar.affiliations.get("current", [])
    previous = scholar.affiliations.get("previous", [])
    affiliation = "; ".join(current) if current else "none on record"
    if previous:
        affiliation += f" (previously: {'; '.join(previous)})"
    lines.append(f"Affiliation: {affiliation}")
    if result.counts_by_year:
        years = sorted(result.counts_by_year)
        span = str(years[0]) if years[0] == years[-1] else f"{years[0]}–{years[-1]}"
        lines.append(f"Papers in the index: {result.paper_count} ({span}) — by year: {_years(result.counts_by_year)}")
    else:
        lines.append(f"Papers in the index: {result.paper_count}")
    if result.topics:
        lines.append(wrap("Topics: " + ", ".join(result.topics)))
    if result.coauthors:
        top = ", ".join(f"{c.name} ({c.shared})" for c in result.coauthors)
        lines.append(wrap(f"Co-authors: {result.coauthor_count} in the index; most shared papers: {top}"))
    lines.append("")
    if result.window_note:
        lines += [wrap(f"Note: {result.window_note}"), ""]
    lines.append(wrap(result.summary))
    lines += ["", f"Mode: {MODE_LABELS_SUMMARY.get(result.mode, result.mode)}"]
    if result.papers:
        lines += ["", "Papers:"]
        lines += [citation_line(c) for c in result.papers]
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    _check_since(args.since)
    result = ctx.assistant.summarize(args.name, since=args.since)
    if isinstance(result, AmbiguousScholarResult):
        if args.plot:
            ctx.note("No pictures: the name matches several people.")
        if args.json:
            ctx.out_json(result.model_dump(mode="json"))
        else:
            ctx.out(render_ambiguous(result))
        return 0
    if result.notice:
        ctx.note(result.notice)
    if args.plot:
        for path in ctx.assistant.render_scholar_plots(result, args.plot):
            ctx.note(f"Wrote {path}")
    if args.json:
        ctx.out_json(result.model_dump(mode="json"))
    else:
        ctx.out(render_summary(result))
    return 0
