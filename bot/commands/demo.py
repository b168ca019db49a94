"""`paperbot demo`: index the bundled sample corpus (once) and answer an example question."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from bot.render import render_answer

if TYPE_CHECKING:
    from bot.context import CliContext

SAMPLE_FILE = "arxiv_sample.jsonl"
DEFAULT_QUESTION = "Which papers use large language models to generate unit tests?"
META_KEY = "demo_sample_digest"


def sample_path() -> Path:
    """The sample corpus shipped inside the package (CC0 arXiv metadata)."""
    return Path(str(resources.files("retrieval.sample") / SAMPLE_FILE))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="index the bundled sample corpus (once) and answer an example question")
    parser.add_argument("--question", default=DEFAULT_QUESTION, help="the question to ask after indexing")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON (same contract as ask --json)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    from bot.commands.ingest import print_report

    path = sample_path()
    assistant = ctx.assistant
    if assistant.ingested_before(path, META_KEY):
        ctx.note(f"Sample corpus already indexed in {ctx.settings.data_dir} ({assistant.count():,} records).")
    else:
        ctx.note(f"Indexing the sample corpus into {ctx.settings.data_dir} (first run only) ...")
        with ctx.progress("Indexing sample", total=None) as update:
            report = assistant.ingest_files([path], progress=update)
        assistant.mark_ingested(path, META_KEY)
        print_report(report, ctx, as_json=False, what="Sample corpus")
        ctx.out()
    result = ctx.assistant.ask(args.question)
    if result.notice:
        ctx.note(result.notice)
    if args.json:
        ctx.out_json(result.model_dump(mode="json"))
    else:
        ctx.out(f"Q: {args.question}")
        ctx.out(render_answer(result, width=ctx.width))
        ctx.out()
        ctx.out('Try your own: paperbot ask "..."   (paperbot --help lists every command)')
    return 0
