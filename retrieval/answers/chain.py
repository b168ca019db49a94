"""Cited answers: retrieve -> relevant evidence -> (LLM chain | extractive) -> validated citations.

This is the topic answer of one question; which questions get one (listing, topic, mixed) is
decided by ``retrieval.answers.service``, which calls ``stream_answer`` with the question's text,
its retriever and an ``AnswerOptions`` (k, filters, thread history, ``EvidenceContext``).

Flow of ``stream_answer`` (``answer_question`` is the same, keeping only the result):

1. With ``options.history``, the question is rewritten into a standalone query
   (``retrieval.answers.condense``).
2. ``retriever(query, k, filters)`` runs; with a model, ``model_checks.field_query`` rewrites
   the question into the field's terms and the records retrieved for that query join
   (``settings.llm_field_terms``). ``evidence.assess`` then keeps the hits that may serve as
   evidence: the evidence judgement by meaning (``retrieval.answers.judgement``) over the
   ``EvidenceContext`` (the policy in force, the index's term rarity and background), or a
   threshold the caller set. With a model, ``model_checks.judge_relevance`` then says which
   records are about the question (``settings.llm_judge_relevance``): only those are cited; its
   "NONE" empties the evidence unless the judgement found it strong (``STRONG_EVIDENCE``); an
   unreadable, late or failing check leaves the judgement's evidence. A question the judgement
   finds clearly off the index (``MODEL_CHECK_FLOOR``) gets no check. Every model call of the
   answer (the follow-up rewrite, both checks, the answer and every retry of each) shares one
   deadline, ``settings.llm_deadline`` seconds from the start of the answer, and each is held to
   the first-token and stall limits (``retrieval.answers.model_calls``); the checks add their
   notes to the notice.
   No evidence -> abstention ("No indexed paper addresses this.") whose notice says why
   (``judgement.why_not``), without the answer call.
3. No chat model (``chat_model=None``, or ``FROM_SETTINGS`` with no LLM configured) -> the
   extractive answer (``retrieval.answers.extractive``), with ``NO_LLM_NOTICE``.
4. Otherwise one ``Progress`` says the model is reading the records (``reading_status``: a
   small local model may need tens of seconds before its first word), then the LCEL chain
   ``prompt | model`` streams plain text with inline ``[n]`` citations
   over delimited evidence blocks, fitted to ``settings.llm_prompt_budget`` tokens
   (``retrieval.answers.prompt_budget``: abstracts trimmed to the sentences that match the
   question, then records that add nothing left out; the extractive fallback keeps them all). The reply is untrusted (``retrieval.answers.model_output``): a
   ``TextDelta`` carries only text that passed validation (complete sentences with valid
   citations, no link, no prompt echo), so a live view never shows what the final answer would
   not. At the end ``validate_answer`` drops invalid citations, uncited claims, prompt leaks and
   claims whose citation points at another record than the one they name, renumbers, or
   abstains ("The indexed papers do not answer this."). ``Final.result.answer`` is the
   answer; consumers showing a live stream replace it with that. The model's refusal
   (``NO_ANSWER``, "I cannot answer...") is one signal, not the verdict: the evidence passed
   the judgement, so the answer is then the extractive one, with ``MODEL_FOUND_NO_ANSWER`` (small
   local models refuse readily, issue #29); a mixed question thus keeps its topic answer.
5. The model failing after its retries (``LLM_FAILURES``) falls back to the extractive
   answer with an "LLM unreachable (...)" notice; a model past a time limit
   (``model_calls.ModelTooSlow``) with "The model was too slow (...)", which says what happened
   and which setting to change ("it did not start answering within 60 s for a prompt of ~2,900
   tokens; raise PAPERBOT_LLM_TIMEOUT or lower PAPERBOT_LLM_PROMPT_BUDGET"). A reply that came back but
   cannot be used falls back with "The model's reply was unusable (...)": no words (only "[1]"
   or a marker), a listing of the records, a stream cut before its end or at the token limit
   (``llm_max_tokens``), past the character or sentence cap;
   or, once validated (``unusable_answer_reason``), an echo of the instructions, citations
   that point at the wrong records, claims none of which cites a record validly, or claims
   that share no word with the records they cite.

The system prompt is the same bytes for every question (the random boundary is announced in the
user turn), so a server can reuse its prompt cache between questions.

Plain text with inline ``[n]`` is used instead of structured output: it streams, and works on
any OpenAI-compatible server (llama.cpp, vLLM, Ollama) without json_schema support.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from prompts import Prompt, load_prompt
from retrieval.answers.attribution import EvidenceAttribution
from retrieval.answers.chat_model import FROM_SETTINGS, ChatModelChoice, resolve_chat_model
from retrieval.answers.citations import validate_answer
from retrieval.answers.condense import heuristic_query, standalone_question
from retrieval.answers.evidence import (
    Assessment,
    EvidenceSet,
    Rarity,
    RelevancePolicy,
    assess,
    build_evidence,
    resolve_policy,
    strip_markup,
    unique_hits,
)
from retrieval.answers.extractive import NO_EVIDENCE_ANSWER, SentenceScorer, abstention, extractive_answer
from retrieval.answers.judgement import Verdict, matched_by_meaning, why_not
from retrieval.answers.model_calls import CallLimits, CallReport, ModelTooSlow, stream_within
from retrieval.answers.model_checks import field_query, judge_relevance, merge_hits
from retrieval.answers.model_output import (
    ReplyRejected,
    ValidatedStream,
    bounded_pieces,
    clean_reply,
    unusable_answer_reason,
    unusable_reason,
)
from retrieval.answers.prompt_budget import FittedEvidence, fit_evidence
from retrieval.answers.prompt_tokens import TokenCounter, token_counter
from retrieval.config import Settings
from retrieval.errors import InputError
from retrieval.index.background import Background
from retrieval.results import (
    AnswerEvent,
    AnswerResult,
    Citation,
    Final,
    Progress,
    SearchFilters,
    SearchHit,
    TextDelta,
    ValidationReport,
)
from retrieval.text import fold

if TYPE_CHECKING:  # the LLM stack (langchain, openai) is imported only when a model is configured
    from langchain_core.language_models import BaseChatModel
    from langchain_core.prompt_values import PromptValue
    from langchain_core.prompts import ChatPromptTemplate

NO_LLM_NOTICE = (
    "No LLM configured: extractive answer from the records "
    "(set OPENAI_API_KEY or OPENAI_BASE_URL for written answers)."
)

Retriever = Callable[[str, int, SearchFilters | None], list[SearchHit]]

LLM_ABSTAIN_ANSWER = "The indexed papers do not answer this."
MODEL_FOUND_NO_ANSWER = "The model found no answer in these records; showing the records' own sentences."
MAX_QUESTION_CHARS = 2000
# The evidence judgement's probability above which one "NONE" from the model does not empty the
# evidence (issue #29: a model's refusal is one signal, not the verdict). On the tuning halves a
# NONE may then veto 7 % of near misses and 37 % of paraphrases whose gold was retrieved: small
# local models say NONE readily, so the veto is kept to the judgement's less certain answers.
STRONG_EVIDENCE = 0.75
# Under this probability of the judgement (or with a best cosine under the index's background
# median) the model's checks are not asked for, so the model cannot bring in records for a
# question the judgement finds far off. On the tuning halves: 31 % of near misses and most
# off-topic questions are spared a model call, 18 % of the paraphrases whose gold record was
# retrieved lose the model's rescue (docs/evidence.md, "With a model").
MODEL_CHECK_FLOOR = 0.1
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


def answer_prompt(inputs: dict[str, str]) -> PromptValue:
    """The answer prompt over ``{boundary, question, evidence}``, formatted before the model is
    called: the call (``model.stream``, whose chunks' metadata says how the reply ended:
    ``finish_reason``) then raises only the model's own failures."""
    return _answer_prompt().invoke(inputs)


