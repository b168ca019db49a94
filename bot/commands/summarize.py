"""`paperbot summarize NAME`: a scholar's profile and recent work, with cited papers and pictures."""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from bot.render import MODE_LABELS, citation_line, glue, hang, hang_items, wrap
from retrieval.errors import InputError

if TYPE_CHECKING:
    from bot.context import CliContext
    from retrieval.results import AmbiguousScholarResult, ScholarSummaryResult

MODE_LABELS_SUMMARY = {
    "extractive": "extractive (no LLM: titles and abstract sentences of the cited records)",
    "llm": MODE_LABELS.get("llm", "llm"),
}


ID_LABELS = {"orcid": "ORCID", "openalex": "OpenAlex"}
PICK = "paperbot summarize "  # + a person id: kept on one line at a terminal's width


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "summarize",
        help="a scholar's profile and recent work, every statement tied to a paper",
        description="Resolve NAME (name, alias, ORCID, OpenAlex author id or person:… id) to one indexed "
        "person and summarise their profile and recent work. When several comparable people match, lists "
        "them with their person:… ids instead; pass one back to pick exactly that person.",
    )
    parser.add_argument("name", help='the scholar, e.g. "Zhao Zhang", an ORCID, an OpenAlex author id, '
                        "or a person id such as person:3f9a0c12b4de (printed by summarize and collaborators)")
    parser.add_argument("--since", type=int, metavar="YEAR", help="recent work = papers from YEAR on (default: last 24 months)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the scripting contract)")
    parser.add_argument("--plot", type=Path, metavar="DIR", help="also write the co-author network and timeline PNGs into DIR")
    parser.set_defaults(handler=run, reads_only=True)


def _check_since(since: int | None) -> None:
    if since is not None and not 1900 <= since <= date.today().year + 1:
        raise InputError(f"--since must be a year such as {date.today().year - 2} (got {since}).")


def _papers(n: int) -> str:
    return f"{n} paper" + ("" if n == 1 else "s")


def render_ambiguous(result: AmbiguousScholarResult, *, width: int | None = None) -> str:
    count = len(result.candidates) + result.more
    lines = [hang(f"“{result.query}” matches {count} different people in the index. Which one?", width)]
    for i, c in enumerate(result.candidates, start=1):
        facts = [c.affiliation or "no affiliation on record", _papers(c.papers)]
        if c.latest_year:
            facts[-1] += f" (latest {c.latest_year})"
        line = f"{i:>2}. {c.name}" + (f" [{c.person_id}]" if c.person_id else "") + " — " + " — ".join(facts)
        if c.sample_title:
            line += f" — e.g. “{c.sample_title}”"
        if c.coauthors:
            line += f" — with {', '.join(c.coauthors)}"
        if c.ids:
            line += " — " + ", ".join(f"{k} {v}" for k, v in sorted(c.ids.items()))
        lines.append(hang(line, width))
    if result.more:
        lines.append(f"    … and {result.more} more.")
    lines += ["", "They are kept apart because their co-authors, topics or ids differ."]
    example = next((c.person_id for c in result.candidates if c.person_id), None)
    if example:
        lines.append(hang(f"Pick one in one step with the id in brackets, e.g. {glue(PICK)}{example}", width, ""))
        lines.append("(or ask again with a fuller name, an ORCID or OpenAlex author id).")
    else:
        lines.append(hang("Ask again with a fuller name, an ORCID or OpenAlex author id, or a roster alias "
                          "(paperbot scholars add NAME --openalex ID).", width, ""))
    return "\n".join(lines)


