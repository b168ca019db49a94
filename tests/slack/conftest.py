"""Fixtures for the Slack tests: a real Assistant over a small real index, the Web API stand-in,
and the Bolt app served over HTTP on 127.0.0.1."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.slack.app import DEFAULT_LIMITS, SlackRuntime, build_slack
from bot.slack.http_door import DoorLimits
from bot.slack.http_server import RunningServer
from retrieval.assistant import Assistant
from retrieval.config import Settings
from tests.slack import namesakes
from tests.slack.slack_requests import SlackSender
from tests.slack.stand_in import SlackStandIn
from tests.support.model_cache import link_model_cache
from tests.support.patience import patience

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slack"
RECORDS = FIXTURES / "records.jsonl"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-1111-2222-testtokenvalue"
APP_TOKEN = "xapp-1-A0TEST-3333-testappvalue"

_LEAKY_ENV = (
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
    "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET",
    "SLACK_API_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """slack_sdk honours proxy variables (not NO_PROXY); Bolt reads SLACK_* itself."""
    for name in _LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings isolated from the environment and any .env file (no LLM).

    The model's checks before an answer are off: the Slack tests script the model's reply to
    the answer call (the checks are the chain's, tested in ``tests/answers/test_model_checks.py``).
    """
    values: dict[str, Any] = {"data_dir": data_dir, "openai_api_key": None, "openai_base_url": None,
                              "llm_field_terms": False, "llm_judge_relevance": False}
    values.update(overrides)
    return Settings(_env_file=None, **values)


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with the 22 fixture records ingested (built once per session)."""
    data_dir = link_model_cache(tmp_path_factory.mktemp("slack-index"))
    builder = Assistant(make_settings(data_dir), chat_model=None)
    report = builder.library.ingest_files([RECORDS])
    assert len(report.added) == 22, report
    builder.index.close()
    return data_dir


@pytest.fixture(scope="session")
def assistant(index_dir: Path) -> Assistant:
    """The real facade over the small index, extractive (no chat model)."""
    return Assistant(make_settings(index_dir), chat_model=None)


@pytest.fixture(scope="session")
def namesake_assistant(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Assistant]:
    """The real facade over a small index with namesakes (``tests/slack/namesakes.py``): two
    comparable "Wei Zhang", and one prolific "Lena Fischer" next to two with one paper each."""
    records = namesakes.write_records(tmp_path_factory.mktemp("namesake-records") / "namesakes.jsonl")
    core = Assistant(make_settings(link_model_cache(tmp_path_factory.mktemp("namesake-index"))), chat_model=None)
    report = core.library.ingest_files([records])
    assert len(report.added) == len(namesakes.RECORDS), report
    yield core
    core.index.close()


@pytest.fixture
def index_copy(index_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the index data dir (for a process of its own)."""
    target = tmp_path / "data"
    shutil.copytree(index_dir, target, symlinks=True)  # the encoder cache stays a link
    return target


@pytest.fixture
def stand_in() -> Iterator[SlackStandIn]:
    server = SlackStandIn().start()
    yield server
    server.stop()


@dataclass
class Bot:
    """The app under test, served by uvicorn on 127.0.0.1, with its sender and the stand-in."""

    runtime: SlackRuntime
    server: RunningServer
    sender: SlackSender
    api: SlackStandIn
    settings: Settings
    sleeps: list[float]

    def idle(self, timeout: float = 20.0) -> None:
        """Wait until every acknowledged event was dispatched, the work queue is empty and nothing
        runs (no sleeps: polled); ``timeout`` is scaled by the host's ``PAPERBOT_TESTS_TIME_SCALE``."""
        queue = self.runtime.deps.queue
        done = threading.Event()

        def check() -> bool:
            return self.server.door.pending_events() == 0 and queue.waiting() == 0 and queue.busy() == 0

        deadline = threading.Timer(patience(timeout), done.set)
        deadline.start()
        try:
            while not check():
                if done.wait(0.02):
                    raise AssertionError("the work queue did not drain")
        finally:
            deadline.cancel()


BotFactory = Callable[..., Bot]


@pytest.fixture
def make_bot(stand_in: SlackStandIn, assistant: Assistant, tmp_path: Path) -> Iterator[BotFactory]:
    """Build and serve an app; keyword arguments override settings (or pass ``core=``, or the
    door's ``limits=``). Without ``core``, each bot's facade has its own data dir (the Slack
    state, the follows and their alerts queue: ``Assistant.follows``) over the shared index."""
    started: list[tuple[SlackRuntime, RunningServer]] = []

    def start(*, core: Assistant | None = None, clock: Callable[[], float] | None = None,
              sleep: Callable[[float], None] | None = None, limits: DoorLimits = DEFAULT_LIMITS,
              **overrides: Any) -> Bot:
        settings = make_settings(
            tmp_path / f"bot{len(started)}", slack_bot_token=BOT_TOKEN, slack_signing_secret=SECRET,
            slack_api_url=stand_in.api_url, **overrides,
        )
        sleeps: list[float] = []
        extra: dict[str, Any] = {"sleep": sleep or sleeps.append}  # throttling waits are recorded, not slept
        if clock is not None:
            extra["clock"] = clock
        facade = core or Assistant(settings, index=assistant.index, chat_model=None)
        runtime = build_slack(settings, facade, http=True, **extra)
        server = runtime.start_http("127.0.0.1", 0, limits=limits)
        started.append((runtime, server))
        sender = SlackSender(server.events_url, SECRET, bot_user_id=stand_in.bot_user_id, team=stand_in.team_id)
        return Bot(runtime=runtime, server=server, sender=sender, api=stand_in, settings=settings, sleeps=sleeps)

    yield start
    for runtime, server in started:
        server.shutdown()
        runtime.close()


@pytest.fixture
def bot(make_bot: BotFactory) -> Bot:
    return make_bot()