def fitted_evidence(question: str, relevant: Sequence[SearchHit], settings: Settings,
                    counter: TokenCounter | None = None) -> FittedEvidence:
    """The evidence records of the answer prompt for ``question``, fitted to
    ``settings.llm_prompt_budget`` tokens (``retrieval.answers.prompt_budget``; the focus of
    every record is the question), counted by ``counter`` (default: ``token_counter``)."""
    evidence = build_evidence(relevant)
    fixed = _system_prompt().format() + _user_prompt().format(
        boundary=evidence.boundary, question=evidence.wrap_question(question), evidence="")
    return fit_evidence(evidence, [question] * len(evidence), fixed=fixed, budget=settings.llm_prompt_budget,
                        counter=counter or token_counter(settings))


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


def _too_slow(question: str, relevant: Sequence[SearchHit], reason: str) -> AnswerResult:
    """The extractive answer when the model did not answer within its time limits."""
    return extractive_answer(question, relevant, notice=f"The model was too slow ({reason}): extractive answer instead.")


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
    """The judgement's reason in the notice: for an abstention what the index lacks and what it
    holds instead (``why_not``); for an answer matched by meaning alone, that the cited records
    use none of the question's words (``matched_by_meaning``)."""
    if verdict is None:
        return result
    if result.abstained and not verdict.answer:
        reason: str | None = why_not(verdict)
    elif not result.abstained and verdict.answer:
        reason = matched_by_meaning(verdict)
    else:
        return result
    return result.with_notice(reason, result.notice)


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
    """Yield one ``Progress`` and ``TextDelta``s while a model writes, then exactly one ``Final``
    (see module doc).

    ``chat_model``: a model, None for extractive answers, or ``FROM_SETTINGS``
    (``retrieval.answers.chat_model``). Raises ``InputError`` for an empty or overlong question
    or a ``k`` out of range, before iteration; retriever errors (``IndexUnavailableError``)
    pass through.
    """
    question = _checked_question(question, options.k)  # eager: bad input raises before iteration
    model = resolve_chat_model(chat_model, settings)
    evidence = options.evidence if options.evidence is not None else EvidenceContext(resolve_policy(settings))
    return _events(question, retriever, settings, model, options, evidence)


