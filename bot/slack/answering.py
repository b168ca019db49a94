"""The slow work behind questions, summaries and collaborator searches (run on the queue).

Each ``*_work`` returns a function of a :class:`~bot.slack.jobs.Reply`; ``jobs.submit`` runs it
with the working indicator and error handling. The core is only reached through the
``Assistant`` facade.

A full disk (or any ``StorageError`` of the Slack state file) does not cost the user the
answer: reading the index needs no write, so the answer is posted, without the buttons that
would point at an answer that was not saved, and one note in the thread says what could not be
saved and what to do (``_Unsaved``). Only the state writes are caught this way: remembering the
thread (``Reply.begin``/``finish`` post first, then remember) and saving the answer.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bot.slack import blocks as kit
from bot.slack.deps import SlackDeps
from bot.slack.formatting import escape
from bot.slack.jobs import Reply, Work, new_reference
from retrieval.errors import PaperbotError, StorageError
from retrieval.records.paper import clean_text
from retrieval.results import AmbiguousScholarResult, AnswerResult, Final, Progress, TextDelta

log = logging.getLogger(__name__)

ASK_K = 8


class _Unsaved:
    """Slack-state writes of one reply that failed (the answer itself still goes out)."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.error: StorageError | None = None

    @contextmanager
    def saving(self) -> Iterator[None]:
        """Run a state write; a ``StorageError`` is kept for ``report`` instead of ending the reply."""
        try:
            yield
        except StorageError as exc:
            log.warning("Slack state not saved: %s", exc.user_message)
            self.error = self.error or exc

    def attempt(self, write: Callable[[], str]) -> str | None:
        """``write()`` (e.g. saving the answer); None when it could not be saved."""
        with self.saving():
            return write()
        return None

    def report(self) -> None:
        """One note in the thread: what was not saved, why, and what to do."""
        if self.error is None:
            return
        text = (f":warning: {escape(self.error.user_message)} This answer was not saved, so its buttons and "
                f"untagged follow-ups in this thread will not work.")
        if self.error.hint:
            text += f" {escape(self.error.hint)}"
        self.reply.note(text)


def ask_work(deps: SlackDeps, question: str, *, asked_by: str | None = None) -> Work:
    """Stream a cited answer into the reply; the thread's earlier answers are the history."""
    question = clean_text(question)  # lone surrogates and control characters cannot be stored

    def work(reply: Reply) -> None:
        intro = [kit.asked_context(asked_by, question)] if asked_by else []
        thread = reply.target.thread_ts
        history = deps.store.thread_history(reply.target.channel, thread) if thread else []
        unsaved = _Unsaved(reply)
        with unsaved.saving():  # posts "Working on it" first, then remembers the thread
            reply.begin(intro)
        text = ""
        result: AnswerResult | None = None
        for event in deps.assistant.stream_ask(question, k=ASK_K, history=history):
            if isinstance(event, TextDelta):
                text += event.text
                reply.stream([*intro, *kit.partial_answer_blocks(text)], text)
            elif isinstance(event, Progress) and not text:  # a slow model: say what the wait is for
                reply.status([*intro, *kit.working_blocks(event.text)], event.text)
            elif isinstance(event, Final):
                result = event.result
        if result is None:  # the core promises a Final; never show a silent non-answer
            raise RuntimeError("the answer stream ended without a result")
        answer_id = unsaved.attempt(lambda: deps.store.save_answer(
            channel=reply.target.channel, thread_ts=reply.thread_ts, user=reply.target.user,
            team=reply.target.team, kind="ask", question=question, answer=result.answer,
            cited_ids=[citation.id for citation in result.citations],
        ))
        footer = [kit.answer_actions(answer_id, has_citations=bool(result.citations), more_offset=0)] if answer_id else []
        with unsaved.saving():  # posts the answer first, then remembers the thread
            reply.finish(kit.answer_blocks(result, asked_by=asked_by), fallback=result.answer, footer=footer)
        unsaved.report()

    return work


