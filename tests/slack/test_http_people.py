"""One person, one profile, over real HTTP: pick buttons that summarize exactly one person.

The app answers from a real ``Assistant``. For namesakes it reads a second small index
(``namesake_assistant``, records in ``tests/slack/namesakes.py``): two comparable "Wei Zhang" (an
ambiguous name) and a "Lena Fischer" with six papers next to two with one each (one person
dominates). Each click is a signed ``block_actions`` request; the summary it triggers must show
the picked person's id and papers, and nobody else's.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack import payloads
from retrieval.assistant import Assistant
from retrieval.results import AmbiguousScholarResult, ScholarCandidate, ScholarSummaryResult
from tests.slack import namesakes as scenario
from tests.slack.conftest import Bot, BotFactory
from tests.slack.helpers import button_value, final_answer
from tests.slack.stand_in import Call

pytestmark = pytest.mark.slow


@pytest.fixture
def people_bot(make_bot: BotFactory, namesake_assistant: Assistant) -> Bot:
    return make_bot(core=namesake_assistant)


def _accessory_buttons(call: Call) -> list[dict[str, Any]]:
    return [block["accessory"] for block in call.params.get("blocks") or [] if "accessory" in block]


def _action_buttons(call: Call) -> list[dict[str, Any]]:
    return [element for block in call.params.get("blocks") or [] if block.get("type") == "actions"
            for element in block["elements"]]


def _header(call: Call) -> str:
    [header] = [b["text"]["text"] for b in call.params.get("blocks") or [] if b.get("type") == "header"]
    return header


def _stored_question(bot: Bot, call: Call) -> str:
    """The request stored with a finished reply (what a vote on it records)."""
    ref = payloads.AnswerRef.decode(button_value(call, payloads.ACTION_VOTE_UP))
    stored = bot.runtime.deps.store.answer(ref.answer_id)
    assert stored is not None
    return stored.question


def _assert_summary_of(call: Call, person: ScholarCandidate, *, not_of: list[ScholarCandidate]) -> None:
    """The posted summary is ``person``'s: their id and sample paper, nobody else's papers."""
    text = call.text()
    assert _header(call) == person.name
    assert f"`{person.person_id}`" in text  # the summarized person's id, shown in the facts
    assert person.sample_title and person.sample_title in text
    for other in not_of:
        assert other.sample_title and other.sample_title not in text


def test_an_ambiguous_name_offers_one_pick_per_person_and_a_click_summarizes_exactly_that_one(
    people_bot: Bot, namesake_assistant: Assistant,
) -> None:
    expected = namesake_assistant.scholars.summarize(scenario.AMBIGUOUS_NAME)
    assert isinstance(expected, AmbiguousScholarResult)  # two comparable people: the real resolver asks
    candidates = expected.candidates
    assert len(candidates) == 2 and all(c.person_id and c.person_id.startswith("person:") for c in candidates)

    _, root = people_bot.sender.mention(f"summarize {scenario.AMBIGUOUS_NAME}")
    [listing] = people_bot.api.wait_calls("chat.update", where=lambda c: "Which one did you mean" in c.text())
    buttons = _accessory_buttons(listing)
    assert len(buttons) == len(candidates)  # every candidate can be picked in one step
    picks = [payloads.ScholarPick.decode(button["value"]) for button in buttons]
    assert [pick.person_id for pick in picks] == [c.person_id for c in candidates]
    assert all(len(button["value"]) <= 2000 for button in buttons)
    for candidate in candidates:  # the lines tell the two apart
        assert candidate.sample_title and candidate.sample_title in listing.text()

    chosen, other = candidates[1], candidates[0]
    response = people_bot.sender.action(buttons[1]["action_id"], buttons[1]["value"],
                                        message_ts=listing.params["ts"], thread_ts=root)
    assert response.status_code == 200
    summary = final_answer(people_bot.api, root=root)
    assert people_bot.api.messages["CGENERAL1"][summary.params["ts"]]["thread_ts"] == root  # same thread
    _assert_summary_of(summary, chosen, not_of=[other])
    assert _stored_question(people_bot, summary) == f"/paperbot summarize {chosen.person_id} ({chosen.name})"


def test_a_typed_person_id_summarizes_that_person(people_bot: Bot, namesake_assistant: Assistant) -> None:
    expected = namesake_assistant.scholars.summarize(scenario.AMBIGUOUS_NAME)
    assert isinstance(expected, AmbiguousScholarResult)
    first, second = expected.candidates[:2]
    people_bot.sender.command(f"summarize {first.person_id}")
    _assert_summary_of(final_answer(people_bot.api), first, not_of=[second])


def test_a_dominant_person_is_summarized_with_the_namesakes_one_click_away(
    people_bot: Bot, namesake_assistant: Assistant,
) -> None:
    expected = namesake_assistant.scholars.summarize(scenario.DOMINANT_NAME)
    assert isinstance(expected, ScholarSummaryResult)  # six papers against one and one: no question asked
    assert expected.paper_count == scenario.DOMINANT_PAPERS and expected.others_with_this_name == 2
    namesakes = expected.namesakes
    assert len(namesakes) == 2 and all(n.person_id for n in namesakes)

    people_bot.sender.command(f"summarize {scenario.DOMINANT_NAME}")
    summary = final_answer(people_bot.api)
    text = summary.text()
    assert f"2 other people in the index are also named *{scenario.DOMINANT_NAME}*" in text
    assert _header(summary) == scenario.DOMINANT_NAME and f"`{expected.person_id}`" in text
    buttons = _action_buttons(summary)
    picks = [(button, payloads.ScholarPick.decode(button["value"])) for button in buttons
             if payloads.PICK_SCHOLAR_ACTIONS.match(button["action_id"])]
    assert [pick.person_id for _, pick in picks] == [n.person_id for n in namesakes]
    labels = [button["text"]["text"] for button, _ in picks]
    assert all(label.startswith(f"{scenario.DOMINANT_NAME} · ") and len(label) <= 75 for label in labels)
    assert len(set(labels)) == 2  # the labels tell the two namesakes apart

    button, _ = picks[1]  # the second button of the row: action id paperbot_pick_scholar_1
    assert button["action_id"] != payloads.ACTION_PICK_SCHOLAR
    root = summary.params["ts"]
    people_bot.sender.action(button["action_id"], button["value"], message_ts=root)
    picked = final_answer(people_bot.api, root=root, count=2)
    assert picked.params["ts"] != root
    assert people_bot.api.messages["CGENERAL1"][picked.params["ts"]]["thread_ts"] == root
    _assert_summary_of(picked, namesakes[1], not_of=[namesakes[0]])
    assert not [title for title in scenario.DOMINANT_TITLES if title in picked.text()]  # none of the six


def test_each_ranked_expert_has_a_profile_button_that_summarizes_them(bot: Bot, assistant: Assistant) -> None:
    expected = assistant.scholars.collaborators("Luttinger liquids in nanopores", limit=3)
    assert expected.scholars and all(person.person_id for person in expected.scholars)

    bot.sender.command("collaborators Luttinger liquids in nanopores --limit 3")
    listing = final_answer(bot.api)
    buttons = [b for b in _accessory_buttons(listing) if b["text"]["text"] == "Profile"]
    picks = [payloads.ScholarPick.decode(b["value"]) for b in buttons]
    assert [p.person_id for p in picks] == [person.person_id for person in expected.scholars]

    first = expected.scholars[0]
    root = listing.params["ts"]
    bot.sender.action(buttons[0]["action_id"], buttons[0]["value"], message_ts=root)
    profile = final_answer(bot.api, root=root, count=2)
    assert bot.api.messages["CGENERAL1"][profile.params["ts"]]["thread_ts"] == root
    assert _header(profile) == first.name and f"`{first.person_id}`" in profile.text()


def test_picks_posted_before_person_ids_still_summarize(bot: Bot) -> None:
    """Buttons already in Slack carry a name (or ORCID); any pick action id is handled."""
    thread = "1690000000.000777"
    value = payloads.ScholarPick(name="Adrian Del Maestro", since=2010).encode()
    response = bot.sender.action(payloads.pick_action(2), value, thread_ts=thread)
    assert response.status_code == 200
    summary = final_answer(bot.api, root=thread)
    assert _header(summary) == "Adrian Del Maestro" and "Luttinger" in summary.text()
    assert bot.api.messages["CGENERAL1"][summary.params["ts"]]["thread_ts"] == thread
    assert _stored_question(bot, summary) == "/paperbot summarize Adrian Del Maestro --since 2010"


def test_forged_pick_values_get_a_polite_note(bot: Bot) -> None:
    bot.sender.action(payloads.ACTION_PICK_SCHOLAR, '{"person_id": "person:../../etc"}',
                      response_url=bot.api.response_url("pick"))
    [note] = bot.api.wait_calls("respond", where=lambda c: c.path.endswith("/pick"))
    assert note.params["response_type"] == "ephemeral" and "not valid any more" in note.text()
    bot.idle()
    assert not bot.api.calls_to("chat.update")