@dataclass
class EvidenceChoice:
    """What an answer will rest on, before anything is written.

    ``query``: the text retrieved for (the question, or its standalone rewrite in a thread);
    ``hits``: the records judged (with the field-terms query's merged in); ``relevant``: the
    evidence records; ``assessment``: the judgement's view of the hits;
    ``notes``: what the model checks said or why they were skipped; ``failure``: a model call
    that failed or was too slow (the answer is then extractive at once) after
    ``failure_attempts`` requests; ``deadline``: the ``time.monotonic()`` instant by which the
    whole answer must be done.
    """

    query: str
    hits: list[SearchHit]
    relevant: list[SearchHit]
    assessment: Assessment
    notes: list[str]
    failure: Exception | None
    deadline: float
    failure_attempts: int = 1


def choose_evidence(question: str, retriever: Retriever, settings: Settings, model: BaseChatModel | None,
                    options: AnswerOptions, context: EvidenceContext) -> EvidenceChoice:
    """Steps 1-2 of the module docstring: retrieve, judge, and (with a model) check.

    Model failures are caught (``EvidenceChoice.failure``); retriever errors pass through.
    """
    llm_failures: tuple[type[Exception], ...] = ()  # without a model, no model call can fail
    if model is not None:  # the LLM stack is imported only when there is a model
        from retrieval.answers.llm import LLM_FAILURES

        llm_failures = (*LLM_FAILURES, ModelTooSlow)
    deadline = time.monotonic() + settings.llm_deadline  # every model call of this answer shares it
    failure: Exception | None = None
    call = CallReport()  # of the model call that failed, if one does
    try:
        query = standalone_question(question, options.history, model, CallLimits.from_settings(settings, deadline),
                                    report=call)
    except llm_failures as exc:
        failure, query = exc, heuristic_query(question, options.history)
    hits = retriever(query, options.k, options.filters)
    notes: list[str] = []
    # the evidence policy (retrieval.answers.evidence.assess), again only over records the
    # field-terms query brought in
    assessment = assess(query, hits, context.policy, context.rarity, context.background)
    checking = model is not None and failure is None and _worth_checking(assessment.verdict)
    if checking and model is not None and settings.llm_field_terms:
        try:
            call = CallReport()
            merged = _with_field_terms(query, hits, retriever, options, model, _check_limits(deadline, settings),
                                       notes, call)
        except llm_failures as exc:
            failure = exc  # the answer call would fail the same way: extractive at once
        else:
            if merged is not hits:
                hits = merged
                assessment = assess(query, hits, context.policy, context.rarity, context.background)
    relevant = assessment.kept
    if checking and model is not None and failure is None and settings.llm_judge_relevance and hits:
        try:
            call = CallReport()
            relevant = _model_judged(query, hits, assessment, model, _check_limits(deadline, settings), notes, call)
        except llm_failures as exc:
            failure = exc
    return EvidenceChoice(query, hits, relevant, assessment, notes, failure, deadline, max(1, call.attempts))


