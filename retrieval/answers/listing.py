"""Listing answers: every record matching the question's filters, newest first, each cited.

For "what did Zhao Zhang publish since 2025?" the filtered set *is* the answer, so nothing is
ranked and no model is needed (a listing stays extractive with an LLM configured)::

    9 papers by Zhao Zhang since 2025, newest first:
    - Scalable checkpointing for exascale (SC, 2026): We present ... [1]
    - Elastic training on HPC (2025) [2]
    ...
    - and 4 more (paperbot search "papers by Zhao Zhang since 2025" --k 29)

Each item is one line: the title, venue and year, and the abstract's first sentence when there
is one. Record text is untrusted and passes through ``neutralise`` (via ``extractive``).
"""

from __future__ import annotations

from collections.abc import Sequence

from retrieval.answers.citations import split_sentences
from retrieval.answers.evidence import looks_like_instruction, neutralise
from retrieval.answers.extractive import item_label, trim_sentence
from retrieval.records.paper import Paper
from retrieval.results import AnswerResult, Citation, SearchFilters

MAX_LISTED = 100  # a listing is complete up to here (Slack paginates); longer ones say how to page on
LISTING_SCORE = 1.0  # a listed record matches the filters exactly; there is no similarity to report
LISTING_NOTICE = "Listing of the indexed records matching the filters: no model is needed, so it is extractive."
NO_TOPIC_NOTICE = ("No indexed record addresses the topic specifically; "
                   "listing every record that matches the filters instead.")


def first_sentence(paper: Paper) -> str | None:
    """The abstract's first usable sentence, trimmed; None for a title-only record."""
    for sentence in split_sentences(neutralise(paper.abstract)):
        if any(ch.isalnum() for ch in sentence) and not looks_like_instruction(sentence):
            return trim_sentence(sentence) or None
    return None


def _more_line(question: str, total: int, shown: int) -> str:
    quoted = question.replace('"', "'")
    command = f'paperbot search "{quoted}" --k {min(total, 100)}'
    return f"- and {total - shown} more ({command})"


def listing_answer(
    question: str,
    papers: Sequence[Paper],
    filters: SearchFilters,
    *,
    cap: int = MAX_LISTED,
    notice: str | None = LISTING_NOTICE,
) -> AnswerResult:
    """List ``papers`` (already filtered and newest first) as a cited answer; [] is an abstention.

    The caller explains an empty set (``PaperIndex.explain_empty``).
    """
    if not papers:
        return AnswerResult(question=question, answer="No indexed paper matches these filters.",
                            mode="extractive", abstained=True, citations=[], notice=notice)
    shown = list(papers[:cap])
    noun = "paper" if len(papers) == 1 else "papers"
    described = filters.wording()
    order = ", newest first" if len(papers) > 1 else ""
    lines = [f"{len(papers)} {noun} {described}{order}:".replace("  ", " ")]
    citations: list[Citation] = []
    for n, paper in enumerate(shown, start=1):
        sentence = first_sentence(paper)
        label = item_label(paper, with_venue=True)
        lines.append(f"- {label}: {sentence} [{n}]" if sentence else f"- {label} [{n}]")
        citations.append(Citation.from_paper(n, paper, LISTING_SCORE))
    if len(papers) > len(shown):
        lines.append(_more_line(question, len(papers), len(shown)))
    return AnswerResult(question=question, answer="\n".join(lines), mode="extractive", abstained=False,
                        citations=citations, notice=notice)
