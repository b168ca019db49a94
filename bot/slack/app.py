"""Build the Slack app: Web API client, Bolt ``App``, middleware, listeners, servers.

Socket Mode (``SLACK_APP_TOKEN``) needs no public URL; HTTP mode serves ``/slack/events``
(events, the slash command and interactivity share it) and ``/healthz``, and requires
``SLACK_SIGNING_SECRET``. ``SLACK_API_URL`` replaces the Web API base URL (proxies, tests).

Concurrency: Bolt acknowledges every request at once and runs our listeners on a small pool;
listeners only parse and enqueue. Slow work runs on the ``WorkQueue`` with
``PAPERBOT_SLACK_WORKERS`` threads, so several slow answers never block an ack or each other.
The Web API client retries Slack's HTTP 429 (honouring ``Retry-After``), 5xx and dropped
connections with slack_sdk's retry handlers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from urllib.error import URLError
from urllib.parse import parse_qsl
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from slack_bolt import App, BoltRequest, BoltResponse
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_bolt.adapter.wsgi.http_request import WsgiHttpRequest
from slack_bolt.error import BoltError
from slack_bolt.logger import get_bolt_logger
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.request.internals import build_context
from slack_bolt.context import BoltContext
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from bot.slack.access import access_middleware
from bot.slack.alerts import AlertScheduler, FollowAlerts
from bot.slack.blocks import apology_text
from bot.slack.dedupe import StoredDeduper, dedupe_middleware
from bot.slack.deps import SlackDeps
from bot.slack.jobs import new_reference
from bot.slack.listeners import register_all
from bot.slack.queue import WorkQueue
from bot.slack.store import SlackStore
from retrieval.config import Settings
from retrieval.errors import ConfigError
from retrieval.follows import FollowStore

if TYPE_CHECKING:
    from retrieval.assistant import Assistant

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://slack.com/api"
EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
RATE_LIMIT_RETRIES = 4


# --- configuration ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SlackCredentials:
    """The secrets of one mode; never in a repr (so never in a log line)."""

    bot_token: str = field(repr=False)
    signing_secret: str | None = field(repr=False)
    app_token: str | None = field(repr=False)


def credentials(settings: Settings, *, http: bool) -> SlackCredentials:
    """The tokens the chosen mode needs, or a ``ConfigError`` naming each missing variable."""
    bot = settings.slack_bot_token.get_secret_value().strip() if settings.slack_bot_token else ""
    secret = settings.slack_signing_secret.get_secret_value().strip() if settings.slack_signing_secret else ""
    app_token = settings.slack_app_token.get_secret_value().strip() if settings.slack_app_token else ""
    missing = []
    if not bot:
        missing.append("SLACK_BOT_TOKEN (the xoxb- Bot User OAuth Token from OAuth & Permissions)")
    if http and not secret:
        missing.append("SLACK_SIGNING_SECRET (Basic Information > App Credentials)")
    if not http and not app_token:
        missing.append("SLACK_APP_TOKEN (an xapp- app-level token with connections:write, from Basic Information)")
    if missing:
        mode = "HTTP mode (`paperbot serve --http`)" if http else "Socket Mode (`paperbot serve`)"
        hint = "Set it in the environment or .env (see docs/slack-install.md)."
        if not http and not app_token:
            hint += " Or run `paperbot serve --http` with SLACK_SIGNING_SECRET set."
        raise ConfigError(f"{mode} needs " + " and ".join(missing) + ".", hint=hint)
    if not bot.startswith("xoxb-"):
        raise ConfigError("SLACK_BOT_TOKEN must be a bot token starting with xoxb-.",
                          hint="Copy the Bot User OAuth Token from OAuth & Permissions.")
    if not http and not app_token.startswith("xapp-"):
        raise ConfigError("SLACK_APP_TOKEN must be an app-level token starting with xapp-.",
                          hint="Create one under Basic Information > App-Level Tokens with the connections:write scope.")
    return SlackCredentials(bot_token=bot, signing_secret=secret or None, app_token=app_token or None)


def web_client(settings: Settings, token: str) -> WebClient:
    """The Web API client: configurable base URL; retries on 429, 5xx and dropped connections."""
    base = (settings.slack_api_url or DEFAULT_API_URL).rstrip("/") + "/"
    return WebClient(
        token=token,
        base_url=base,
        timeout=30,
        retry_handlers=[
            ConnectionErrorRetryHandler(max_retry_count=2),
            RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
            ServerErrorRetryHandler(max_retry_count=2),
        ],
    )


def _secrets(settings: Settings) -> tuple[str, ...]:
    values = [settings.slack_bot_token, settings.slack_app_token, settings.slack_signing_secret, settings.openai_api_key]
    return tuple(value.get_secret_value() for value in values if value is not None)


# --- the runtime -----------------------------------------------------------------------------


class SlackRuntime:
    """The built app and everything it owns; ``close()`` stops workers and closes stores."""

    def __init__(self, app: App, deps: SlackDeps, credentials: SlackCredentials, scheduler: AlertScheduler) -> None:
        self.app = app
        self.deps = deps
        self.credentials = credentials
        self.scheduler = scheduler

    def wsgi(self) -> Callable[..., Iterable[bytes]]:
        """WSGI application: ``POST /slack/events`` for Slack, ``GET /healthz`` for probes."""
        slack = _EventsHandler(self.app, path=EVENTS_PATH, signing_secret=self.credentials.signing_secret)

        def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") == HEALTH_PATH and environ.get("REQUEST_METHOD") == "GET":
                start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
                return [b"ok"]
            return slack(environ, start_response)

        return application

    def http_server(self, host: str, port: int) -> WSGIServer:
        """A threaded WSGI server bound to ``host:port`` (call ``serve_forever``)."""
        return make_server(host, port, self.wsgi(), server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)

    def socket_mode_handler(self) -> SocketModeHandler:
        assert self.credentials.app_token
        return SocketModeHandler(self.app, app_token=self.credentials.app_token, web_client=self.app.client)

    def close(self) -> None:
        self.scheduler.stop()
        self.deps.close()


class _RedundantTokenWarning(logging.Filter):
    """Drops Bolt's "`token` will be unused" warning, which is about our own correct setup.

    Bolt reads SLACK_BOT_TOKEN from the environment even when it is given a ``client``, and then
    warns that the token is unused; our client carries that same token.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_client_prioritized_and_token_skipped()