def summarize_work(deps: SlackDeps, name: str, *, since: int | None = None, asked_by: str | None = None) -> Work:
    """A scholar summary (or the list of candidates when the name is ambiguous), then two plots.

    ``name`` may be a ``person:…`` id (a pick button): exactly that person is summarized.
    """

    def work(reply: Reply) -> None:
        request = f"/paperbot summarize {name}" + (f" --since {since}" if since else "")
        intro = [kit.asked_context(asked_by, request)] if asked_by else []
        unsaved = _Unsaved(reply)
        with unsaved.saving():
            reply.begin(intro)
        result = deps.assistant.scholars.summarize(name, since=since)
        if isinstance(result, AmbiguousScholarResult):
            with unsaved.saving():
                reply.finish([*intro, *kit.ambiguous_blocks(result, since=since)],
                             fallback=f"Several scholars match {name}; which one?")
            unsaved.report()
            return
        cited = [paper.id for paper in result.papers]
        # the thread history should read "summarize Zhao Zhang", not only an opaque id
        question = request if result.scholar.name in request else f"{request} ({result.scholar.name})"
        answer_id = unsaved.attempt(lambda: deps.store.save_answer(
            channel=reply.target.channel, thread_ts=reply.thread_ts, user=reply.target.user,
            team=reply.target.team, kind="summary", question=question, answer=result.summary, cited_ids=cited,
        ))
        footer = [kit.answer_actions(answer_id, has_citations=bool(cited), more_offset=None)] if answer_id else []
        with unsaved.saving():
            reply.finish([*intro, *kit.summary_blocks(result, since=since)],
                         fallback=f"{result.scholar.name}: {result.summary}", footer=footer)
        unsaved.report()
        _upload_plots(deps, reply, result)

    return work


def _upload_plots(deps: SlackDeps, reply: Reply, result: object) -> None:
    """The summary stands on its own: a plot failure is reported but does not undo it. Without
    the optional ``plots`` extra there are no pictures and no note (``serve`` said so at start)."""
    if deps.assistant.scholars.pictures_missing() is not None:
        return
    try:
        with tempfile.TemporaryDirectory(prefix="paperbot-plots-") as folder:
            paths = deps.assistant.scholars.render_plots(result, Path(folder))  # type: ignore[arg-type]
            if paths:
                reply.upload(paths, comment="Publications per year and co-author network")
    except PaperbotError as exc:
        reply.note(f":warning: No pictures this time: {escape(exc.user_message)}")
    except Exception:
        reference = new_reference()
        log.exception("plot upload failed [ref %s]", reference)
        reply.note(f":warning: The pictures could not be attached (reference `{reference}`).")


def collaborators_work(
    deps: SlackDeps, topic: str, *, for_name: str | None = None, new_only: bool = False,
    limit: int = 10, asked_by: str | None = None,
) -> Work:
    """Ranked people for a topic, each with the papers that justify the ranking."""

    def work(reply: Reply) -> None:
        request = f"/paperbot collaborators {topic}" + (f" --for {for_name}" if for_name else "") + (" --new" if new_only else "")
        intro = [kit.asked_context(asked_by, request)] if asked_by else []
        unsaved = _Unsaved(reply)
        with unsaved.saving():
            reply.begin(intro)
        result = deps.assistant.scholars.collaborators(topic, for_name=for_name, new_only=new_only, limit=limit)
        cited = list(dict.fromkeys(paper.id for person in result.scholars for paper in person.papers))
        summary = "; ".join(person.name for person in result.scholars) or "nobody found"
        answer_id = unsaved.attempt(lambda: deps.store.save_answer(
            channel=reply.target.channel, thread_ts=reply.thread_ts, user=reply.target.user,
            team=reply.target.team, kind="collaborators", question=request, answer=summary, cited_ids=cited,
        ))
        footer = [kit.answer_actions(answer_id, has_citations=bool(cited), more_offset=None)] if answer_id else []
        with unsaved.saving():
            reply.finish([*intro, *kit.collaborators_blocks(result, for_name=result.for_person or for_name)],
                         fallback=f"People working on {topic}: {summary}", footer=footer)
        unsaved.report()

    return work
