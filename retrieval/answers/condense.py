"""Follow-up questions in a thread become standalone search queries before retrieval.

With a chat model, the ``condense_question`` prompt rewrites the follow-up using the last few
turns (history and question are untrusted and wrapped like evidence). An unusable rewrite
(empty, several lines of prose, the boundary, an answer instead of a query) falls back to the
heuristic; a *failing* model raises one of ``retrieval.answers.llm.LLM_FAILURES``, and one past its time
limits a ``retrieval.answers.model_calls.ModelTooSlow``, so the caller can skip the model for the answer
too instead of waiting twice.

Without a model, ``heuristic_query`` applies one rule: a question that looks like a follow-up
(it has at most ``SHORT_FOLLOWUP_TERMS`` content words, or it uses a referring word such as
"it", "they", "those", "this", "more", "other") gets the content words of the previous
question that it does not already contain appended, in their original order, at most
``MAX_CARRIED_WORDS`` of them. "What about since 2022?" after "Which papers propose graph
neural networks for molecules?" becomes "What about since 2022? graph neural networks molecules".
Anything else is taken as a new topic and searched as asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from prompts import load_prompt
from retrieval.answers.citations import NO_ANSWER_SENTINEL
from retrieval.answers.evidence import neutralise, new_boundary
from retrieval.answers.model_calls import CallLimits, CallReport, invoke_within
from retrieval.text import content_words

if TYPE_CHECKING:  # langchain-core is imported only when a model is configured
    from langchain_core.language_models import BaseChatModel

MAX_HISTORY_TURNS = 3
MAX_TURN_CHARS = 600
MAX_QUERY_CHARS = 400
SHORT_FOLLOWUP_TERMS = 3
MAX_CARRIED_WORDS = 8

_REFERRING = frozenset(
    ["it", "its", "they", "them", "their", "theirs", "this", "that", "these", "those", "he", "she", "his", "her", "him", "same", "such", "former", "latter", "above", "ones", "else", "other", "others", "more", "another", "further"]
)
_WORD = re.compile(r"[A-Za-z']+")
_LABEL = re.compile(r"^(?:standalone\s+)?(?:query|question|search)\s*:\s*", re.IGNORECASE)
_CITATION = re.compile(r"\[\d+(?:\s*[,;-]\s*\d+)*\]")


def looks_like_followup(question: str) -> bool:
    """True for short or referring questions (see the module docstring)."""
    words = {w.lower() for w in _WORD.findall(question)}
    return len(content_words(question)) <= SHORT_FOLLOWUP_TERMS or bool(words & _REFERRING)


def heuristic_query(question: str, history: Sequence[tuple[str, str]]) -> str:
    """The no-LLM rewrite: carry the previous question's content words into a follow-up."""
    if not history or not looks_like_followup(question):
        return question
    present = set(content_words(question))
    carried: list[str] = []
    for word in content_words(history[-1][0]):
        if word not in present and word not in carried:
            carried.append(word)
    if not carried:
        return question
    return f"{question.strip()} {' '.join(carried[:MAX_CARRIED_WORDS])}"


def _history_text(history: Sequence[tuple[str, str]], boundary: str) -> str:
    lines: list[str] = []
    for asked, answered in history[-MAX_HISTORY_TURNS:]:
        answer = neutralise(_CITATION.sub("", answered), boundary)
        if len(answer) > MAX_TURN_CHARS:
            answer = answer[:MAX_TURN_CHARS].rsplit(" ", 1)[0] + " …"
        lines.append(f"User: {neutralise(asked, boundary)}")
        lines.append(f"Assistant: {answer}")
    return "\n".join(lines)


def _usable_rewrite(raw: str, boundary: str) -> str | None:
    lines = [line.strip() for line in raw.strip().splitlines() if line.strip()]
    if not lines or len(lines) > 2 or boundary in raw or NO_ANSWER_SENTINEL in raw:
        return None
    text = _LABEL.sub("", lines[0]).strip().strip("\"'“”‘’`").strip()
    text = neutralise(text, boundary)
    if not re.search(r"[^\W\d_]", text) or len(text) > MAX_QUERY_CHARS:
        return None
    return text


def condense_question(question: str, history: Sequence[tuple[str, str]], model: BaseChatModel,
                      limits: CallLimits, *, report: CallReport | None = None) -> str:
    """Ask the model for a standalone query, within ``limits``; heuristic when its reply is unusable.

    Raises one of ``retrieval.answers.llm.LLM_FAILURES`` when the model call itself fails, and
    ``ModelTooSlow`` past the limits.
    """
    from langchain_core.messages import HumanMessage

    prompt = load_prompt("condense_question", required={"boundary", "history", "question"})
    boundary = new_boundary()
    text = prompt.format(
        boundary=boundary,
        history=_history_text(history, boundary),
        question=neutralise(question, boundary),
    )
    reply = invoke_within(model, [HumanMessage(content=text)], limits, report=report)
    return _usable_rewrite(reply.text, boundary) or heuristic_query(question, history)


def standalone_question(
    question: str, history: Sequence[tuple[str, str]], model: BaseChatModel | None, limits: CallLimits,
    *, report: CallReport | None = None,
) -> str:
    """The query to retrieve with: the question itself, or its rewrite given ``history`` (by the
    model within ``limits`` when there is one)."""
    if not history:
        return question
    if model is None:
        return heuristic_query(question, history)
    return condense_question(question, history, model, limits, report=report)