def _quiet_redundant_token_warning() -> None:
    bolt_logger = get_bolt_logger(App)
    if not any(isinstance(existing, _RedundantTokenWarning) for existing in bolt_logger.filters):
        bolt_logger.addFilter(_RedundantTokenWarning())


def build_slack(
    settings: Settings,
    assistant: "Assistant",
    *,
    http: bool,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    update_interval: float = 1.0,
    alert_poll_seconds: float = 60.0,
) -> SlackRuntime:
    """Check the settings, build the Bolt app (this calls ``auth.test``) and its dependencies."""
    creds = credentials(settings, http=http)
    client = web_client(settings, creds.bot_token)
    _quiet_redundant_token_warning()
    try:
        app = App(
            client=client,  # carries the token, base URL and retry handlers
            signing_secret=creds.signing_secret if http else None,
            request_verification_enabled=http,
            process_before_response=False,
            listener_executor=ThreadPoolExecutor(max_workers=8, thread_name_prefix="paperbot-listener"),
            raise_error_for_unhandled_request=False,
            name="paperbot",
        )
    except BoltError as exc:
        raise ConfigError(
            "Slack rejected SLACK_BOT_TOKEN (auth.test failed).",
            hint="Copy the current Bot User OAuth Token from OAuth & Permissions; reinstall the app if it was revoked.",
        ) from exc
    except (URLError, OSError) as exc:
        raise ConfigError(
            f"Cannot reach the Slack Web API at {client.base_url} ({type(exc).__name__}).",
            hint="Check the network, any proxy, and SLACK_API_URL if you set it.",
        ) from exc

    background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="paperbot-notices")
    store = SlackStore(settings.data_dir / "slack" / "state.sqlite3")
    deps = SlackDeps(
        settings=settings,
        assistant=assistant,
        store=store,
        follows=FollowStore.for_settings(settings),
        queue=WorkQueue(settings.slack_workers, settings.slack_user_queue_limit),
        deduper=StoredDeduper(store),
        background=background,
        clock=clock,
        sleep=sleep,
        update_interval=update_interval,
        secrets=_secrets(settings),
    )
    app.use(dedupe_middleware(deps.deduper))  # first: a retried refusal is not sent twice
    app.use(access_middleware(settings, client, deps.run_in_background))
    register_all(app, deps)
    app.error(_log_unhandled)

    alerts = FollowAlerts(deps, client)
    sync_every = settings.sync_interval_hours * 3600 if settings.sync_interval_hours else None
    scheduler = AlertScheduler(
        alerts, poll_seconds=alert_poll_seconds, sync_every_seconds=sync_every,
        run_sync=(lambda: assistant.sync().new_paper_ids) if sync_every else None,
        note_new=deps.follows.note_new_papers, clock=clock,
    )
    return SlackRuntime(app, deps, creds, scheduler)



