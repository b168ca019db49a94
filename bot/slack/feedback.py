"""The buttons under an answer: thumbs up/down, "More papers" and "BibTeX".

Buttons carry only the stored answer's id (``payloads.AnswerRef``); the question, the answer
and the cited ids come from ``SlackStore``, so they work after a restart and cannot be forged
into arbitrary searches.
"""

from __future__ import annotations

from bot.slack import blocks as kit
from bot.slack.deps import SlackDeps
from bot.slack.jobs import Reply, Work
from bot.slack.store import StoredAnswer, Vote
from retrieval.errors import InputError

MORE_PAGE = 5

VOTE_THANKS = {
    "up": ":thumbsup: Thanks! Your vote is stored with this answer.",
    "down": ":thumbsdown: Thanks, noted. Your vote is stored with this answer and its sources so it can be improved.",
}


def stored_answer(deps: SlackDeps, answer_id: str) -> StoredAnswer:
    answer = deps.store.answer(answer_id)
    if answer is None:
        raise InputError("I no longer have that answer.", hint="Ask the question again.")
    return answer


def vote(deps: SlackDeps, answer_id: str, user: str, choice: Vote) -> str:
    """Store ``user``'s vote with the question, the answer and the cited ids; the thank-you text."""
    answer = stored_answer(deps, answer_id)
    changed = deps.store.record_vote(answer, user, choice)
    return VOTE_THANKS[choice] if changed else "You already voted that way on this answer."


def more_papers_work(deps: SlackDeps, answer: StoredAnswer, offset: int) -> Work:
    """The next page of records for the answer's question, without the ones already cited."""

    def work(reply: Reply) -> None:
        reply.begin()
        cited = set(answer.cited_ids)
        # ask for enough to fill a page past the cited records, wherever they rank
        wanted = MORE_PAGE + len(cited)
        result = deps.assistant.search(answer.question, k=wanted, offset=offset)
        fresh: list = []
        consumed = 0
        for citation in result.results:
            if len(fresh) == MORE_PAGE:
                break
            consumed += 1
            if citation.id not in cited:
                fresh.append(citation)
        skipped = consumed - len(fresh)
        page = result.model_copy(update={"results": fresh})
        footer = []
        if len(result.results) == wanted and len(fresh) == MORE_PAGE:
            footer.append(kit.more_papers_actions(answer.id, offset + consumed))
        reply.finish(kit.more_papers_blocks(page, skipped=skipped), footer=footer,
                     fallback=f"More papers for: {answer.question}")

    return work


def bibtex_work(deps: SlackDeps, answer: StoredAnswer) -> Work:
    """Upload the cited records as a .bib file in the answer's thread."""

    def work(reply: Reply) -> None:
        if not answer.cited_ids:
            raise InputError("That answer cites no papers, so there is no BibTeX to send.")
        papers = deps.assistant.records.papers(answer.cited_ids)
        if not papers:
            raise InputError("The cited papers are no longer in the index.", hint="Ask the question again.")
        text = deps.assistant.records.to_bibtex(papers)
        missing = len(answer.cited_ids) - len(papers)
        comment = f"BibTeX for the {len(papers)} cited record(s)"
        if missing:
            comment += f" ({missing} no longer indexed)"
        reply.upload(content=text, filename=f"paperbot-{answer.id}.bib", title="Cited records (BibTeX)", comment=comment)

    return work
