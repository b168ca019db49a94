"""Follows over the slash command and follow alerts posted once each after a sync."""

from __future__ import annotations

import pytest

from bot.slack.alerts import AlertScheduler, FollowAlerts, claim_each_period
from retrieval.alerts.follows import note_new_papers
from tests.slack.conftest import Bot

pytestmark = pytest.mark.slow

DEL_MAESTRO = ["doi:10.1103/physrevb.82.060515", "doi:10.1103/physrevlett.106.105303"]
GRAPHENE = "doi:10.1103/physrevlett.99.087402"
DDA = "doi:10.1016/j.jqsrt.2007.01.033"


def _follow(bot: Bot, text: str, name: str) -> str:
    response = bot.sender.command(text, response_url=bot.api.response_url(name))
    assert response.status_code == 200
    [reply] = bot.api.wait_calls("respond", where=lambda c: c.path.endswith("/" + name))
    return reply.params["text"] + reply.text()


def test_follow_list_unfollow(bot: Bot) -> None:
    assert "Following scholar *Adrian Del Maestro*" in _follow(bot, "follow scholar Adrian Del Maestro", "a")
    guessed = _follow(bot, "follow A. Del Maestro", "b")  # an indexed author: read as a scholar
    assert "Following scholar" in guessed and "Read as a scholar" in guessed
    topic = _follow(bot, "follow Magnetophonon Resonance", "c")  # capitalised, but nobody's name
    assert "Following topic" in topic
    assert "already follows" in _follow(bot, "follow scholar adrian del maestro", "d")
    listed = _follow(bot, "follows", "e")
    assert "#1 · scholar *Adrian Del Maestro*" in listed and "topic *Magnetophonon Resonance*" in listed
    assert "Stopped following topic" in _follow(bot, "unfollow Magnetophonon Resonance", "f")
    assert "does not follow" in _follow(bot, "unfollow 99", "g")
    public = [c for c in bot.api.calls_to("respond") if c.path[-1] in "acf"]
    assert all(call.params["response_type"] == "in_channel" for call in public)


def test_new_papers_are_posted_once_to_following_channels(bot: Bot) -> None:
    _follow(bot, "follow scholar Adrian Del Maestro", "a")
    bot.sender.command("follow topic graphene", channel="CPHYSICS1", response_url=bot.api.response_url("b"))
    bot.api.wait_calls("respond", where=lambda c: c.path.endswith("/b"))

    note_new_papers(bot.settings, [*DEL_MAESTRO, GRAPHENE, DDA])  # what `paperbot sync` hands over
    assert bot.runtime.scheduler.tick() == 3
    general = [c for c in bot.api.calls_to("chat.postMessage") if c.params["channel"] == "CGENERAL1"]
    physics = [c for c in bot.api.calls_to("chat.postMessage") if c.params["channel"] == "CPHYSICS1"]
    assert len(general) == 1 and len(physics) == 1
    assert ":bell: New papers matching scholar *Adrian Del Maestro*" in general[0].text()
    assert "Helium-4 Luttinger liquids in nanopores" in general[0].text() and "Graphene" not in general[0].text()
    assert "Magnetophonon Resonance in Graphene" in physics[0].text()
    assert "discrete dipole" not in general[0].text().lower() + physics[0].text().lower()

    note_new_papers(bot.settings, [DEL_MAESTRO[0]])  # reported again by a later sync
    assert bot.runtime.scheduler.tick() == 0
    assert len(bot.api.calls_to("chat.postMessage")) == 2
    assert bot.runtime.deps.assistant.follows.store.queued_new_papers() == []


HIDDEN = ("\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\x1b", "[31m")  # bidi, zero-width, terminal escape


