"""The `paperbot` command line: a thin door onto ``retrieval.assistant``.

Each command lives in ``bot/commands/<name>.py`` with ``register(subparsers)``; this module
only builds the parser, the settings and the context, and turns errors into one line.
Building the parser imports no heavy module (``tests/cli/test_import_cost.py``): each command
imports what it uses when it runs, so ``paperbot --help`` answers at once.
Exit status: 0 success (abstaining is success), 1 unexpected error, 2 a PaperbotError
(bad input, configuration, a source or the index unavailable), 130 interrupted, 141 the reader
of stdout went away (``| head``).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import os
import sys
import traceback
import uuid
from collections.abc import Sequence
from pathlib import Path

from retrieval.errors import PaperbotError

COMMAND_MODULES = (
    "bot.commands.ask",
    "bot.commands.ingest",
    "bot.commands.demo",
    "bot.commands.records",
    "bot.commands.remove",
    "bot.commands.scholars",
    "bot.commands.sync",
    "bot.commands.fetch",
    "bot.commands.summarize",
    "bot.commands.collaborators",
    "bot.commands.serve",
    "bot.commands.db",
    "bot.commands.worker",
)

QUIET_LIBRARIES = ("bm25s", "chromadb", "httpx", "sentence_transformers", "onnxruntime")
# Commands that may run for long or write much keep the cyclic garbage collector (see main).
COLLECTING_COMMANDS = frozenset({"serve", "ingest", "fetch", "sync", "demo", "doctor", "remove", "worker"})

log = logging.getLogger("paperbot")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paperbot",
        description="Cited answers, scholar summaries and collaborator finding over your indexed papers.",
        epilog="Settings come from the environment and .env (see .env.example); PAPERBOT_DATA_DIR picks the installation.",
    )
    parser.add_argument("--version", action="version", version=f"paperbot {_installed_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    for command_parser in subparsers.choices.values():  # for usage errors in the command's own words
        command_parser.set_defaults(command_parser=command_parser)
    return parser


def parse_arguments(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parser.parse_args``, except that an option the command does not know is reported with
    that command's usage (`paperbot ask --bogus`: the usage of `ask`, not of `paperbot`)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        owner: argparse.ArgumentParser = getattr(args, "command_parser", None) or parser
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _installed_version() -> str:
    """The installed distribution's version (``pyproject.toml``), or "unknown" when run from a bare tree."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("paperbot")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _report_unexpected(exc: BaseException, data_dir: Path | None) -> str:
    """Log the traceback under a reference id; return the short line shown to the user."""
    ref = uuid.uuid4().hex[:8]
    detail = "".join(traceback.format_exception(exc))
    where = "stderr"
    if data_dir is not None:
        try:
            log_dir = data_dir / "logs"
            log_dir.mkdir(parents=True, exist_ok=True)
            with (log_dir / "paperbot.log").open("a", encoding="utf-8") as handle:
                handle.write(f"--- ref {ref}\n{detail}\n")
            where = str(log_dir / "paperbot.log")
        except OSError:
            pass
    if where == "stderr":
        sys.stderr.write(detail)
    return f"paperbot: unexpected error (ref {ref}); details in {where}. Please report it with that reference."


def _silence_stdout() -> None:
    """Point stdout at the null device, so that flushing it at exit raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (a caller's StringIO)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    from bot.commands.ingest import rewrite_fetch_argv

    args_list = rewrite_fetch_argv(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args = parse_arguments(parser, args_list)
    from bot.context import CliContext  # after parsing: --help and usage errors need neither
    from retrieval.config import load_settings

    own_process = argv is None  # the console script, not a caller (a test) sharing its process
    if own_process and args.command not in COLLECTING_COMMANDS:
        # A short command builds some 100,000 long-lived objects (the modules of chromadb,
        # pydantic, numpy...) and little garbage: passes over them cost 15-25 % of a search.
        gc.disable()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for chatty in QUIET_LIBRARIES:  # libraries that set their own loggers to DEBUG/INFO
        logging.getLogger(chatty).setLevel(logging.WARNING)
    data_dir: Path | None = None
    try:
        settings = load_settings()
        if prepare := getattr(args, "prepare", None):
            prepare(args, settings)  # what a command starts before its slow imports (``ingest``: its encoder)
        data_dir = settings.data_dir
        ctx = CliContext(settings=settings)
        if getattr(args, "reads_only", False) and ctx.lacks_data_dir():
            ctx = ctx.over_empty_data_dir()  # says so; answers as over an empty index, creating nothing
        return int(args.handler(args, ctx) or 0)
    except PaperbotError as exc:
        from bot.render import visible

        sys.stderr.write(f"paperbot: {visible(str(exc))}\n")
        return 2
    except BrokenPipeError:  # the reader went away (`paperbot export | head`): nothing more to say
        _silence_stdout()
        return 141  # as a shell reports a pipe's writer stopped by SIGPIPE
    except KeyboardInterrupt:
        sys.stderr.write("paperbot: interrupted; finished batches are kept, re-run to complete.\n")
        return 130
    except Exception as exc:  # noqa: BLE001 - the global handler: log with a reference, show one line
        sys.stderr.write(_report_unexpected(exc, data_dir) + "\n")
        return 1
    finally:
        if own_process:
            gc.freeze()  # the process ends: no collection over everything it built (0.1-0.3 s)


if __name__ == "__main__":
    raise SystemExit(main())
