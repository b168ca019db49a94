"""Buttons over real HTTP (signed block_actions): votes, More papers, BibTeX, scholar picks;
and the scholar summary / collaborators replies with their uploaded pictures."""

from __future__ import annotations

import json
import re
import sys

import pytest

from bot.slack import payloads
from tests.slack.conftest import Bot
from tests.slack.helpers import button_value, final_answer

pytestmark = pytest.mark.slow


def _answer(bot: Bot, question: str) -> tuple[str, str, list[str]]:
    """Ask by mention; (thread ts, answer id, cited ids) of the finished answer."""
    _, ts = bot.sender.mention(question)
    final = final_answer(bot.api)
    ref = payloads.AnswerRef.decode(button_value(final, payloads.ACTION_VOTE_UP))
    stored = bot.runtime.deps.store.answer(ref.answer_id)
    assert stored is not None and stored.thread_ts == ts
    return ts, ref.answer_id, stored.cited_ids


def test_votes_are_stored_with_question_answer_and_cited_ids(bot: Bot) -> None:
    ts, answer_id, cited = _answer(bot, "which papers study the discrete dipole approximation?")
    assert cited
    value = payloads.AnswerRef(answer_id=answer_id).encode()
    bot.sender.action(payloads.ACTION_VOTE_DOWN, value, user="UBOB0001", thread_ts=ts,
                      response_url=bot.api.response_url("vote"))
    [thanks] = bot.api.wait_calls("respond", where=lambda c: c.path.endswith("/vote"))
    assert thanks.params["response_type"] == "ephemeral" and "stored with this answer" in thanks.params["text"]
    [record] = bot.runtime.deps.store.feedback()
    assert record.vote == "down" and record.user == "UBOB0001"
    assert record.question == "which papers study the discrete dipole approximation?"
    assert record.cited_ids == cited and record.answer


def test_forged_button_values_get_a_polite_note(bot: Bot) -> None:
    bot.sender.action(payloads.ACTION_BIBTEX, '{"answer_id": "deadbeefdeadbeef"}', response_url=bot.api.response_url("x"))
    bot.sender.action(payloads.ACTION_VOTE_UP, "{not json", response_url=bot.api.response_url("y"))
    notes = bot.api.wait_calls("respond", 2)
    assert {note.path[-1] for note in notes} == {"x", "y"}
    assert "no longer have that answer" in notes[0].text() or "no longer have that answer" in notes[1].text()
    assert "not valid any more" in notes[0].text() + notes[1].text()


def test_more_papers_pages_past_the_cited_records(bot: Bot) -> None:
    ts, answer_id, cited = _answer(bot, "Luttinger liquids of helium in nanopores")
    more = payloads.AnswerRef(answer_id=answer_id, offset=0).encode()
    bot.sender.action(payloads.ACTION_MORE_PAPERS, more, thread_ts=ts)
    page = bot.api.wait_calls("chat.update", where=lambda c: "More papers for" in c.text())[0]
    message = bot.api.messages["CGENERAL1"][page.params["ts"]]
    assert message["thread_ts"] == ts
    shown = re.findall(r"\*(\d+)\.\*", page.text())
    assert shown and all(int(n) >= 1 for n in shown)
    for paper_id in cited:
        doi = paper_id.removeprefix("doi:")
        assert doi not in page.text().lower()
    # a full page of records not cited above, however many of the top ranks the answer cited
    assert len(shown) == 5
    next_value = button_value(page, payloads.ACTION_MORE_PAPERS)  # 22 records: a full page, more may follow
    assert payloads.AnswerRef.decode(next_value).offset == max(int(n) for n in shown)  # the next page starts after it


def test_bibtex_uploads_the_cited_records_in_the_thread(bot: Bot) -> None:
    ts, answer_id, cited = _answer(bot, "which papers study the discrete dipole approximation?")
    bot.sender.action(payloads.ACTION_BIBTEX, payloads.AnswerRef(answer_id=answer_id).encode(), thread_ts=ts)
    [complete] = bot.api.wait_calls("files.completeUploadExternal")
    [upload] = bot.api.calls_to("upload")
    [requested] = bot.api.calls_to("files.getUploadURLExternal")
    bib = upload.body.decode("utf-8")
    assert requested.params["filename"] == f"paperbot-{answer_id}.bib"
    assert bib.count("@") == len(cited)
    assert "Yurkin" in bib
    assert complete.params["channel_id"] == "CGENERAL1" and complete.params["thread_ts"] == ts


def test_summarize_shows_the_profile_and_uploads_two_pictures(bot: Bot) -> None:
    response = bot.sender.command("summarize Adrian Del Maestro --since 2004")
    assert response.status_code == 200
    final = final_answer(bot.api)
    text = final.text()
    assert "Adrian Del Maestro" in text and "*Papers*" in text and "*[1]*" in text
    assert "Luttinger" in text or "superfluid" in text.lower()
    [complete] = bot.api.wait_calls("files.completeUploadExternal")
    uploads = bot.api.calls_to("upload")
    assert len(uploads) == 2 and all(u.body.startswith(b"\x89PNG") for u in uploads)
    assert complete.params["thread_ts"] == final.params["ts"] and len(complete.params["files"]) == 2


def test_without_the_plots_extra_the_summary_is_posted_without_pictures_or_warnings(
        bot: Bot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as on a machine without paperbot[plots]
    bot.sender.command("summarize Adrian Del Maestro --since 2004")
    final = final_answer(bot.api)
    assert "Adrian Del Maestro" in final.text() and "*Papers*" in final.text()
    bot.idle()  # the summary's work, pictures included, is done
    assert not bot.api.calls_to("files.getUploadURLExternal") and not bot.api.calls_to("upload")
    assert not [c for c in bot.api.calls if "pictures" in c.text().lower()]


def test_unknown_scholar_is_a_helpful_message(bot: Bot) -> None:
    bot.sender.command("summarize Nobody Atall")
    [note] = bot.api.wait_calls("chat.update", where=lambda c: "No indexed scholar" in c.text())
    assert "Traceback" not in note.text()


def test_collaborators_list_people_with_evidence(bot: Bot) -> None:
    bot.sender.command("collaborators Luttinger liquids in nanopores --limit 3")
    final = final_answer(bot.api)
    text = final.text()
    assert "People working on" in text and "*1.1*" in text
    assert "Del Maestro" in text
    blocks = json.dumps(final.params["blocks"])
    assert "paperbot_bibtex" in blocks and "paperbot_more_papers" not in blocks