def _events(
    question: str,
    retriever: Retriever,
    settings: Settings,
    model: BaseChatModel | None,
    options: AnswerOptions,
    evidence_context: EvidenceContext,
) -> Iterator[AnswerEvent]:
    chosen = choose_evidence(question, retriever, settings, model, options, evidence_context)
    if model is None:
        answer = extractive_answer(question, chosen.relevant, notice=NO_LLM_NOTICE, scorer=options.scorer)
        yield Final(_with_why(answer, chosen.assessment.verdict), query=chosen.query)
        return
    for event in _written(question, chosen, settings, model):
        yield _noted(event, chosen.notes)


def _worth_checking(verdict: Verdict | None) -> bool:
    """False when the question is clearly off the index: the judgement's probability is under
    ``MODEL_CHECK_FLOOR``, or the best record resembles it less than the index's records resemble
    unrelated questions (the background median). No model call is spent on "the best sourdough
    recipe" over a computer-science index; the judgement alone decides such a question."""
    if verdict is None or verdict.signals is None:
        return True
    return verdict.probability >= MODEL_CHECK_FLOOR and verdict.signals.lift >= 0


def _check_limits(deadline: float, settings: Settings) -> CallLimits:
    """The limits of a model check before the answer: the settings' first-token and stall
    limits, within the answer's deadline."""
    return CallLimits.from_settings(settings, deadline)


def _noted(event: AnswerEvent, notes: Sequence[str]) -> AnswerEvent:
    """``event``, a ``Final`` with the model steps' notes added to its notice."""
    if not notes or not isinstance(event, Final):
        return event
    return replace(event, result=event.result.with_notice(*notes, event.result.notice))


def _with_field_terms(query: str, hits: list[SearchHit], retriever: Retriever, options: AnswerOptions,
                      model: BaseChatModel, limits: CallLimits, notes: list[str],
                      report: CallReport) -> list[SearchHit]:
    """``hits`` merged with the records retrieved for the question in the field's terms
    (``model_checks.field_query``); the same hits when the model gives no usable query in time."""
    try:
        rewritten = field_query(query, model, limits, report=report)
    except ModelTooSlow as slow:
        notes.append(f"The model's field terms were skipped ({slow.reason}).")
        return hits
    if rewritten is None or fold(rewritten) == fold(query):
        return hits
    notes.append(f'Also searched for "{rewritten}" (the question in the field\'s terms).')
    return merge_hits(hits, retriever(rewritten, options.k, options.filters), options.k)


