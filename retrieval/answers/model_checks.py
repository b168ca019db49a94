"""Two short model calls before an answer is written: the field's terms, then relevance.

With a chat model configured and each step enabled in the settings (both off by default:
with a 1.5B local model they cost more answers than they saved, docs/performance.md):

* ``field_query`` asks the model to rewrite the question into the field's terms ("teaching a
  robot by showing it" -> "imitation learning from demonstrations"); the records are then
  retrieved for the question and for that query together (``merge_hits``), and the answer is
  written for the original question. Researchers paraphrase; titles use the field's words.
* ``judge_relevance`` shows the model the retrieved records (title and the start of the
  abstract) and asks which are about the question, as PaperQA2 scores each piece of evidence
  before answering. Only the records it names are cited; "NONE" means an honest abstention.

Both are bounded: one line of reply (``MAX_REPLY_CHARS``), read as a stream and cut as soon as
the line is complete, within the given ``CallLimits`` (the answer's deadline). A reply that
cannot be read returns None; a model past its limits raises ``ModelTooSlow``, a failing one
one of ``retrieval.answers.llm.LLM_FAILURES``. The caller then decides without the model
(``retrieval.answers.evidence``), and says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prompts import load_prompt
from retrieval.answers.evidence import cut_at_word, neutralise, new_boundary
from retrieval.answers.model_calls import CallLimits, CallReport, stream_within
from retrieval.results import SearchHit

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

MAX_REPLY_CHARS = 200  # a line of record numbers or a query; more is not a reply to these prompts
MAX_QUERY_WORDS = 20
JUDGED_ABSTRACT_CHARS = 300  # the start of each abstract the model reads to judge relevance
_NUMBER = re.compile(r"\d+")
_NONE = re.compile(r"^\W*(none|no records?|no_answer|nothing)\b", re.IGNORECASE)
_LABEL = re.compile(r"^(?:search\s+)?(?:query|terms?|answer|relevant(?:\s+records)?)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class RelevanceJudgement:
    """The records the model named as relevant (1-based, in the order shown), or ``none``."""

    relevant: tuple[int, ...]
    none: bool = False


def _first_line(model: BaseChatModel, text: str, limits: CallLimits, report: CallReport | None) -> str:
    """The model's reply up to its first complete line (or ``MAX_REPLY_CHARS``), streamed.

    Raises ``ModelTooSlow`` when a limit passes before the line is complete (the stream is then
    closed, which ends the request); model failures pass through.
    """
    from langchain_core.messages import HumanMessage

    reply = ""
    stream = stream_within(lambda: model.stream([HumanMessage(content=text)]), limits, report=report)
    try:
        for chunk in stream:
            content = chunk.content if isinstance(chunk.content, str) else ""
            reply += content
            if "\n" in reply.strip() or len(reply) >= MAX_REPLY_CHARS:
                break
    finally:
        stream.close()
    return reply.strip().split("\n", 1)[0].strip()[:MAX_REPLY_CHARS]


def field_query(question: str, model: BaseChatModel, limits: CallLimits, *,
                report: CallReport | None = None) -> str | None:
    """The question in the field's terms, or None when the reply is not a usable query."""
    prompt = load_prompt("field_terms", required={"boundary", "question"})
    boundary = new_boundary()
    line = _first_line(model, prompt.format(boundary=boundary, question=neutralise(question, boundary)), limits,
                       report)
    if boundary in line:
        return None
    query = neutralise(_LABEL.sub("", line).strip().strip("\"'“”‘’`").strip(), boundary)
    words = query.split()
    if not words or len(words) > MAX_QUERY_WORDS or not re.search(r"[^\W\d_]", query) or _NONE.match(query):
        return None
    return query


def _record_block(n: int, hit: SearchHit, boundary: str) -> str:
    abstract = cut_at_word(neutralise(hit.paper.abstract, boundary), JUDGED_ABSTRACT_CHARS)
    return "\n".join([f"{boundary} RECORD [{n}]", f"title: {neutralise(hit.paper.title, boundary)}",
                      f"abstract: {abstract or '(no abstract)'}", f"{boundary} END RECORD [{n}]"])


def judge_relevance(question: str, hits: Sequence[SearchHit], model: BaseChatModel, limits: CallLimits, *,
                    report: CallReport | None = None) -> RelevanceJudgement | None:
    """Which of ``hits`` (numbered 1..n as given) the model judges to be about ``question``.

    None when the reply names no valid record and does not say NONE (unreadable).
    """
    prompt = load_prompt("judge_relevance", required={"boundary", "question", "records"})
    boundary = new_boundary()
    records = "\n\n".join(_record_block(n, hit, boundary) for n, hit in enumerate(hits, start=1))
    line = _first_line(model, prompt.format(boundary=boundary, question=neutralise(question, boundary),
                                            records=records), limits, report)
    if boundary in line:
        return None
    numbers = tuple(dict.fromkeys(int(n) for n in _NUMBER.findall(line) if 1 <= int(n) <= len(hits)))
    if numbers:
        return RelevanceJudgement(numbers)
    if _NONE.match(line):
        return RelevanceJudgement((), none=True)
    return None


def merge_hits(first: Sequence[SearchHit], second: Sequence[SearchHit], k: int) -> list[SearchHit]:
    """The records of two retrievals, each once with its better score, best first, at most ``k``."""
    best: dict[str, SearchHit] = {}
    for hit in [*first, *second]:
        known = best.get(hit.paper.id)
        if known is None or hit.score > known.score:
            best[hit.paper.id] = hit
    return sorted(best.values(), key=lambda hit: -hit.score)[:k]
