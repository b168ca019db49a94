"""Dependencies failing under a running Slack app: Chroma server down and back, Slack 429/500.

One running installation for the module: a real ``chroma run`` server (the index engineer's
``ChromaServer``), a record store with the arXiv part of the corpus, the real ``Assistant`` and
the Slack app in HTTP mode on 127.0.0.1, posting to the Slack engineer's Web API stand-in.
Questions arrive as correctly signed ``app_mention`` events. Nothing is restarted between a
fault and the recovery: the same app answers the next question.

The Slack engineer's own tests cover one 429 and one 500; here the failures persist: a run of
429s, 5xx beyond the client's retries, and cosmetic calls failing. The waits slack_sdk asks for
between retries are recorded and counted, not slept (``slack_retry_waits``, ``tests/conftest.py``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.slack.app import RATE_LIMIT_RETRIES, SlackRuntime, build_slack
from retrieval.assistant import Assistant
from retrieval.index.encoders.base import Encoder
from retrieval.index.paper_index import PaperIndex
from tests.index.conftest import ChromaServer
from tests.reliability.helpers import FAKE_SECRETS, make_settings, run_main, secrets_found
from tests.slack.helpers import posts_in_thread
from tests.slack.slack_requests import SlackSender
from tests.slack.stand_in import Call, SlackStandIn
from tests.support.patience import patience

pytestmark = pytest.mark.slow

QUESTION = "pebble game sparse graph decompositions"
TITLE = "Sparsity-certifying Graph Decompositions"


@dataclass
class Installation:
    chroma: ChromaServer
    assistant: Assistant
    runtime: SlackRuntime
    api: SlackStandIn
    sender: SlackSender
    data_dir: Path

    def idle(self, timeout: float = 30.0) -> None:
        """Wait until the work queue is empty (polled on the stand-in's condition, no sleeps), for
        ``timeout`` seconds times the host's ``PAPERBOT_TESTS_TIME_SCALE``."""
        queue = self.runtime.deps.queue
        done = threading.Event()
        timer = threading.Timer(patience(timeout), done.set)
        timer.start()
        try:
            while queue.waiting() or queue.busy():
                if done.wait(0.02):
                    raise AssertionError("the work queue did not drain")
        finally:
            timer.cancel()


@pytest.fixture(scope="module")
def installation(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder, corpus: list[Path],
                 model_cache: Path) -> Iterator[Installation]:
    root = tmp_path_factory.mktemp("service")
    chroma = ChromaServer(root / "chroma-server")
    chroma.start()
    api = SlackStandIn().start()
    settings = make_settings(
        root / "data", chroma_url=chroma.url, slack_api_url=api.api_url,
        slack_bot_token=FAKE_SECRETS["SLACK_BOT_TOKEN"], slack_signing_secret=FAKE_SECRETS["SLACK_SIGNING_SECRET"],
        openai_api_key=FAKE_SECRETS["OPENAI_API_KEY"], openai_base_url="http://127.0.0.1:9/v1",  # LLM down too
        llm_max_retries=0, llm_timeout=1,
    )
    assistant = Assistant(settings, index=PaperIndex.open(settings, encoder))
    report = assistant.library.ingest_files([corpus[0]])
    assert len(report.added) == 60, report.as_dict()
    runtime = build_slack(settings, assistant, http=True)
    server = runtime.start_http("127.0.0.1", 0)
    sender = SlackSender(server.events_url, FAKE_SECRETS["SLACK_SIGNING_SECRET"],
                         bot_user_id=api.bot_user_id, team=api.team_id)
    try:
        yield Installation(chroma, assistant, runtime, api, sender, settings.data_dir)
    finally:
        server.shutdown()
        runtime.close()
        api.stop()
        chroma.stop()
        assistant.index.close()


def _final_state(api: SlackStandIn, ts: str) -> Call | None:
    """The last update of the reply in the thread of ``ts`` once it is final (answer or error)."""
    with api._changed:  # the stand-in's lock: messages are written by its server thread
        replies = {m["ts"] for m in api.messages["CGENERAL1"].values() if m.get("thread_ts") == ts}
    updates = [c for c in api.calls_to("chat.update") if c.status == 200 and c.params.get("ts") in replies]
    if updates and any(mark in updates[-1].text() for mark in ("paperbot_vote_up", ":warning:")):
        return updates[-1]
    return None


def _ask(site: Installation, text: str = QUESTION) -> tuple[str, Call]:
    """Mention the bot; return the thread ts and the reply's final state (answer or error)."""
    response, ts = site.sender.mention(text)
    assert response.status_code == 200
    final = site.api.wait_for(lambda: _final_state(site.api, ts), timeout=60, what="the final reply")
    site.idle()
    return ts, final


def test_chroma_down_gives_a_clear_error_then_recovers_without_restart(
    installation: Installation, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    site = installation
    _, answered = _ask(site)
    assert TITLE in answered.text() and "paperbot_vote_up" in answered.text()

    site.chroma.stop()
    try:
        _, failed = _ask(site)
        assert "Cannot reach the Chroma server" in failed.text()
        assert "paperbot_vote_up" not in failed.text() and "Traceback" not in failed.text()
        cli = run_main("ask", QUESTION, data_dir=site.data_dir, PAPERBOT_CHROMA_URL=site.chroma.url)
        assert cli.code == 2
        assert cli.stderr.strip().splitlines()[-1].startswith(
            f"paperbot: Cannot reach the Chroma server at {site.chroma.url}."
        ), cli.stderr
        _, still = _ask(site)  # still down: the same clear error, the app is still serving
        assert "Cannot reach the Chroma server" in still.text()
    finally:
        site.chroma.start()  # same port, same data

    _, recovered = _ask(site)
    assert TITLE in recovered.text() and "paperbot_vote_up" in recovered.text()
    logged = "\n".join(f"{r.name}: {r.getMessage()}" for r in caplog.records)
    assert secrets_found({"log records": logged, "posted": json.dumps([c.params for c in site.api.calls])}) == []


def test_runs_of_rate_limits_are_waited_out(installation: Installation, slack_retry_waits: list[float]) -> None:
    site = installation
    site.api.fail_next("chat.postMessage", status=429, times=3, retry_after=0)
    site.api.fail_next("chat.update", status=429, times=2, retry_after=0)
    site.api.fail_next("reactions.add", status=429, times=5, retry_after=0)  # beyond retries: cosmetic
    ts, final = _ask(site)
    assert TITLE in final.text() and "paperbot_vote_up" in final.text()
    assert len(posts_in_thread(site.api, "CGENERAL1", ts)) == 1  # delivered once, not once per retry
    # every 429 was waited out (Retry-After 0 plus the SDK's jitter), the cosmetic call up to its retry limit
    assert len(slack_retry_waits) == 3 + 2 + RATE_LIMIT_RETRIES, slack_retry_waits
    assert all(0 <= wait < 1 for wait in slack_retry_waits), slack_retry_waits


def test_server_errors_beyond_the_retries_then_the_next_question_is_answered(installation: Installation,
                                                                            slack_retry_waits: list[float]) -> None:
    site = installation
    site.api.fail_next("chat.postMessage", status=500, error="internal_error", times=3)  # 1 try + 2 retries
    response, ts = site.sender.mention(QUESTION)
    assert response.status_code == 200  # the ack never waits for the Web API

    def apology() -> Call | None:
        posts = [c for c in site.api.calls_to("chat.postMessage") if c.params.get("thread_ts") == ts]
        return posts[-1] if posts and posts[-1].status == 200 else None

    posted = site.api.wait_for(apology, timeout=60, what="the apology")
    site.idle()
    statuses = [c.status for c in site.api.calls_to("chat.postMessage") if c.params.get("thread_ts") == ts]
    assert statuses == [500, 500, 500, 200]
    assert len(slack_retry_waits) == 2, slack_retry_waits  # the two retries waited the SDK's backoff
    assert "Sorry" in posted.text() and "reference" in posted.text()

    _, final = _ask(site)  # the worker survived: the next question is answered normally
    assert TITLE in final.text() and "paperbot_vote_up" in final.text()
