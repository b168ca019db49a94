"""Cited answers: retrieve -> relevant evidence -> (LLM chain | extractive) -> validated citations.

This is the topic answer of one question; which questions get one (listing, topic, mixed) is
decided by ``retrieval.answers.service``, which calls ``stream_answer`` with the question's text,
its retriever and an ``AnswerOptions`` (k, filters, thread history, ``EvidenceContext``).

Flow of ``stream_answer`` (``answer_question`` is the same, keeping only the result):

1. With ``options.history``, the question is rewritten into a standalone query
   (``retrieval.answers.condense``).
2. ``retriever(query, k, filters)`` runs once; ``evidence.assess`` keeps the hits that may serve
   as evidence (field-aware cut, relative to the best hit, query-concept coverage; the
   ``EvidenceContext`` carries the threshold in force, by default
   ``retrieval.answers.evidence.resolve_policy`` of the settings, and the index's term rarity).
   None left -> abstention ("No indexed paper addresses this."), without calling any model.
3. No chat model (``chat_model=None``, or ``FROM_SETTINGS`` with no LLM configured) -> the
   extractive answer (``retrieval.answers.extractive``), with ``NO_LLM_NOTICE``.
4. Otherwise the LCEL chain ``prompt | model`` streams plain text with inline ``[n]`` citations
   over delimited evidence blocks. The reply is untrusted (``retrieval.answers.model_output``): a
   ``TextDelta`` carries only text that passed validation (complete sentences with valid
   citations, no link, no prompt echo), so a live view never shows what the final answer would
   not. At the end ``validate_answer`` drops invalid citations, uncited claims, prompt leaks and
   claims whose citation points at another record than the one they name, renumbers, or
   abstains ("The indexed papers do not answer this."). ``Final.result.answer`` is the
   answer; consumers showing a live stream replace it with that.
5. The model failing after the SDK's retries (``LLM_FAILURES``) falls back to the extractive
   answer with an "LLM unreachable (...)" notice. A reply that came back but cannot be used
   falls back with "The model's reply was unusable (...)": no words (only "[1]" or a marker),
   a listing of the records, a stream cut before its end or at the token limit
   (``llm_max_tokens``), past ``llm_deadline`` seconds, past the character or sentence cap;
   or, once validated (``unusable_answer_reason``), an echo of the instructions, citations
   that point at the wrong records, claims none of which cites a record validly, or claims
   that share no word with the records they cite.

The system prompt is the same bytes for every question (the random boundary is announced in the
user turn), so a server can reuse its prompt cache between questions.

Plain text with inline ``[n]`` is used instead of structured output: it streams, and works on
any OpenAI-compatible server (llama.cpp, vLLM, Ollama) without json_schema support.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from prompts import Prompt, load_prompt
from retrieval.answers.attribution import EvidenceAttribution
from retrieval.answers.chat_model import FROM_SETTINGS, ChatModelChoice, resolve_chat_model
from retrieval.answers.citations import validate_answer
from retrieval.answers.condense import heuristic_query, standalone_question
from retrieval.answers.evidence import (
    EvidenceSet,
    Rarity,
    RelevancePolicy,
    assess,
    build_evidence,
    resolve_policy,
    strip_markup,
)
from retrieval.answers.extractive import NO_EVIDENCE_ANSWER, SentenceScorer, abstention, extractive_answer
from retrieval.answers.judgement import Verdict, why_not
from retrieval.answers.model_output import (
    ReplyRejected,
    ValidatedStream,
    bounded_pieces,
    clean_reply,
    unusable_answer_reason,
    unusable_reason,
)
from retrieval.config import Settings
from retrieval.errors import InputError
from retrieval.index.background import Background
from retrieval.results import (
    AnswerEvent,
    AnswerResult,
    Citation,
    Final,
    SearchFilters,
    SearchHit,
    TextDelta,
    ValidationReport,
)

if TYPE_CHECKING:  # the LLM stack (langchain, openai) is imported only when a model is configured
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import Runnable

NO_LLM_NOTICE = (
    "No LLM configured: extractive answer from the records "
    "(set OPENAI_API_KEY or OPENAI_BASE_URL for written answers)."
)

Retriever = Callable[[str, int, SearchFilters | None], list[SearchHit]]

LLM_ABSTAIN_ANSWER = "The indexed papers do not answer this."
MAX_QUESTION_CHARS = 2000
MAX_K = 50


def _system_prompt() -> Prompt:
    """The system prompt: the same bytes for every question (the per-question boundary is in
    the user turn), so a server can reuse its prompt cache."""
    return load_prompt("answer_system", required=set())


def _user_prompt() -> Prompt:
    return load_prompt("answer_user", required={"boundary", "question", "evidence"})


@lru_cache(maxsize=1)
def _answer_prompt() -> ChatPromptTemplate:
    from langchain_core.prompts import ChatPromptTemplate

    return ChatPromptTemplate.from_messages([("system", _system_prompt().text), ("human", _user_prompt().text)])


def build_answer_chain(model: BaseChatModel) -> Runnable[dict[str, str], BaseMessage]:
    """``{boundary, question, evidence}`` -> the model's reply, streamed as message chunks (their
    metadata says how the reply ended: ``finish_reason``)."""
    return _answer_prompt() | model


def chain_inputs(question: str, evidence: EvidenceSet) -> dict[str, str]:
    """The prompt variables for ``question`` over ``evidence`` (all untrusted text neutralised)."""
    return {
        "boundary": evidence.boundary,
        "question": evidence.wrap_question(question),
        "evidence": evidence.render(),
    }


def _checked_question(question: str, k: int) -> str:
    text = (question or "").strip()
    if not text:
        raise InputError("The question is empty.", hint='Ask something, e.g. "which papers propose X?".')
    if len(text) > MAX_QUESTION_CHARS:
        raise InputError(
            f"The question is {len(text)} characters long; the limit is {MAX_QUESTION_CHARS}.",
            hint="Shorten it to the topic you want papers about.",
        )
    if not 1 <= k <= MAX_K:
        raise InputError(f"k must be between 1 and {MAX_K} (got {k}).", hint="Pass a smaller number of results.")
    return text


def _fallback(question: str, relevant: Sequence[SearchHit], reason: str) -> AnswerResult:
    """The extractive answer when the model could not be reached."""
    return extractive_answer(question, relevant, notice=f"LLM unreachable ({reason}): extractive answer instead.")


def _unusable(question: str, relevant: Sequence[SearchHit], reason: str) -> AnswerResult:
    """The extractive answer when the model answered, but with nothing that can be shown."""
    return extractive_answer(question, relevant,
                             notice=f"The model's reply was unusable ({reason}): extractive answer instead.")


def _llm_result(question: str, report: ValidationReport, evidence: EvidenceSet) -> AnswerResult:
    if report.abstained:
        return abstention(question, "llm", answer=LLM_ABSTAIN_ANSWER)
    citations = []
    for new, old in enumerate(report.order, start=1):
        hit = evidence.hit(old)
        citations.append(Citation.from_paper(new, hit.paper, hit.score))
    text = strip_markup(report.text, evidence.boundary)
    return AnswerResult(question=question, answer=text, mode="llm", abstained=False, citations=citations)


def _with_why(result: AnswerResult, verdict: Verdict | None) -> AnswerResult:
    """An abstention's notice says what the index lacks and what it holds instead (``why_not``)."""
    if not result.abstained or verdict is None or verdict.answer:
        return result
    notice = " ".join(part for part in (why_not(verdict), result.notice) if part)
    return result.model_copy(update={"notice": notice})


