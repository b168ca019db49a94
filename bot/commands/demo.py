"""`paperbot demo`: index the bundled sample corpus (once) into its own data dir and answer an
example question there.

The sample goes into ``Settings.demo_dir`` (``PAPERBOT_DEMO_DATA_DIR``, default beside the data
dir), never into the group's own index: demo papers would otherwise be cited in its answers
and its authors ranked as collaborators. An index an earlier version filled with the sample
is pointed out, with the command that takes the sample back out (`paperbot remove --source demo`).
"""

from __future__ import annotations

import argparse
import shlex
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from bot.render import render_answer

if TYPE_CHECKING:
    from bot.context import CliContext

SAMPLE_FILE = "arxiv_sample.jsonl"
DEFAULT_QUESTION = "Which papers use large language models to generate unit tests?"
META_KEY = "demo_sample_digest"


def sample_path() -> Path:
    """The sample corpus shipped inside the package (CC0 arXiv metadata)."""
    return Path(str(resources.files("retrieval.sample") / SAMPLE_FILE))


def register(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "demo", help="index the bundled sample corpus (once, in its own data dir) and answer an example question")
    parser.add_argument("--question", default=DEFAULT_QUESTION, help="the question to ask after indexing")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON (same contract as ask --json)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    from bot.commands.ingest import print_report
    from bot.context import CliContext

    _point_out_old_demo(ctx)
    demo = CliContext(settings=ctx.settings.for_demo(), stdout=ctx.stdout, console=ctx.console)
    path = sample_path()
    assistant = demo.assistant
    where = demo.settings.data_dir
    if assistant.library.ingested_before(path, META_KEY):
        ctx.note(f"Sample corpus already indexed in {where} ({assistant.records.count():,} records; "
                 "the demo's own data dir, not yours).")
    else:
        ctx.note(f"Indexing the sample corpus into {where} (the demo's own data dir, not yours; first run only) ...")
        with ctx.progress("Indexing sample", total=None) as update:
            report = assistant.library.ingest_files([path], progress=update, mark=META_KEY)
        if args.json:  # stdout is the answer's JSON alone
            ctx.note(f"Sample corpus: {report.total:,} records indexed.")
        else:
            print_report(report, ctx, as_json=False, what="Sample corpus")
            ctx.out()
    result = assistant.ask(args.question)
    if result.notice:
        ctx.note(result.notice)
    if args.json:
        ctx.out_json(result.model_dump(mode="json"))
    else:
        ctx.out(f"Q: {args.question}")
        ctx.out(render_answer(result, width=ctx.width))
        ctx.out()
        ctx.out(f'Ask the sample yourself: PAPERBOT_DATA_DIR={shlex.quote(str(where))} paperbot ask "..."')
        ctx.out("Index your own papers: paperbot ingest FILE ...   (paperbot --help lists every command)")
    return 0


def _point_out_old_demo(ctx: CliContext) -> None:
    """Say so when the user's own data dir holds the sample (an earlier demo put it there)."""
    if not ctx.settings.records_path.exists():  # no index there: not even the data dir is made
        return
    if ctx.assistant.library.holds_marked_file(META_KEY):
        ctx.note(f"Your data dir {ctx.settings.data_dir} holds the sample corpus from an earlier demo; its papers "
                 "show up in your answers. Take them out with: paperbot remove --source demo")
