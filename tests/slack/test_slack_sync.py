"""``/paperbot sync`` without a job queue: who may start one, one message with the progress then
the outcome, one sync at a time, and the new papers reaching the follow alerts.

The roster's sources are a local server replaying recorded arXiv/OpenAlex/Crossref responses
(``tests/ingest/recorded.py``); the app runs over real HTTP with the Web API stand-in. The
app's clock advances 100 s per reading, so every progress step is shown (no throttling waits).
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from retrieval.assistant import Assistant
from tests.ingest.recorded import (
    DEL_MAESTRO,
    FENNER,
    FENNER_ORCID,
    IGNORED_PARAMS,
    crossref_url,
    replay,
    roster_recordings,
)
from tests.slack.conftest import Bot, BotFactory, make_settings
from tests.sources.replay import Recording, Replay, ReplayServer, request_key
from tests.support.model_cache import link_model_cache

SYNCER = "USYNC0001"
OTHER_SYNCER = "USYNC0002"
CHANNEL = "CGENERAL1"


class HoldingReplay(Replay):
    """Holds the answer to one request until ``release`` is set; ``reached`` once it arrived."""

    def __init__(self, recordings: Iterable[Recording], *, hold: str) -> None:
        super().__init__(recordings, ignore_params=IGNORED_PARAMS)
        self._held = request_key("GET", hold, self.ignore)
        self.reached = threading.Event()
        self.release = threading.Event()

    def lookup(self, method: str, url: str) -> Recording | None:
        if request_key(method, url, self.ignore) == self._held and not self.release.is_set():
            self.reached.set()
            self.release.wait(timeout=120)
        return super().lookup(method, url)


def source_settings(url: str) -> dict[str, object]:
    return {"arxiv_url": f"{url}/api/query", "openalex_url": url, "crossref_url": url, "arxiv_delay": 0,
            "http_max_retries": 0}


@pytest.fixture
def sources() -> Iterator[ReplayServer]:
    with ReplayServer(replay([])) as server:
        server.replay = replay(roster_recordings(server.url))
        yield server


def _syncing_bot(make_bot: BotFactory, server: ReplayServer, data_dir: Path, **overrides: object) -> Bot:
    core = Assistant(make_settings(link_model_cache(data_dir), **source_settings(server.url)), chat_model=None)
    core.roster.add(FENNER, orcid=FENNER_ORCID)
    core.roster.add(DEL_MAESTRO)
    ticks = itertools.count(0, 100)
    return make_bot(core=core, clock=lambda: float(next(ticks)), **overrides)


def _command(bot: Bot, text: str, user: str, name: str) -> str:
    """``/paperbot TEXT`` by ``user``; the text of its ephemeral answer (response_url) named ``name``, if any."""
    response = bot.sender.command(text, user=user, channel=CHANNEL, response_url=bot.api.response_url(name))
    assert response.status_code == 200
    return response.text


def _respond_text(bot: Bot, name: str) -> str:
    [reply] = bot.api.wait_calls("respond", where=lambda call: call.path.endswith("/" + name))
    return reply.text()


def _outcomes(bot: Bot, count: int = 1) -> None:
    """Wait until ``count`` messages ended with a sync's outcome, and the app is idle (the slash
    command's listener runs after its ack, so the work queue alone can look idle too early)."""
    bot.api.wait_for(lambda: sum(str(message.get("text")).startswith("Sync finished")
                                 for message in bot.api.messages[CHANNEL].values()) >= count,
                     timeout=180, what=f"{count} sync outcome(s)")
    bot.idle(timeout=180)


def _sync_message(bot: Bot) -> str:
    """The ts of the one top-level message that ended with a sync's outcome."""
    finished = [ts for ts, message in bot.api.messages[CHANNEL].items()
                if not message.get("thread_ts") and str(message.get("text")).startswith("Sync finished")]
    assert len(finished) == 1, bot.api.final_texts(CHANNEL)
    return finished[0]