@dataclass(frozen=True)
class EvidenceContext:
    """What decides which hits may serve as evidence besides the query and the hits themselves:
    the relevance policy in force, the index's term rarity (None: too small an index for word
    frequencies to tell, ``evidence.RARITY_MIN_RECORDS``) and the index's background figures
    (``retrieval.index.background``; None: the typical ones). Built per question by the
    answering service."""

    policy: RelevancePolicy = field(default_factory=RelevancePolicy)
    rarity: Rarity | None = None
    background: Background | None = None


@dataclass(frozen=True)
class AnswerOptions:
    """How one question is answered, besides its text, retriever, settings and model.

    ``k`` hits are retrieved with ``filters``; ``history`` (the thread's earlier (question,
    answer) pairs) turns a follow-up into a standalone query; ``evidence`` defaults to the
    policy the settings give (``resolve_policy``) without rarity; ``scorer`` picks key sentences
    in extractive answers.
    """

    k: int = 8
    filters: SearchFilters | None = None
    history: Sequence[tuple[str, str]] = ()
    evidence: EvidenceContext | None = None
    scorer: SentenceScorer | None = None


def stream_answer(
    question: str,
    *,
    retriever: Retriever,
    settings: Settings,
    chat_model: ChatModelChoice = FROM_SETTINGS,
    options: AnswerOptions = AnswerOptions(),
) -> Iterator[AnswerEvent]:
    """Yield ``TextDelta``s while a model writes, then exactly one ``Final`` (see module doc).

    ``chat_model``: a model, None for extractive answers, or ``FROM_SETTINGS``
    (``retrieval.answers.chat_model``). Raises ``InputError`` for an empty or overlong question
    or a ``k`` out of range, before iteration; retriever errors (``IndexUnavailableError``)
    pass through.
    """
    question = _checked_question(question, options.k)  # eager: bad input raises before iteration
    model = resolve_chat_model(chat_model, settings)
    evidence = options.evidence if options.evidence is not None else EvidenceContext(resolve_policy(settings))
    return _events(question, retriever, settings, model, options, evidence)