def test_a_follow_typed_with_hidden_characters_is_stored_and_echoed_as_plain_text(bot: Bot) -> None:
    """A bidi override typed into ``/paperbot follow`` was stored, echoed, and would be in every
    alert of the follow (issue #30 item 6a)."""
    typed = "follow topic \u202egraph\u200bene\u2066\x1b[31m\u200d\ufeff"
    echoed = _follow(bot, typed, "a")
    assert "Following topic *graphene*" in echoed, echoed
    [stored] = bot.runtime.deps.assistant.follows.list("CGENERAL1")
    assert stored.query == "graphene"
    assert "topic *graphene*" in _follow(bot, "follows", "b")
    assert "does not follow *unknown topic*" in _follow(bot, "unfollow \u202eunknown topic\u200b", "c")
    note_new_papers(bot.settings, [GRAPHENE])
    assert bot.runtime.scheduler.tick() == 1
    [alert] = bot.api.calls_to("chat.postMessage")
    assert ":bell: New paper matching topic *graphene*" in alert.text()
    for call in [*bot.api.calls_to("respond"), alert]:
        assert not any(char in call.text() or char in str(call.params.get("text")) for char in HIDDEN), call.params


def test_failed_posts_are_retried_on_the_next_pass(bot: Bot) -> None:
    _follow(bot, "follow scholar Adrian Del Maestro", "a")
    note_new_papers(bot.settings, DEL_MAESTRO)
    bot.api.fail_next("chat.postMessage", status=200, error="fatal_error")  # not retried by the SDK, not permanent
    assert bot.runtime.scheduler.tick() == 0
    assert bot.runtime.deps.assistant.follows.store.queued_new_papers() == sorted(DEL_MAESTRO)
    assert bot.runtime.scheduler.tick() == 2


def test_alerts_for_a_channel_the_bot_left_are_dropped(bot: Bot) -> None:
    bot.sender.command("follow scholar Adrian Del Maestro", channel="CNOTMEMBER1", response_url=bot.api.response_url("a"))
    bot.api.wait_calls("respond", where=lambda c: c.path.endswith("/a"))
    note_new_papers(bot.settings, DEL_MAESTRO)
    assert bot.runtime.scheduler.tick() == 0
    assert bot.runtime.deps.assistant.follows.store.queued_new_papers() == []  # not retried forever


def test_scheduled_sync_runs_when_due_and_alerts_follow(bot: Bot) -> None:
    _follow(bot, "follow scholar Adrian Del Maestro", "a")
    now = [0.0]
    syncs: list[float] = []

    def run_sync() -> list[str]:
        syncs.append(now[0])
        return DEL_MAESTRO

    scheduler = AlertScheduler(FollowAlerts(bot.runtime.deps.assistant, bot.runtime.app.client, replica="scheduled"), sync_every_seconds=3600,
                               run_sync=run_sync, note_new=bot.runtime.deps.assistant.follows.note_new_papers,
                               clock=lambda: now[0])
    assert scheduler.tick() == 0 and syncs == []
    now[0] = 3600.0
    assert scheduler.tick() == 2 and syncs == [3600.0]
    now[0] = 5000.0
    assert scheduler.tick() == 0 and syncs == [3600.0]


def test_the_scheduled_sync_runs_once_per_period_whichever_replicas_fall_due(bot: Bot) -> None:
    """Three replicas on one database, their syncs due at once: one syncs per period (the first to
    claim it), whichever that is; a replica that finds the period claimed still posts alerts."""
    now, wall = [0.0], [3600.0 * 500_000 + 10]  # each replica's own clock; the wall clock periods are numbered on
    syncs: list[str] = []
    deps = bot.runtime.deps

    def replica(name: str) -> AlertScheduler:
        def run_sync() -> list[str]:
            syncs.append(name)
            return []

        return AlertScheduler(FollowAlerts(deps.assistant, bot.runtime.app.client, replica=name),
                              sync_every_seconds=3600, run_sync=run_sync, clock=lambda: now[0],
                              claim_sync=claim_each_period(deps.store, name, 3600, wall_clock=lambda: wall[0]))

    replicas = [replica(f"replica-{n}") for n in range(3)]
    now[0], wall[0] = 3600.0, wall[0] + 3600
    assert [r.tick() for r in replicas] == [0, 0, 0]
    assert syncs == ["replica-0"]
    now[0], wall[0] = 7200.0, wall[0] + 3600  # the next period: replica-2 asks first
    for r in reversed(replicas):
        r.tick()
    assert syncs == ["replica-0", "replica-2"]
    now[0] = 7300.0  # not due again within its period
    for r in replicas:
        r.tick()
    assert syncs == ["replica-0", "replica-2"]
