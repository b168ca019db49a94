"""`paperbot collaborators TOPIC`: who works on a topic, with the papers that make the case."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from bot.render import citation_line, hang, wrap

if TYPE_CHECKING:
    from bot.context import CliContext
    from retrieval.results import Citation, CollaboratorsResult


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "collaborators",
        help="people ranked by expertise on a topic, each with the papers that justify it",
        description="Rank the indexed authors by their papers on TOPIC (several strong papers beat one "
        "hit; recent and first/last-author papers count more). Each person is shown with their person:… id, "
        "which `paperbot summarize` and --for accept.",
    )
    parser.add_argument("topic", help='what to find people for, e.g. "optical interconnects"')
    parser.add_argument("--for", dest="for_name", metavar="NAME",
                        help="leave this person out (the one looking for collaborators); a name, an ORCID, "
                        "an OpenAlex author id or a person id such as person:3f9a0c12b4de")
    parser.add_argument("--new-only", action="store_true", help="with --for: also leave out their existing co-authors")
    parser.add_argument("--limit", type=int, default=10, metavar="N", help="how many people to list (default 10, at most 50)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the scripting contract)")
    parser.set_defaults(handler=run, reads_only=True)


def render_collaborators(result: CollaboratorsResult, *, for_name: str | None = None, new_only: bool = False,
                         width: int | None = None) -> str:
    if not result.scholars:
        return result.notice or "Nobody in the index has a paper on this topic."
    heading = f"People working on “{result.topic}”"
    if for_name:
        heading += f" (leaving out {for_name}" + (" and their co-authors)" if new_only else ")")
    lines = [hang(heading + ":", width), ""]
    papers: dict[int, Citation] = {}
    for rank, scholar in enumerate(result.scholars, start=1):
        where = scholar.affiliation or "no affiliation on record"
        refs = "".join(f"[{c.n}]" for c in scholar.papers)
        who = scholar.name + (f" [{scholar.person_id}]" if scholar.person_id else "")
        lines.append(hang(f"{rank:>2}. {who} — {where} — score {scholar.score:.2f} {refs}", width))
        lines.append(wrap(f"    {scholar.reason}", width, indent="    "))
        for citation in scholar.papers:
            papers.setdefault(citation.n, citation)
    lines += ["", "Papers:"]
    lines += [hang(citation_line(papers[n]), width) for n in sorted(papers)]
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    result = ctx.assistant.scholars.collaborators(args.topic, for_name=args.for_name, new_only=args.new_only, limit=args.limit)
    if result.notice and (args.json or result.scholars):  # with nobody listed, the text result is the notice
        ctx.note(result.notice)
    if args.json:
        ctx.out_json(result.model_dump(mode="json"))
    else:
        ctx.out(render_collaborators(result, for_name=result.for_person or args.for_name, new_only=args.new_only,
                                     width=ctx.width))
    return 0