def _log_unhandled(error: Exception, body: dict[str, Any]) -> BoltResponse:
    """Last resort for listener errors: log with a reference id, never show the exception.

    A slash command not acknowledged yet gets the apology as its (ephemeral) answer; anything
    else gets an empty 200 so Slack does not retry.
    """
    reference = new_reference()
    log.error("unhandled error in a Slack listener [ref %s] (%s)", reference, body.get("type") or body.get("command"),
              exc_info=error)
    if body.get("command"):
        payload = {"response_type": "ephemeral", "text": apology_text(reference)}
        return BoltResponse(status=200, body=json.dumps(payload), headers={"content-type": "application/json"})
    return BoltResponse(status=200, body="")


# --- HTTP plumbing ---------------------------------------------------------------------------


REPLAY_WINDOW = 60 * 5  # seconds; Slack's documented limit


class _EventsHandler(SlackRequestHandler):
    """Bolt's WSGI adapter, hardened.

    * The signature is checked *before* the body is parsed, so unsigned garbage costs nothing
      and never reaches a parser (Bolt parses first, then verifies: a malformed unsigned body
      became a 500 with a traceback, and a non-numeric timestamp slipped past as a 200).
    * An unreadable signed body is a 400, not a 500.
    * Bolt 1.30 treats any form body containing the substring ``payload`` as an interactivity
      post and, finding no ``payload`` field, parses it to ``{}`` (no listener matches -> 404).
      Here a form body without a ``payload`` field is parsed as the plain form it is.
    """

    def __init__(self, app: App, *, path: str, signing_secret: str | None) -> None:
        super().__init__(app, path=path)
        self._secret = signing_secret.encode("utf-8") if signing_secret else None

    def _signed(self, body: bytes, headers: dict[str, Any]) -> bool:
        """Slack's v0 signature over the raw bytes, inside the five-minute replay window.

        Computed on bytes here because slack_sdk's verifier decodes the body as UTF-8 first and
        raises on a body that is not text.
        """

        def header(name: str) -> str:
            value = headers.get(name) or ""
            return value[0] if isinstance(value, (list, tuple)) and value else str(value or "")

        timestamp, signature = header("x-slack-request-timestamp"), header("x-slack-signature")
        if self._secret is None or not timestamp.isdigit() or abs(time.time() - int(timestamp)) > REPLAY_WINDOW:
            return False
        digest = hmac.new(self._secret, b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(f"v0={digest}", signature)

    def dispatch(self, request: WsgiHttpRequest) -> BoltResponse:
        headers = request.get_headers()
        length = int(request.environ.get("CONTENT_LENGTH") or 0)
        raw = request.environ["wsgi.input"].read(length) if "wsgi.input" in request.environ else b""
        if self._secret is not None and not self._signed(raw, headers):
            return BoltResponse(status=401, body="")
        try:
            body = raw.decode("utf-8")
            bolt_request = BoltRequest(body=body, query=request.query_string, headers=headers)
        except (UnicodeDecodeError, ValueError, TypeError, AttributeError):  # signed, but unreadable
            return BoltResponse(status=400, body="")
        if not isinstance(bolt_request.body, dict):  # e.g. a JSON array
            return BoltResponse(status=400, body="")
        raw = bolt_request.raw_body
        if not bolt_request.body and raw and not raw.lstrip().startswith("{"):
            fields = dict(parse_qsl(raw, keep_blank_values=True))
            if fields and "payload" not in fields:
                bolt_request.body = fields
                bolt_request.context = build_context(BoltContext({}), fields)
        return self.app.dispatch(bolt_request)


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default listen backlog is 5: a burst of events beyond that was reset by
    # the kernel (154 of 200 in bench/load.py) and Slack would redeliver them minutes later.
    request_queue_size = 128


class _QuietHandler(WSGIRequestHandler):
    """Access log lines go to logging (debug), not stderr."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        log.debug("%s - " + format, self.address_string(), *args)
