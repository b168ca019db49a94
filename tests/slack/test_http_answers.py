"""Questions over real HTTP: mentions, threads, DMs, the slash command, retries, 429, the queue.

The app is served on 127.0.0.1 and answers from a real ``Assistant`` over the 22-record
fixture index; the Web API is the local stand-in, which records every call.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time

import pytest

from bot.slack.queue import WorkQueue
from tests.slack.conftest import Bot, BotFactory
from tests.slack.helpers import final_answer, posts_in_thread

pytestmark = pytest.mark.slow

DDA_QUESTION = "which papers study the discrete dipole approximation?"


def test_mention_is_answered_in_its_thread_with_cited_records(bot: Bot) -> None:
    started = time.monotonic()
    response, ts = bot.sender.mention(DDA_QUESTION)
    assert response.status_code == 200
    assert time.monotonic() - started < 3  # acked before any retrieval happens

    final = final_answer(bot.api)
    [placeholder] = posts_in_thread(bot.api, "CGENERAL1", ts)
    assert placeholder.params["unfurl_links"] is False and "Working on it" in placeholder.text()
    [reply] = [m for m in bot.api.messages["CGENERAL1"].values() if m.get("thread_ts") == ts]
    assert final.params["ts"] == reply["ts"]  # the placeholder became the answer
    assert final.params["parse"] == "none"
    text = final.text()
    assert "*[1]* <https://" in text and "*Sources*" in text
    assert "Yurkin" in text and "discrete dipole" in text.lower()
    assert "https://doi.org/10.1016/j.jqsrt.2007.01.033" in text or "https://arxiv.org/abs/0704.0033" in text
    for method in ("reactions.add", "reactions.remove"):
        [reaction] = bot.api.wait_calls(method)
        assert reaction.params["timestamp"] == ts and reaction.params["name"] == "hourglass_flowing_sand"
    assert all(call.token == "xoxb-1111-2222-testtokenvalue" for call in bot.api.calls if call.method != "respond")


def test_follow_ups_in_the_thread_need_no_tag(bot: Bot) -> None:
    _, root = bot.sender.mention(DDA_QUESTION)
    final_answer(bot.api)
    bot.sender.message("how does its accuracy converge with dipole size?", thread_ts=root)
    second = final_answer(bot.api, count=2)
    assert bot.api.messages["CGENERAL1"][second.params["ts"]]["thread_ts"] == root
    history = bot.runtime.deps.store.thread_history("CGENERAL1", root)
    assert [question for question, _ in history] == [DDA_QUESTION, "how does its accuracy converge with dipole size?"]

    bot.sender.message("a chat between people", thread_ts="1690000000.999999")  # not a bot thread
    bot.sender.message("<@UBOB0001> what do you think?", thread_ts=root)  # addressed to someone else
    bot.idle()
    assert len(bot.api.calls_to("reactions.add")) == 2


def test_direct_messages_are_answered(bot: Bot) -> None:
    _, ts = bot.sender.message("graphene magnetophonon resonance", channel="D0ALICE01", channel_type="im")
    final = final_answer(bot.api, channel="D0ALICE01")
    assert bot.api.messages["D0ALICE01"][final.params["ts"]]["thread_ts"] == ts
    assert "Graphene" in final.text()


def test_retries_and_double_deliveries_are_answered_once(bot: Bot) -> None:
    first, ts = bot.sender.mention("lattice Boltzmann entropy limiters", event_id="EvRETRY0001")
    again, _ = bot.sender.mention("lattice Boltzmann entropy limiters", ts=ts, event_id="EvRETRY0001", retry=1)
    assert first.status_code == again.status_code == 200
    # the same message as a second event type (message.channels for a mention) is also dropped
    bot.sender.message(f"<@{bot.api.bot_user_id}> lattice Boltzmann entropy limiters", ts=ts)
    final_answer(bot.api)
    bot.idle()
    assert len(posts_in_thread(bot.api, "CGENERAL1", ts)) == 1
    assert len(bot.api.calls_to("reactions.add")) == 1


def test_rate_limits_and_server_errors_are_retried(bot: Bot, slack_retry_waits: list[float]) -> None:
    bot.api.fail_next("chat.postMessage", status=429, retry_after=0)
    bot.api.fail_next("chat.update", status=500, error="internal_error")
    _, ts = bot.sender.mention("steady states of multiple futile cycles")
    final = final_answer(bot.api)
    statuses = [(c.method, c.status) for c in bot.api.calls if c.method in ("chat.postMessage", "chat.update")]
    assert statuses[:2] == [("chat.postMessage", 429), ("chat.postMessage", 200)]
    assert ("chat.update", 500) in statuses and statuses[-1] == ("chat.update", 200)
    assert len(slack_retry_waits) == 2  # one wait per retry (recorded by the fixture, not slept)
    assert "futile" in final.text().lower()
    assert len(posts_in_thread(bot.api, "CGENERAL1", ts)) == 1


def _block_queue(queue: WorkQueue, user: str) -> threading.Event:
    started, release = threading.Event(), threading.Event()

    def blocker() -> None:
        started.set()
        release.wait(20)

    queue.submit(user, blocker)
    assert started.wait(5)
    return release


def test_bursts_wait_in_line_with_their_position(make_bot: BotFactory) -> None:
    bot = make_bot(slack_workers=1)
    release = _block_queue(bot.runtime.deps.queue, "UBLOCKER1")
    # the door acknowledges before it dispatches, so two events sent back to back may reach the
    # queue in either order: the second is sent once the first is in line
    _, first = bot.sender.mention("graphene resonance", user="UALICE01")
    one = bot.api.wait_calls("chat.postMessage", where=lambda c: "position 1" in c.text())[0]
    _, second = bot.sender.mention("teleportation", user="UBOB0001")
    two = bot.api.wait_calls("chat.postMessage", where=lambda c: "position 2" in c.text())[0]
    assert one.params["thread_ts"] == first and two.params["thread_ts"] == second
    release.set()
    final_answer(bot.api, count=2)
    messages = bot.api.messages["CGENERAL1"]
    assert not [m for m in messages.values() if "position" in json.dumps(m["blocks"])]  # notices became answers
    assert {messages[ts]["thread_ts"] for ts in messages} == {first, second}  # one message per thread


def test_per_user_limit_is_a_polite_message(make_bot: BotFactory) -> None:
    bot = make_bot(slack_user_queue_limit=1)
    release = _block_queue(bot.runtime.deps.queue, "UALICE01")
    _, ts = bot.sender.mention("graphene resonance", user="UALICE01")
    [note] = bot.api.wait_calls("chat.postMessage", where=lambda c: "in line" in c.text())
    assert note.params["thread_ts"] == ts and "1 request(s) in line" in note.text()
    release.set()


def test_slash_command_posts_the_question_and_answer_in_channel(bot: Bot) -> None:
    started = time.monotonic()
    response = bot.sender.command("ask which methods use nonequilibrium entropy limiters?")
    assert response.status_code == 200 and response.text == "" and time.monotonic() - started < 3
    final = final_answer(bot.api)
    root = final.params["ts"]
    assert bot.api.messages["CGENERAL1"][root]["thread_ts"] is None  # a new top-level message
    assert "<@UALICE01> asked: which methods use nonequilibrium entropy limiters?" in final.text()
    assert "Boltzmann" in final.text()
    bot.sender.message("and who wrote it?", thread_ts=root)  # its thread is a conversation now
    final_answer(bot.api, count=2)
    assert len(bot.runtime.deps.store.thread_history("CGENERAL1", root)) == 2


def test_slash_command_containing_the_word_payload(bot: Bot) -> None:
    response = bot.sender.command("explain payload of the Viterbi algorithm")
    assert response.status_code == 200  # Bolt 1.30 alone answers 404 here
    assert "Viterbi" in final_answer(bot.api).text()


def test_slash_command_where_the_bot_is_not_a_member_answers_privately(bot: Bot) -> None:
    bot.sender.command("stochastic Lie group integrators", channel="CNOTMEMBER1",
                       response_url=bot.api.response_url("private"))
    replies = bot.api.wait_calls("respond", 2, where=lambda c: c.path.endswith("/private"))
    assert all(reply.params["response_type"] == "ephemeral" for reply in replies)
    assert "Lie group" in replies[-1].text() and "paperbot_vote_up" in replies[-1].text()


def test_untrusted_text_cannot_ping_or_spoof(bot: Bot) -> None:
    bot.sender.command("ask <!channel> is &lt;!here&gt; <http://evil.example|graphene> @everyone resonance real?")
    final = final_answer(bot.api)
    for call in bot.api.calls:
        for raw in ("<!channel>", "<!here>", "<!everyone>", "<http://evil.example"):
            assert raw not in call.text(), (call.method, raw)
    assert "@\u2060channel" in final.text() and "&lt;!here&gt;" in final.text()


def test_bad_input_and_unexpected_failures_reach_the_user_safely(bot: Bot, caplog: pytest.LogCaptureFixture) -> None:
    _, ts = bot.sender.mention("summarize --since 2020")
    [note] = bot.api.wait_calls("chat.postMessage", where=lambda c: "needs something" in c.text())
    assert note.params["thread_ts"] == ts and "Usage: `/paperbot summarize &lt;scholar&gt; [--since YEAR]`" in note.text()

    caplog.set_level(logging.ERROR, logger="bot.slack.jobs")
    bot.api.fail_next("chat.update", status=200, error="msg_blocks_too_long")
    _, ts = bot.sender.mention("teleportation")
    [apology] = bot.api.wait_calls("chat.update", where=lambda c: "reference `" in c.text())
    reference = re.search(r"reference `([0-9a-f]{8})`", apology.text()).group(1)  # type: ignore[union-attr]
    assert "msg_blocks_too_long" not in apology.text() and "Traceback" not in apology.text()
    assert any(reference in record.getMessage() and record.exc_info for record in caplog.records)


def test_app_home_shows_what_is_indexed_and_how_to_ask(bot: Bot) -> None:
    bot.sender.event({"type": "app_home_opened", "user": "UALICE01", "channel": "D0ALICE01", "tab": "home",
                      "event_ts": "1.2"})
    [publish] = bot.api.wait_calls("views.publish")
    text = json.dumps(publish.params["view"])
    assert publish.params["user_id"] == "UALICE01"
    assert "*Papers indexed:* 22" in text and "2004" in text and "/paperbot summarize" in text