def namesake_line(result: ScholarSummaryResult) -> str | None:
    """"Also in the index: N other people named X — paperbot summarize person:… (facts); …"."""
    others = result.others_with_this_name
    if others <= 0:
        return None
    name = result.scholar.name
    same = all(c.name.casefold() == name.casefold() for c in result.namesakes)
    people = "1 other person" if others == 1 else f"{others} other people"
    head = f"Also in the index: {people} " + (f"named {name}" if same else "matching this name")
    picks: list[str] = []
    for c in result.namesakes:
        facts = [fact for fact in (c.affiliation, f"latest {c.latest_year}" if c.latest_year else None,
                                   _papers(c.papers), f"with {c.coauthors[0]}" if c.coauthors else None) if fact]
        who = f"paperbot summarize {c.person_id}" if c.person_id else c.name
        if c.person_id and not same:
            facts.insert(0, c.name)
        picks.append(f"{who} ({', '.join(facts)})")
    if not picks:
        return head + "."
    hidden = others - len(picks)
    return head + " — " + "; ".join(picks) + (f"; and {hidden} more" if hidden > 0 else "")


def _years(counts: dict[int, int]) -> str:
    return ", ".join(f"{year}: {n}" for year, n in sorted(counts.items()))


def render_summary(result: ScholarSummaryResult, *, width: int | None = None) -> str:
    scholar = result.scholar
    lines = [scholar.name]
    if scholar.ids:
        lines.append(hang("  " + "   ".join(f"{ID_LABELS.get(k, k)} {v}" for k, v in sorted(scholar.ids.items())),
                          width, "  "))
    current = scholar.affiliations.get("current", [])
    previous = scholar.affiliations.get("previous", [])
    affiliation = "; ".join(current) if current else "none on record"
    if previous:
        affiliation += f" (previously: {'; '.join(previous)})"
    lines.append(hang(f"Affiliation: {affiliation}", width))
    if result.counts_by_year:
        years = sorted(result.counts_by_year)
        span = str(years[0]) if years[0] == years[-1] else f"{years[0]}–{years[-1]}"
        head = f"Papers in the index: {result.paper_count} ({span}) — by year: "
        if width is None or len(head + _years(result.counts_by_year)) <= width:
            lines.append(head + _years(result.counts_by_year))
        else:  # the years on lines of their own, under the label
            lines.append(head.rstrip())
            lines.append(hang_items("    ", [f"{y}: {n}" for y, n in sorted(result.counts_by_year.items())], width))
    else:
        lines.append(f"Papers in the index: {result.paper_count}")
    if result.topics:
        lines.append(wrap("Topics: " + ", ".join(result.topics), width, "    "))
    if result.coauthors:
        top = ", ".join(f"{c.name} ({c.shared})" for c in result.coauthors)
        lines.append(wrap(f"Co-authors: {result.coauthor_count} in the index; most shared papers: {top}", width, "    "))
    if result.person_id:
        lines.append(hang(f"Person id: {result.person_id} (summarize and collaborators --for accept it)", width))
    namesakes = namesake_line(result)
    if namesakes:
        lines.append(hang(namesakes.replace(PICK, glue(PICK)), width))  # each command on one line
    lines.append("")
    if result.window_note:
        lines += [wrap(f"Note: {result.window_note}", width), ""]
    lines.append(wrap(result.summary, width))
    lines += ["", hang(f"Mode: {MODE_LABELS_SUMMARY.get(result.mode, result.mode)}", width, "      ")]
    if result.papers:
        lines += ["", "Papers:"]
        lines += [hang(citation_line(c), width) for c in result.papers]
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    from retrieval.results import AmbiguousScholarResult

    _check_since(args.since)
    if args.plot and (missing := ctx.assistant.scholars.pictures_missing()) is not None:
        raise missing  # before the summary's work, not after it
    result = ctx.assistant.scholars.summarize(args.name, since=args.since)
    if isinstance(result, AmbiguousScholarResult):
        if args.plot:
            ctx.note("No pictures: the name matches several people.")
        if args.json:
            ctx.out_json(result.model_dump(mode="json"))
        else:
            ctx.out(render_ambiguous(result, width=ctx.width))
        return 0
    if result.notice:
        ctx.note(result.notice)
    if args.plot:
        for path in ctx.assistant.scholars.render_plots(result, args.plot):
            ctx.note(f"Wrote {path}")
    if args.json:
        ctx.out_json(result.model_dump(mode="json"))
    else:
        ctx.out(render_summary(result, width=ctx.width))
    return 0
