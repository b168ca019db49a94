"""`paperbot serve`: run the Slack app (Socket Mode, or HTTP with --http)."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

from bot.commands import Subcommands
from retrieval.errors import ConfigError

if TYPE_CHECKING:
    from bot.context import CliContext

log = logging.getLogger(__name__)


def register(subparsers: Subcommands) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the Slack app (Socket Mode with SLACK_APP_TOKEN, or --http)",
        description=(
            "Answer in Slack. Socket Mode (default) needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN and no public URL. "
            "--http serves POST /slack/events (events, /paperbot, buttons) and GET /healthz, and needs "
            "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET. See docs/slack-install.md."
        ),
    )
    serve.add_argument("--http", action="store_true", help="serve Slack's HTTP requests instead of Socket Mode")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP mode: address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=3000, help="HTTP mode: port (default 3000; 0 picks a free one)")
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    from bot.slack.app import build_slack, replica_id
    from bot.slack.http_door import EVENTS_PATH
    from bot.slack.http_server import bind
    from bot.slack.replica import name_replica_in_logs

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535 (got {args.port}).")
    logging.getLogger("bot").setLevel(logging.INFO)
    replica = replica_id(ctx.settings)
    name_replica_in_logs(replica)  # before anything is built: every log line of the process names it
    runtime = build_slack(ctx.settings, ctx.assistant, http=args.http)
    me = f"paperbot [{replica}]"  # the lines of this command name the replica too
    if (missing := ctx.assistant.scholars.pictures_missing()) is not None:
        ctx.note(f"{me}: scholar summaries go without pictures: {missing}")
    _stop_on_sigterm()
    handler = None
    try:
        threading.Thread(target=_warm_up, args=(ctx,), name="paperbot-warmup", daemon=True).start()
        if args.http:
            try:
                sock = bind(args.host, args.port)
            except OSError as exc:
                raise ConfigError(f"Cannot listen on {args.host}:{args.port} ({exc.strerror or exc}).",
                                  hint="Pick another --port or stop the process using it.") from None
            server = runtime.http_server()
            host, port = sock.getsockname()[:2]
            runtime.scheduler.start()
            runtime.replica.start()
            ctx.note(f"{me}: listening on http://{host}:{port}{EVENTS_PATH} (HTTP mode; Ctrl-C stops)")
            # uvicorn takes SIGINT/SIGTERM while it runs: it stops accepting, lets requests in flight
            # finish, then re-raises the signal, which lands below as KeyboardInterrupt.
            server.run(sockets=[sock])
            ctx.note(f"{me}: stopping")
        else:
            handler = runtime.socket_mode_handler()
            handler.connect()
            runtime.scheduler.start()
            runtime.replica.start()
            ctx.note(f"{me}: connected to Slack in Socket Mode (Ctrl-C stops)")
            threading.Event().wait()
    except KeyboardInterrupt:
        ctx.note(f"{me}: stopping")
    finally:
        if handler is not None:
            handler.close()
        runtime.close()  # the work queue, the alert scheduler, the stores
    return 0


def _warm_up(ctx: CliContext) -> None:
    """Open the index before the first question arrives (errors surface on that question)."""
    try:
        ctx.assistant.records.count()
    except Exception:
        log.warning("the index could not be opened at start-up", exc_info=True)


def _stop_on_sigterm() -> None:
    """Treat SIGTERM (systemd, docker stop) like Ctrl-C so workers and stores close cleanly."""
    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