@pytest.mark.slow
def test_a_sync_started_in_slack_shows_its_progress_then_its_outcome_and_feeds_the_follows(
        make_bot: BotFactory, sources: ReplayServer, tmp_path: Path) -> None:
    bot = _syncing_bot(make_bot, sources, tmp_path / "core", slack_sync_users=[SYNCER])
    _command(bot, "follow scholar Martin Fenner", SYNCER, "follow")
    assert "Following scholar" in _respond_text(bot, "follow")

    _command(bot, "sync", SYNCER, "sync")
    _outcomes(bot)
    ts = _sync_message(bot)
    shown = [call.text() for call in bot.api.calls_to("chat.update") if call.params.get("ts") == ts]
    progress = [text for text in shown if "scholars done" in text]
    assert any("0/2 scholars done" in text for text in progress), shown
    assert any("1/2 scholars done" in text for text in progress), shown
    assert any("2/2 scholars done" in text for text in progress), shown
    final = shown[-1]
    assert "Sync finished" in final and "2 scholar(s)" in final
    assert f"<@{SYNCER}> started a sync" not in final  # the outcome replaced the progress
    new = int(re.search(r"(\d+) new paper\(s\)", final).group(1))  # type: ignore[union-attr]
    assert new > 0 and FENNER in final and DEL_MAESTRO in final
    assert sources.replay.unmatched == []
    assert bot.runtime.scheduler.tick() >= 1  # the follow alert of Fenner's new papers, as after a CLI sync
    alerts = [call.text() for call in bot.api.calls_to("chat.postMessage") if "New paper" in call.text()]
    assert alerts and "Martin Fenner" in alerts[0]


@pytest.mark.slow
def test_a_failed_source_is_named_with_what_to_do_next(make_bot: BotFactory, tmp_path: Path) -> None:
    with ReplayServer(replay([])) as server:
        missing = crossref_url(server.url, f"orcid:{FENNER_ORCID}")
        server.replay = replay([recording for recording in roster_recordings(server.url)
                                if request_key("GET", recording.url, frozenset(IGNORED_PARAMS))
                                != request_key("GET", missing, frozenset(IGNORED_PARAMS))])
        bot = _syncing_bot(make_bot, server, tmp_path / "core", slack_sync_users=["*"])
        _command(bot, "sync", "UANYONE01", "sync")
        _outcomes(bot)
    final = bot.api.channel_messages(CHANNEL)[-1]
    text = str(final["blocks"])
    assert "Sync finished" in text and ":warning:" in text
    assert "crossref" in text.lower() and "Run `/paperbot sync` again later" in text


def test_people_not_allowed_are_told_whom_to_ask(make_bot: BotFactory) -> None:
    bot = make_bot(slack_sync_users=[SYNCER, OTHER_SYNCER])
    _command(bot, "sync", "UALICE01", "refused")
    text = _respond_text(bot, "refused")
    assert f"<@{SYNCER}>" in text and f"<@{OTHER_SYNCER}>" in text and "ask one of them" in text
    assert not bot.api.calls_to("chat.postMessage")

    off = make_bot()  # the default: nobody starts a sync from Slack
    _command(off, "sync", SYNCER, "off")
    assert "PAPERBOT_SLACK_SYNC_USERS" in _respond_text(off, "off")
    assert not off.api.calls_to("chat.postMessage")


def test_help_lists_sync(make_bot: BotFactory) -> None:
    bot = make_bot()
    _command(bot, "help", "UALICE01", "help")
    assert "/paperbot sync" in bot.sender.command("help", response_url=bot.api.response_url("h")).text


@pytest.mark.slow
def test_a_second_sync_while_one_runs_points_at_it(make_bot: BotFactory, tmp_path: Path) -> None:
    with ReplayServer(replay([])) as server:
        holding = HoldingReplay(roster_recordings(server.url), hold=crossref_url(server.url, f"orcid:{FENNER_ORCID}"))
        server.replay = holding
        bot = _syncing_bot(make_bot, server, tmp_path / "core", slack_sync_users=[SYNCER, OTHER_SYNCER])
        try:
            _command(bot, "sync", SYNCER, "first")
            assert holding.reached.wait(120)  # the first sync is in the middle of its work
            _command(bot, "sync", OTHER_SYNCER, "second")
            second = _respond_text(bot, "second")
        finally:
            holding.release.set()
        _outcomes(bot)
    ts = _sync_message(bot)  # one sync, one message
    assert "already running" in second and f"<@{SYNCER}>" in second
    assert f"https://slack.com/archives/{CHANNEL}/p{ts.replace('.', '')}" in second
    finished = [text for text in bot.api.final_texts(CHANNEL) if "Sync finished" in text]
    assert len(finished) == 1

    _command(bot, "sync", OTHER_SYNCER, "third")  # once it finished, another may start
    _outcomes(bot, 2)
    assert len([text for text in bot.api.final_texts(CHANNEL) if "Sync finished" in text]) == 2
