"""Build the Slack app: Web API client, Bolt ``App``, middleware, listeners, the two doors.

Socket Mode (``SLACK_APP_TOKEN``) needs no public URL; HTTP mode serves ``/slack/events``
(events, the slash command and interactivity share it) and ``/healthz`` on uvicorn
(``bot/slack/http_door.py``: size, time, signature and payload-shape checks before Bolt sees
a request; Socket Mode sorts payloads the same way, ``bot/slack/socket_door.py``), and
requires ``SLACK_SIGNING_SECRET``. ``SLACK_API_URL`` replaces the Web API base URL (proxies, tests).

Concurrency: Bolt acknowledges every request at once and runs our listeners on a small pool;
listeners only parse and enqueue. Slow work runs on the ``WorkQueue`` with
``PAPERBOT_SLACK_WORKERS`` threads, so several slow answers never block an ack or each other.
The Web API client retries Slack's HTTP 429 (honouring ``Retry-After``), 5xx and dropped
connections with slack_sdk's retry handlers.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.error import URLError

import uvicorn
from slack_bolt import App, BoltRequest, BoltResponse
from slack_bolt.error import BoltError
from slack_bolt.logger import get_bolt_logger
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from bot.slack.access import access_middleware
from bot.slack.alerts import AlertScheduler, FollowAlerts, claim_each_period
from bot.slack.blocks import apology_text
from bot.slack.dedupe import StoredDeduper, dedupe_middleware
from bot.slack.deliveries import Deliveries, Delivery
from bot.slack.deps import SlackDeps
from bot.slack.http_door import DoorLimits, SlackDoor
from bot.slack.http_server import RunningServer, bind, uvicorn_config
from bot.slack.jobs import new_reference
from bot.slack.listeners import register_all
from bot.slack.listeners.events import listener_hold_middleware
from bot.slack.queue import WorkQueue
from bot.slack.replica import ReplicaLoop, with_heartbeat
from bot.slack.socket_door import SocketDoor
from bot.slack.store import SlackStore
from bot.slack.sync_jobs import resume_orphaned_syncs
from retrieval import JobService
from retrieval.config import Settings
from retrieval.errors import ConfigError
from retrieval.storage.members import ClusterMembers, replica_id, this_member

if TYPE_CHECKING:
    from retrieval.assistant import Assistant

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://slack.com/api"
RATE_LIMIT_RETRIES = 4
DEFAULT_LIMITS = DoorLimits()  # frozen: one shared default


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

    def __init__(self, app: App, deps: SlackDeps, credentials: SlackCredentials, scheduler: AlertScheduler,
                 replica: ReplicaLoop) -> None:
        self.app = app
        self.deps = deps
        self.credentials = credentials
        self.scheduler = scheduler
        self.replica = replica  # heartbeat and sweep; ``serve`` starts it, ``close`` stops it
        self._doors: list[SlackDoor] = []

    def http_door(self, limits: DoorLimits = DEFAULT_LIMITS) -> SlackDoor:
        """The ASGI application: ``POST /slack/events`` for Slack; ``GET /healthz`` (the process is up
        and its answers are not hung: ``ReplicaLoop.liveness_check``) for a liveness probe, and ``GET
        /readyz`` (it can answer: ``Assistant.upkeep.readiness``, and once the replica has started,
        its heartbeat: ``replica.with_heartbeat``) for a load balancer's readiness probe."""
        if not self.credentials.signing_secret:
            raise ConfigError("HTTP mode needs SLACK_SIGNING_SECRET (Basic Information > App Credentials).")
        readiness = with_heartbeat(self.deps.assistant.upkeep.readiness, self.replica)
        door = SlackDoor(self.app, self.credentials.signing_secret, limits=limits, readiness=readiness,
                         liveness=self.replica.liveness_check, deliveries=self.deps.deliveries,
                         claim_first=self.deps.store.database.backend != "sqlite")
        self._doors.append(door)
        return door

    def http_server(self, limits: DoorLimits = DEFAULT_LIMITS) -> uvicorn.Server:
        """uvicorn serving the door (``run(sockets=[bind(host, port)])``; SIGINT/SIGTERM stop it)."""
        return uvicorn.Server(uvicorn_config(self.http_door(limits)))

    def start_http(self, host: str = "127.0.0.1", port: int = 0, *,
                   limits: DoorLimits = DEFAULT_LIMITS) -> RunningServer:
        """uvicorn serving the door in a background thread; ``shutdown()`` stops it."""
        return RunningServer(self.http_door(limits), bind(host, port))

    def socket_mode_handler(self) -> SocketDoor:
        """Bolt's Socket Mode handler, sorting every payload first (``bot/slack/socket_door.py``)."""
        assert self.credentials.app_token
        door = SocketDoor(self.app, app_token=self.credentials.app_token, web_client=self.app.client)
        door.deliveries = self.deps.deliveries
        return door

    def close(self) -> None:
        for door in self._doors:
            door.close()
        self.scheduler.stop()
        self.deps.close()
        self.replica.stop()


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
    assistant: Assistant,
    *,
    http: bool,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    update_interval: float = 1.0,
    alert_poll_seconds: float | None = None,
    wall_clock: Callable[[], float] = time.time,
) -> SlackRuntime:
    """Check the settings, build the Bolt app (this calls ``auth.test``) and its dependencies;
    ``alert_poll_seconds`` None: ``PAPERBOT_ALERT_POLL_SECONDS``. ``wall_clock``: the time of the
    replica's heartbeats (``bot/slack/replica.py``) and of the scheduled sync's periods."""
    creds = credentials(settings, http=http)
    client = web_client(settings, creds.bot_token)
    _quiet_redundant_token_warning()
    try:
        app = App(
            client=client,  # carries the token, base URL and retry handlers
            # HTTP mode: the door checks the signature over the bytes Slack sent, then hands Bolt
            # the validated payload re-encoded (http_door.py), which Bolt's own check cannot verify
            request_verification_enabled=False,
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
    store = SlackStore.for_settings(settings)
    replica = replica_id(settings)
    deliveries = Deliveries(store, replica, heartbeat_seconds=settings.cluster_heartbeat_seconds, clock=wall_clock)
    deps = SlackDeps(
        settings=settings,
        assistant=assistant,
        store=store,
        queue=WorkQueue(settings.slack_workers, settings.slack_user_queue_limit),
        deduper=StoredDeduper(store),
        deliveries=deliveries,
        background=background,
        clock=clock,
        sleep=sleep,
        update_interval=update_interval,
        secrets=_secrets(settings),
    )
    app.use(dedupe_middleware(deps.deduper, deliveries))  # next: a retried refusal is not sent twice
    app.use(access_middleware(settings, client, deps.run_in_background))
    app.use(listener_hold_middleware(deliveries))  # last: only a request that reaches its listener
    register_all(app, deps)
    app.error(_log_unhandled)

    alerts = FollowAlerts(assistant, client, replica=replica)  # claims each alert: posted once across replicas
    # with a job queue the workers schedule the sync, once for the whole deployment (retrieval.jobs.schedule);
    # PAPERBOT_JOB_QUEUE without PostgreSQL is refused here (ConfigError), not a sync silently never run
    queued = settings.job_queue and JobService(assistant).queued
    sync_every = settings.sync_interval_hours * 3600 if settings.sync_interval_hours and not queued else None
    scheduler = AlertScheduler(
        alerts, poll_seconds=alert_poll_seconds or settings.alert_poll_seconds, sync_every_seconds=sync_every,
        run_sync=(lambda: assistant.fetching.sync().new_paper_ids) if sync_every else None,
        note_new=assistant.follows.note_new_papers, clock=clock,
        claim_sync=claim_each_period(store, replica, sync_every, wall_clock=wall_clock) if sync_every else None,  # once per deployment
    )
    loop = ReplicaLoop(ClusterMembers(store.database), this_member(settings, role="slack", now=wall_clock()),
                       deliveries, redispatcher(app), every=settings.cluster_heartbeat_seconds, clock=wall_clock,
                       stall_after=settings.cluster_stall_seconds,
                       also=lambda now: resume_orphaned_syncs(deps, client, now=now, dead_after=deliveries.dead_after))
    return SlackRuntime(app, deps, creds, scheduler, loop)


def redispatcher(app: App) -> Callable[[dict[str, Any], Delivery], None]:
    """Dispatch an event taken over from a stopped replica (its stored payload), then release
    the dispatch's hold of its delivery; never raises (a failure is logged with a reference)."""

    def redispatch(body: dict[str, Any], delivery: Delivery) -> None:
        try:
            app.dispatch(BoltRequest(body=json.dumps(body), headers={"content-type": "application/json"}))
        except Exception:
            reference = new_reference()
            log.exception("unexpected error answering a taken-over Slack event [ref %s]", reference)
        finally:
            delivery.release()

    return redispatch



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
