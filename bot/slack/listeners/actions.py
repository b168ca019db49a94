"""Button clicks: votes, "More papers", "BibTeX", and picking one person to summarize (a candidate of
an ambiguous name, a namesake under a summary, an expert's "Profile")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.slack import feedback, payloads
from bot.slack.answering import summarize_work
from bot.slack.blocks import error_text
from bot.slack.deps import SlackDeps
from bot.slack.formatting import escape, sections
from bot.slack.jobs import Target, Work, submit
from bot.slack.store import StoredAnswer
from retrieval.errors import PaperbotError


def _value(body: dict[str, Any]) -> str:
    actions = body.get("actions") or [{}]
    return str(actions[0].get("value") or "")


def _user(body: dict[str, Any]) -> str:
    return str((body.get("user") or {}).get("id") or "")


def _team(body: dict[str, Any]) -> str | None:
    return (body.get("team") or {}).get("id")


def _tell(respond: Respond, text: str) -> None:
    """An ephemeral note to the person who clicked (text is pre-escaped mrkdwn)."""
    respond(text=text, blocks=sections(text), response_type="ephemeral", replace_original=False)


def register(app: App, deps: SlackDeps) -> None:
    def on_vote(choice: str) -> Any:
        def listener(ack: Ack, body: dict[str, Any], respond: Respond) -> None:
            ack()
            try:
                ref = payloads.AnswerRef.decode(_value(body))
                _tell(respond, escape(feedback.vote(deps, ref.answer_id, _user(body), choice)))  # type: ignore[arg-type]
            except PaperbotError as exc:
                _tell(respond, error_text(exc.user_message, exc.hint))

        return listener

    app.action(payloads.ACTION_VOTE_UP)(on_vote("up"))
    app.action(payloads.ACTION_VOTE_DOWN)(on_vote("down"))

    def on_stored_answer(work_for: Callable[[StoredAnswer, payloads.AnswerRef], Work]) -> Any:
        """A button pointing at a stored answer: submits ``work_for(answer, ref)`` in its thread."""

        def listener(ack: Ack, body: dict[str, Any], client: WebClient, respond: Respond) -> None:
            ack()
            try:
                ref = payloads.AnswerRef.decode(_value(body))
                answer = feedback.stored_answer(deps, ref.answer_id)
            except PaperbotError as exc:
                _tell(respond, error_text(exc.user_message, exc.hint))
                return
            target = Target(channel=answer.channel, user=_user(body), thread_ts=answer.thread_ts, team=_team(body),
                            response_url=body.get("response_url"))
            submit(deps, client, target, work_for(answer, ref))

        return listener

    app.action(payloads.ACTION_MORE_PAPERS)(
        on_stored_answer(lambda answer, ref: feedback.more_papers_work(deps, answer, ref.offset))
    )
    app.action(payloads.ACTION_BIBTEX)(on_stored_answer(lambda answer, _ref: feedback.bibtex_work(deps, answer)))

    @app.action(payloads.PICK_SCHOLAR_ACTIONS)
    def on_pick(ack: Ack, body: dict[str, Any], client: WebClient, respond: Respond) -> None:
        ack()
        try:
            pick = payloads.ScholarPick.decode(_value(body))
        except PaperbotError as exc:
            _tell(respond, error_text(exc.user_message, exc.hint))
            return
        container = body.get("container") or {}
        message = body.get("message") or {}
        channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
        thread_ts = container.get("thread_ts") or message.get("thread_ts") or container.get("message_ts")
        if not channel:
            return
        target = Target(channel=channel, user=_user(body), thread_ts=thread_ts, team=_team(body),
                        response_url=body.get("response_url"))
        submit(deps, client, target, summarize_work(deps, pick.reference, since=pick.since))