def _events(
    question: str,
    retriever: Retriever,
    settings: Settings,
    model: BaseChatModel | None,
    options: AnswerOptions,
    evidence_context: EvidenceContext,
) -> Iterator[AnswerEvent]:
    llm_failures: tuple[type[Exception], ...] = ()  # without a model, no model call can fail
    if model is not None:  # the LLM stack is imported only when there is a model
        from retrieval.answers.llm import LLM_FAILURES, describe_failure, model_attempts

        llm_failures = LLM_FAILURES
    failure: Exception | None = None
    try:
        query = standalone_question(question, options.history, model)
    except llm_failures as exc:
        failure, query = exc, heuristic_query(question, options.history)
    hits = retriever(query, options.k, options.filters)
    # the evidence policy (retrieval.answers.evidence.assess): its one call on the ask path
    assessment = assess(query, hits, evidence_context.policy, evidence_context.rarity, evidence_context.background)
    relevant = assessment.kept

    if model is None:
        answer = extractive_answer(question, relevant, notice=NO_LLM_NOTICE, scorer=options.scorer)
        yield Final(_with_why(answer, assessment.verdict), query=query)
        return
    attempts = model_attempts(model, settings)
    if failure is not None:
        yield Final(_fallback(question, relevant, describe_failure(failure, attempts)), query=query)
        return
    if not relevant:
        yield Final(_with_why(abstention(question, "llm", answer=NO_EVIDENCE_ANSWER), assessment.verdict), query=query)
        return

    evidence = build_evidence(relevant)
    protected = [_system_prompt().format(), _user_prompt().text]
    attribution = EvidenceAttribution.from_papers([hit.paper for hit in evidence.hits])
    live = ValidatedStream(len(evidence), boundary=evidence.boundary, protected=protected, attribution=attribution)
    try:
        for piece in bounded_pieces(build_answer_chain(model).stream(chain_inputs(query, evidence)), settings):
            if shown := live.feed(piece):
                yield TextDelta(shown)  # only text that passed validation: never a [99] or the prompt
    except llm_failures as exc:
        yield Final(_fallback(question, relevant, describe_failure(exc, attempts)), query=query)
        return
    except ReplyRejected as rejected:
        yield Final(_unusable(question, relevant, rejected.reason), query=query)
        return
    raw = clean_reply(live.raw, evidence.boundary)
    titles = [evidence.hit(n).paper.title for n in range(1, len(evidence) + 1)]
    if (reason := unusable_reason(raw, titles)) is not None:
        yield Final(_unusable(question, relevant, reason), query=query)
        return
    report = validate_answer(raw, len(evidence), forbidden=[evidence.boundary], protected=protected,
                             attribution=attribution)
    if (reason := unusable_answer_reason(report, attribution)) is not None:
        yield Final(_unusable(question, relevant, reason), report=report, query=query)
        return
    yield Final(_llm_result(question, report, evidence), report=report, query=query)


def answer_question(
    question: str,
    *,
    retriever: Retriever,
    settings: Settings,
    chat_model: ChatModelChoice = FROM_SETTINGS,
    options: AnswerOptions = AnswerOptions(),
) -> AnswerResult:
    """The validated cited answer to ``question`` (``stream_answer`` without the deltas)."""
    for event in stream_answer(question, retriever=retriever, settings=settings, chat_model=chat_model,
                               options=options):
        if isinstance(event, Final):
            return event.result
    raise AssertionError("stream_answer ended without a Final event")  # pragma: no cover