def _model_judged(query: str, hits: list[SearchHit], assessment: Assessment, model: BaseChatModel,
                  limits: CallLimits, notes: list[str], report: CallReport) -> list[SearchHit]:
    """The evidence after the model's relevance check (``model_checks.judge_relevance``).

    The records it names, in retriever order (only among the kept ones when no judgement was
    made: a threshold set by the user, a lexical-only retriever); none when it says NONE, unless
    the evidence judgement found the kept records a strong match (``STRONG_EVIDENCE``): one
    refusal is a signal, not the verdict. An unreadable or late reply leaves the judgement's
    evidence.
    """
    candidates = unique_hits(hits)
    try:
        judged = judge_relevance(query, candidates, model, limits, report=report)
    except ModelTooSlow as slow:
        notes.append(f"The model's relevance check was skipped ({slow.reason}); the evidence judgement decided.")
        return assessment.kept
    if judged is None:
        notes.append("The model's relevance check was unreadable; the evidence judgement decided.")
        return assessment.kept
    if judged.relevant:
        named = [candidates[n - 1] for n in sorted(judged.relevant)]
        if assessment.verdict is None:  # a set threshold or a lexical-only retriever: the model only narrows
            kept = {hit.paper.id for hit in assessment.kept}
            return [hit for hit in named if hit.paper.id in kept]
        return named
    verdict = assessment.verdict
    if assessment.kept and verdict is not None and verdict.probability >= STRONG_EVIDENCE:
        notes.append("The model judged none of these records relevant; the evidence judgement found them "
                     "a strong match, so they are kept.")
        return assessment.kept
    closest = "; ".join(f"'{hit.paper.title}'" for hit in candidates[:2])
    notes.append(f"The model judged none of the closest records relevant: {closest}.")
    return []


def reading_status(records: int) -> str:
    """The ``Progress`` text while the model reads ``records`` records before it writes."""
    return (f"Found {records} matching {'record' if records == 1 else 'records'}; the language model is reading "
            f"{'it' if records == 1 else 'them'} and will write a cited answer…")


def _written(question: str, chosen: EvidenceChoice, settings: Settings, model: BaseChatModel) -> Iterator[AnswerEvent]:
    """The model writes the answer over the chosen evidence (module docstring, steps 4-5)."""
    from retrieval.answers.llm import LLM_FAILURES, describe_failure

    query, relevant, deadline = chosen.query, chosen.relevant, chosen.deadline
    if isinstance(chosen.failure, ModelTooSlow):
        yield Final(_too_slow(question, relevant, chosen.failure.reason), query=query)
        return
    if chosen.failure is not None:
        yield Final(_fallback(question, relevant, describe_failure(chosen.failure, chosen.failure_attempts)), query=query)
        return
    if not relevant:
        yield Final(_with_why(abstention(question, "llm", answer=NO_EVIDENCE_ANSWER), chosen.assessment.verdict),
                    query=query)
        return

    fitted = fitted_evidence(query, relevant, settings)
    evidence = fitted.evidence
    protected = [_system_prompt().format(), _user_prompt().text]
    attribution = EvidenceAttribution.from_papers([hit.paper for hit in evidence.hits])
    live = ValidatedStream(len(evidence), boundary=evidence.boundary, protected=protected, attribution=attribution)
    limits = CallLimits.from_settings(settings, deadline, prompt_tokens=fitted.tokens)
    call = CallReport()
    yield Progress(reading_status(len(evidence)))
    prompt = answer_prompt(chain_inputs(query, evidence))
    chunks = stream_within(lambda: model.stream(prompt), limits, report=call)
    try:
        for piece in bounded_pieces(chunks, settings):
            if shown := live.feed(piece):
                yield TextDelta(shown)  # only text that passed validation: never a [99] or the prompt
    except LLM_FAILURES as exc:
        yield Final(_fallback(question, relevant, describe_failure(exc, call.attempts)), query=query)
        return
    except ModelTooSlow as slow:
        yield Final(_too_slow(question, relevant, slow.reason), query=query)
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
    if report.abstained and report.reason == "refusal":  # one signal against evidence that passed the judgement
        yield Final(extractive_answer(question, relevant, notice=MODEL_FOUND_NO_ANSWER), report=report, query=query)
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
